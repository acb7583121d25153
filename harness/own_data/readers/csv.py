"""CSV and TSV files (``.csv``, ``.tsv``, compressed or not), read by pyarrow's streaming CSV reader on one thread,
so that its rows are numbered as the file's lines: the lines above its header skipped (a title, a station's name:
``harness.own_data.preamble``, found in the data's first file and skipped in every file), the dialect sniffed on
the lines past them in the data's first file (``harness.own_data.csv_dialect``), the types inferred from the first
block, a row whose fields do not match the header named by its line in the file (it ends the read), a value its
column's type cannot take named by its line (``WrongValue``: the dataset may widen the column and read again). An
empty field is a null, no other text is (placeholders such as ``-`` or ``NA``: ``harness.own_data.placeholders``);
a header that repeats a name is read under the names made unique (``harness.own_data.read_names``), given with the
types."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from harness.errors import named
from harness.own_data import csv_dialect
from harness.own_data.names import positional_name
from harness.own_data.preamble import Preamble, sniffed_skip
from harness.own_data.readers import text
from harness.own_data.readers.base import FileKind, PartError, WrongValue
from harness.own_data.reading import Reading

# pyarrow's CSV error for a value its column's type cannot take (its row is the file's line).
_CONVERSION = re.compile(r"In CSV column #(?P<column>\d+): (?:Row #(?P<line>\d+): )?CSV conversion error to "
                         r"(?P<type>[^:]+): invalid value '(?P<value>.*)'")
# A line's end as pyarrow's CSV reader counts lines (Python's splitlines also splits at form feeds and the like).
_LINE_END = re.compile(r"\r\n|\r|\n")


class CsvReader(text.TextReader):
    format = "csv"
    script_batches = "csv.open_csv(PATH)"
    script_imports = ("from pyarrow import csv",)

    def __init__(self, kind: FileKind, reading: Reading, first: Path):
        super().__init__(kind, reading, first)
        self.dialect, self.preamble = self._sniffed(first)
        self.header_lines = len(self.preamble) + (1 if self.dialect.header else 0)

    def _sniffed(self, path: Path) -> tuple[csv_dialect.Dialect, Preamble]:
        """The first file's dialect, sniffed on the lines past those above its header, and those lines."""
        reading = self.reading
        encoding = csv_dialect.checked_encoding(reading.encoding, reading.csv_delimiter)
        sample, whole = self._head(path, reading.skip_rows or 0)
        if not sample.strip():
            raise PartError("the file is empty")
        try:
            text = csv_dialect.decoded(sample, encoding, whole)
        except csv_dialect.NotText as problem:
            raise PartError(str(problem)) from None
        lines = _LINE_END.split(text)
        if lines and not lines[-1]:
            lines.pop()  # the last line's end, not a line
        hint = reading.csv_delimiter or ("\t" if self.kind.tabs else None)
        skip = reading.skip_rows if reading.skip_rows is not None else \
            sniffed_skip(lines[:csv_dialect.SAMPLE_LINES], hint)
        if skip and skip >= len(lines):
            counted = f"it has {len(lines)}" if whole else f"its first {len(sample) >> 20} MiB hold {len(lines)}"
            raise PartError(f"{named('skip_rows')} {skip} skips every line of the file ({counted})")
        dialect = csv_dialect.sniff("\n".join(lines[skip:skip + csv_dialect.SAMPLE_LINES]), reading.csv_delimiter,
                                    False if reading.csv_no_header else None, encoding, self.kind.tabs)
        return dialect, Preamble(tuple(lines[:skip]), reading.skip_rows is not None, dialect.header)

    def _head(self, path: Path, skip: int) -> tuple[bytes, bool]:
        """The file's first bytes, and whether they are the whole file: a sample, and where ``skip`` lines are to
        be skipped, enough more to hold them and a line past them (at most ``text.INFER_BLOCK_BYTES``)."""
        with self.stream(path) as stream:
            sample = stream.read(csv_dialect.SAMPLE_BYTES)
            whole = len(sample) < csv_dialect.SAMPLE_BYTES
            while not whole and sample.count(b"\n") <= skip + 1 and len(sample) < text.INFER_BLOCK_BYTES:
                more = stream.read(csv_dialect.SAMPLE_BYTES)
                sample, whole = sample + more, len(more) < csv_dialect.SAMPLE_BYTES
        return sample, whole

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
        # The lines above the header skipped: pyarrow still numbers a row by its line in the file.
        read = csv.ReadOptions(use_threads=False, block_size=block, encoding=dialect.encoding, column_names=names,
                               skip_rows=len(self.preamble), skip_rows_after_names=skipped)
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
