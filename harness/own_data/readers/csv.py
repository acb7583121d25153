"""CSV and TSV files (``.csv``, ``.tsv``, compressed or not), read by pyarrow's streaming CSV reader on one thread,
so that its rows are numbered as the file's lines: the dialect sniffed from the data's first file
(``harness.own_data.csv_dialect``), the types inferred from the first block, a row whose fields do not match the
header named by its line (it ends the read), a value its column's type cannot take named by its line
(``WrongValue``: the dataset may widen the column and read again). An empty field is a null, no other text is
(placeholders such as ``-`` or ``NA``: ``harness.own_data.placeholders``); a header that repeats a name is read
under the names made unique (``harness.own_data.read_names``), given with the types."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from harness.own_data import csv_dialect
from harness.own_data.names import positional_name
from harness.own_data.readers import text
from harness.own_data.readers.base import FileKind, PartError, WrongValue
from harness.own_data.reading import Reading

# pyarrow's CSV error for a value its column's type cannot take (its row is the file's line).
_CONVERSION = re.compile(r"In CSV column #(?P<column>\d+): (?:Row #(?P<line>\d+): )?CSV conversion error to "
                         r"(?P<type>[^:]+): invalid value '(?P<value>.*)'")


class CsvReader(text.TextReader):
    format = "csv"
    script_batches = "csv.open_csv(PATH)"
    script_imports = ("from pyarrow import csv",)

    def __init__(self, kind: FileKind, reading: Reading, first: Path):
        super().__init__(kind, reading, first)
        self.dialect = self._sniffed(first)
        self.header_lines = 1 if self.dialect.header else 0

    def _sniffed(self, path: Path) -> csv_dialect.Dialect:
        with self.stream(path) as stream:
            sample = stream.read(csv_dialect.SAMPLE_BYTES)
        if not sample.strip():
            raise PartError("the file is empty")
        try:
            return csv_dialect.sniff(sample, len(sample) < csv_dialect.SAMPLE_BYTES, self.reading.csv_delimiter,
                                     False if self.reading.csv_no_header else None, self.reading.encoding,
                                     self.kind.tabs)
        except csv_dialect.NotText as problem:
            raise PartError(str(problem)) from None

    def schema(self, path: Path) -> pa.Schema:
        ragged = []
        schema = self._open(pa.BufferReader(self.first_block(path)), ragged).schema
        _refuse_ragged(ragged)
        return schema

    def batches(self, path: Path, columns: list[str] | None = None,
                types: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
        ragged = []
        try:
            for batch in self._open(self.stream(path), ragged, types, columns):
                _refuse_ragged(ragged)
                yield batch
        except pa.ArrowInvalid as exc:
            wrong = _CONVERSION.search(" ".join(str(exc).split()))
            if wrong is None:
                raise
            where = f"line {wrong['line']}" if wrong["line"] else "a line past the first 16 MiB"
            raise WrongValue(int(wrong["column"]), where, wrong["value"], wrong["type"]) from None
        _refuse_ragged(ragged)

    def _open(self, stream, ragged: list, types: pa.Schema | None = None, columns: list[str] | None = None):
        """A streaming reader of ``stream``, ``types`` given or (None) inferred from its first block, ``columns``
        only; the rows whose fields do not match the header, skipped, kept in ``ragged``."""
        from pyarrow import csv

        def on_invalid(row) -> str:
            ragged.append(row)
            return "skip"

        dialect = self.dialect
        names, skipped = None, 0
        if not dialect.header:
            names = [positional_name(position) for position in range(dialect.width)]
        elif types is not None:  # the header skipped, its columns read under the names given (a repeat made unique)
            names, skipped = types.names, 1
        # One thread: rows are numbered as the file's lines (a ragged row is named by its line).
        # The first block of a file whose types are still to infer is the inference's; every later read has them.
        block = text.INFER_BLOCK_BYTES if types is None else text.READ_BLOCK_BYTES
        read = csv.ReadOptions(use_threads=False, block_size=block, encoding=dialect.encoding, column_names=names,
                               skip_rows_after_names=skipped)
        # An empty field is a null, and only it: other placeholders (NA, -, ?) are the placeholder rule's
        # (harness.own_data.placeholders), so that a label NA in a text column stays NA.
        convert = csv.ConvertOptions(column_types=None if types is None else dict(zip(types.names, types.types)),
                                     null_values=[""], strings_can_be_null=True, include_columns=columns)
        return csv.open_csv(stream, read_options=read, convert_options=convert,
                            parse_options=csv.ParseOptions(delimiter=dialect.delimiter, invalid_row_handler=on_invalid))


def _refuse_ragged(ragged: list) -> None:
    """The first row whose fields did not match the header, named by its line: it ends the read."""
    if ragged:
        row = ragged[0]
        raise PartError(f"line {row.number} has {row.actual_columns} fields, the header {row.expected_columns}: "
                        f"{row.text[:80]!r}")
