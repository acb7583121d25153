"""The user's data files: a file, or a folder (or glob) of them read as one dataset (``harness.own_data.formats``),
as pieces of pandas DataFrames in bounded memory (``harness.own_data.frames``). Parquet is read by row groups,
Arrow IPC files and streams by record batches, CSV by blocks (its dialect sniffed: ``harness.own_data.csv_dialect``),
JSON lines by blocks, compressed ones through a decompressing stream, all with pyarrow's readers; each batch is
made what the client takes (``harness.own_data.normalise``: timestamps parsed, types normalised, names made
QuestDB's) before it becomes a DataFrame. Owns how a file is read (``Reading``: the user's flags), the formats'
errors in one line (a value that does not parse named by its file's line or row), and what can be known of the
data before anything is sent: its columns, rows, timestamp columns, the nulls of one and its first time before
1970.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import UsageError
from harness.own_data import csv_dialect, normalise
from harness.own_data.choices import EpochUnit, OnBadTimestamp
from harness.own_data.formats import DataPart, locate, partition_schema, with_partitions
from harness.own_data.frames import CONVERT_ROWS, HEAD_ROWS, DataFrames, FramesInMemory, frame_of, recut
from harness.own_data.names import parse_renames, positional_name
from harness.own_data.timestamps import check_zone, looks_like_times

# Bytes at the start of a CSV or JSON lines file whose values decide its columns' types (pyarrow's inference).
INFER_BLOCK_BYTES = 16 << 20
# Bytes of CSV and JSON lines parsed at a time, the types given. pyarrow's streaming readers read up to 32 blocks
# ahead on a thread of their own, whatever their threads option says: with 16 MiB blocks, 512 MiB more memory for
# a large file than for a small one; with these, 32 MiB at most. Parsing 1 MiB blocks also takes less than half the
# CPU 16 MiB blocks take (they stay in the cache; measured: benchmarks/file_formats.py).
READ_BLOCK_BYTES = 1 << 20
# pyarrow's CSV error for a value its column's type cannot take (its row is the file's line).
_CSV_CONVERSION = re.compile(r"In CSV column #(?P<column>\d+): (?:Row #(?P<line>\d+): )?CSV conversion error to "
                             r"(?P<type>[^:]+): invalid value '(?P<value>.*)'")


class WrongType(UsageError):
    """A value of a CSV's column that the column's type, inferred from the file's first lines, cannot take."""

    def __init__(self, message: str, column: str, value: str):
        super().__init__(message)
        self.column, self.value = column, value


@dataclass(frozen=True)
class Reading:
    """How a file is read, as the user's flags say (``bench --data``, ``inspect``, ``tune`` and ``read
    --check-against`` alike): the designated timestamp ``at`` and how its text or numbers are read
    (``at_format``, ``at_unit``, ``tz``), other columns read as timestamps (``parse_dates``), what a value that does
    not parse does (``on_bad_timestamp``: fail or skip its row), the symbol columns (a text file's read as text: a
    rack number stays the text ``042``), a CSV's dialect where not sniffed, the encoding,
    and the user's column names (``renames``: ``old=new,...``)."""

    at: str | None = None
    at_format: str | None = None
    at_unit: str | None = None
    tz: str | None = None
    parse_dates: tuple[str, ...] = ()
    on_bad_timestamp: str = "fail"
    symbols: tuple[str, ...] = ()
    csv_delimiter: str | None = None
    csv_no_header: bool = False
    encoding: str | None = None
    renames: str | None = None

    def check(self) -> None:
        if self.on_bad_timestamp not in tuple(OnBadTimestamp):
            raise UsageError(f"--on-bad-timestamp: fail or skip, got {self.on_bad_timestamp!r}")
        if self.at_unit is not None and self.at_unit not in tuple(EpochUnit):
            raise UsageError(f"--at-unit: s, ms, us or ns, got {self.at_unit!r}")
        for flag, value in (("--at-format", self.at_format), ("--at-unit", self.at_unit)):
            if value is not None and self.at is None:
                raise UsageError(f"{flag} reads the designated timestamp: name its column with --at")
        parse_renames(self.renames)
        check_zone(self.tz)


class DataFile(DataFrames):
    """A file, or a folder or glob of files read as one dataset, its format told by its suffix. Opening it
    reads its schema (a CSV's or JSON lines file's from its first block, every file's of a dataset) and first
    rows, and decides how each batch is made what the client takes (``normalisation``); a missing, unreadable,
    empty or corrupt file, or a flag that does not fit it, is refused in one line, which starts with ``flag``
    (the option that named the file)."""

    def __init__(self, path: str | os.PathLike, object_strings: bool = False, flag: str = "--data",
                 reading: Reading | None = None):
        self.name = str(path)
        self.object_strings = object_strings
        self.flag = flag
        self.reading = reading or Reading()
        self.reading.check()
        self.parts, self.kind, self.dataset = locate(path, flag)
        self.format = self.kind.format
        for part in self.parts:
            if not os.access(part.path, os.R_OK):
                raise UsageError(f"{self.flag} {part.path}: not readable (permission denied)")
        self._part = self.parts[0]  # the part being read, and its first row's number in it: for messages
        self._batch_start = 0
        self._rows: int | None = None
        self._nulls: dict[str, int] = {}  # by the name sent, for the columns counted so far
        self._early: dict[str, tuple[int, object] | None] = {}  # and their first time before 1970, if any
        self.skipped_rows = 0
        self.widened: list[normalise.Conversion] = []  # a CSV's columns whose type a later value widened
        # A CSV's rows whose fields do not match its header, as its reader skips them: the first one ends the read.
        self._ragged: list = []
        self.dialect = self._guard(self._sniff) if self.format == "csv" else None
        self._read_types: pa.Schema | None = None  # a CSV's or JSON file's columns as read (its text columns)
        self._inferred: dict[str, pa.DataType] = {}  # and as its reader inferred them
        self._own_names: dict[Path, dict[str, str]] = {}  # a dataset file's names where their case differs
        self.raw_schema = self._guard(self._unified_schema)
        if not len(self.raw_schema):
            raise UsageError(f"{self.flag} {path}: the file has no columns")
        self.normalisation = self._guard(self._decide)
        self.schema = self.normalisation.schema

    def sent_name(self, column: str) -> str:
        if column in self.normalisation.raw_schema.names:
            return self.normalisation.final_name(column)
        return column

    def is_file(self) -> bool:
        return True

    # --- errors --------------------------------------------------------------------------------------------------

    def _where(self) -> str:
        return str(self._part.path) if self.dataset else self.name

    def _guard(self, read):
        """``read()``, its pyarrow errors (corrupt footer, ragged row, a value not of its column's type, a
        truncated stream) and values that do not parse turned into one line naming the file."""
        try:
            result = read()
        except UsageError:
            raise
        except normalise.BadRow as bad:
            raise UsageError(self._bad_row_line(bad)) from None
        except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
            text = " ".join(str(exc).split())
            if self.format == "json" and "JSON parse error" in text:
                text = self._json_error() or text
            elif (wrong := _CSV_CONVERSION.search(text)) is not None:
                column = self._read_types.names[int(wrong["column"])] if self._read_types is not None else "?"
                where = f"line {wrong['line']}" if wrong["line"] else "a line past the first 16 MiB"
                raise WrongType(f"{self.flag} {self._where()}: {where}, column {column!r}: {wrong['value']!r} is not "
                                f"{wrong['type']}, the column's type as its first lines gave it", column,
                                wrong["value"]) from None
            raise UsageError(f"{self.flag} {self._where()}: not a readable {self.kind.describe()} file: "
                             f"{text}") from None
        if self._ragged:
            row = self._ragged[0]
            raise UsageError(f"{self.flag} {self._where()}: line {row.number} has {row.actual_columns} fields, the "
                             f"header {row.expected_columns}: {row.text[:80]!r}")
        return result

    def _bad_row_line(self, bad: normalise.BadRow) -> str:
        row = self._batch_start + bad.position  # counted from 0 in the part
        if self.format in ("csv", "json"):
            where = f"line {row + 1 + (1 if self.dialect is not None and self.dialect.header else 0)}"
        else:
            where = f"row {row + 1}"
        advice = " (--on-bad-timestamp skip skips such rows)" if self.reading.on_bad_timestamp == "fail" else ""
        return (f"{self.flag} {self._where()}: {where}, column {bad.column!r}: {bad.value!r} is {bad.why}"
                f"{advice}")

    def _json_error(self) -> str | None:
        """The first line of the part being read that is not JSON, named (pyarrow's error counts rows in a
        block)."""
        with self._stream(self._part) as stream:
            for number, line in enumerate(_lines(stream), 1):
                if not line.strip():
                    continue
                try:
                    json.loads(line)
                except ValueError as exc:
                    return f"line {number} is not JSON ({exc.msg}): {line[:80].decode(errors='replace')!r}"
        return None

    # --- opening ------------------------------------------------------------------------------------------------

    def _stream(self, part: DataPart):
        """The part's bytes, decompressed as its suffix says: gzip by ISA-L (``isal``, the ILP file reader's too),
        which takes 0.4 of zlib's CPU; the others by Arrow's codecs."""
        if self.kind.compression == "gzip":
            from isal import igzip

            return pa.PythonFile(igzip.open(str(part.path), "rb"), mode="r")
        return pa.input_stream(str(part.path), compression=self.kind.compression)

    def _sniff(self) -> csv_dialect.Dialect:
        with self._stream(self.parts[0]) as stream:
            sample = stream.read(csv_dialect.SAMPLE_BYTES)
        if not sample.strip():
            raise UsageError(f"{self.flag} {self.parts[0].path}: the file is empty")
        return csv_dialect.sniff(sample, len(sample) < csv_dialect.SAMPLE_BYTES, f"{self.flag} {self.parts[0].path}",
                                 self.reading.csv_delimiter, False if self.reading.csv_no_header else None,
                                 self.reading.encoding, self.kind.tabs)

    def _named_times(self) -> set[str]:
        return {name for name in (self.reading.at, *self.reading.parse_dates) if name}

    def _part_schema(self, part: DataPart) -> pa.Schema:
        """The schema a part's reader gives (a CSV's and JSON file's as inferred from its first block)."""
        self._part = part
        if self.format == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(part.path).schema_arrow
        if self.format == "arrow":
            return pa.ipc.open_file(pa.memory_map(str(part.path))).schema
        if self.format == "arrow stream":
            with self._stream(part) as source:
                return pa.ipc.open_stream(source).schema
        # A text format's types inferred from its first lines alone, read here: a reader on the whole file would
        # have read up to 32 blocks ahead before its schema is asked for.
        sample = pa.BufferReader(self._sample(part))
        if self.format == "json" and sample.read(1 << 10).lstrip()[:1] == b"[":
            raise UsageError(f"{self.flag} {part.path}: a JSON array, not JSON lines (one object a line): make JSON "
                             f"lines of it first, e.g. jq -c '.[]' {part.path.name} > {part.path.stem}.jsonl")
        sample.seek(0)
        if self.format == "json":
            from pyarrow import json as pa_json

            return pa_json.read_json(sample, read_options=pa_json.ReadOptions(
                use_threads=False, block_size=INFER_BLOCK_BYTES)).schema
        return self._open_csv(part, None, stream=sample).schema

    def _sample(self, part: DataPart) -> bytes:
        """The part's first INFER_BLOCK_BYTES bytes, cut after their last whole line."""
        with self._stream(part) as stream:
            sample = stream.read(INFER_BLOCK_BYTES)
        if len(sample) == INFER_BLOCK_BYTES and b"\n" in sample:
            sample = sample[:sample.rindex(b"\n") + 1]
        return sample

    def _unified_schema(self) -> pa.Schema:
        """One schema for every part: the same names in the same order (their case may differ: the first file's
        spelling is the dataset's), types widened where one part's inference differs from another's (an integer
        column that is float in another file); partition folders' keys appended."""
        schemas = [(part, self._part_schema(part)) for part in self.parts]
        first_part, unified = schemas[0]
        unified = unified.remove_metadata() if len(schemas) > 1 else unified
        for part, schema in schemas[1:]:
            if [name.lower() for name in schema.names] != [name.lower() for name in unified.names]:
                raise UsageError(f"{self.flag} {self.name}: {first_part.path} and {part.path} have different columns "
                                 f"({', '.join(unified.names)}; {', '.join(schema.names)}): a dataset's files share "
                                 f"one schema")
            if schema.names != unified.names:  # the same names but for case (QuestDB's are case-insensitive)
                self._own_names[part.path] = {name: own for name, own in zip(unified.names, schema.names)
                                              if name != own}
                schema = pa.schema([pa.field(name, item.type) for name, item in zip(unified.names, schema)])
            try:
                unified = pa.unify_schemas([unified, schema.remove_metadata()], promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                differ = next(item.name for item, other in zip(unified, schema) if item.type != other.type)
                raise UsageError(f"{self.flag} {self.name}: {first_part.path} and {part.path} differ in column "
                                 f"{differ!r} ({unified.field(differ).type}; {schema.field(differ).type}): a "
                                 f"dataset's files share one schema") from None
        if self.format in ("csv", "json"):
            undecoded = next((item.name for item in unified if pa.types.is_binary(item.type)), None)
            if undecoded is not None:  # bytes its encoding cannot decode, past the start the dialect was sniffed on
                raise UsageError(f"{self.flag} {self.name}: column {undecoded!r} holds text that is not "
                                 f"{self.reading.encoding or 'utf-8'}: give the file's encoding with --encoding (e.g. "
                                 f"latin-1, cp1252)")
            # Text the readers would make timestamps, dates or times of, or nothing of (a column empty in the
            # first block), and text named a timestamp: read as text, parsed here.
            named = self._named_times()
            self._inferred = {item.name: item.type for item in unified}
            symbols = set(self.reading.symbols)
            self._read_types = pa.schema([
                pa.field(item.name, pa.string()) if _read_as_text(item.type) or item.name in symbols or (
                    item.name in named and pa.types.is_timestamp(item.type)) else item for item in unified])
            unified = self._read_types
        return partition_schema(unified, self.parts, self.flag, self.name)

    def _decide(self) -> normalise.Normalisation:
        flat = normalise.flatten_schema(self.raw_schema)
        named = self._named_times()
        for name in named:
            if name not in flat.names:
                flag = "--at" if name == self.reading.at else "--parse-dates"
                raise UsageError(f"{flag}: {self.name} has no column {name!r} (columns: {', '.join(flat.names)})")
        texts = [item.name for item in flat if pa.types.is_string(item.type) or pa.types.is_large_string(item.type)]
        numbers = [item.name for item in flat if pa.types.is_integer(item.type) or pa.types.is_floating(item.type)]
        # A text format's column its reader would make timestamps or dates of, or whose first values are all
        # timestamps (ISO 8601, or of one inferred format): parsed here (a later value that is not one is then
        # named by its line).
        wanted = [name for name in texts + numbers if name in named or (self._read_types is not None and name in texts)]
        head = self._head_raw(wanted) if wanted else None
        parsed = {}
        for name in texts + numbers:
            if name == self.reading.at:
                parsed[name] = dict(at_format=self.reading.at_format, at_unit=self.reading.at_unit,
                                    tz=self.reading.tz, flag="--at")
            elif name in named:
                parsed[name] = dict(tz=self.reading.tz, flag="--parse-dates")
            elif name in texts and self._read_types is not None and (
                    _read_as_time(self._inferred.get(name, pa.string())) or _holds_times(head, name)):
                parsed[name] = dict(tz=self.reading.tz, flag="column")
        return normalise.decide(flat, head, parsed, parse_renames(self.reading.renames),
                                self.reading.on_bad_timestamp, self.name)

    def _head_raw(self, columns: list[str]) -> pa.Table | None:
        """The first HEAD_ROWS rows of ``columns`` (flattened names) as the reader gives them."""
        read = columns if set(columns) <= set(self.raw_schema.names) else None  # a struct's field: all, flattened
        batches, rows = [], 0
        for batch in self._raw_batches(self.parts[0], read):
            batches.append(normalise.flattened(batch).select(columns))
            rows += batch.num_rows
            if rows >= HEAD_ROWS:
                break
        return pa.Table.from_batches(batches).slice(0, HEAD_ROWS) if batches else None

    # --- reading ------------------------------------------------------------------------------------------------

    def _open_csv(self, part: DataPart, column_types: pa.Schema | None, columns: list[str] | None = None,
                  stream=None):
        """A streaming reader of the part's CSV (or of ``stream``, its first lines), ``column_types`` given or
        (None) inferred from its first block, ``columns`` only."""
        from pyarrow import csv

        def on_invalid(row) -> str:
            self._ragged.append(row)
            return "skip"

        dialect = self.dialect
        names = None
        if not dialect.header:
            names = [positional_name(position) for position in range(dialect.width)]
        # One thread: rows are numbered as the file's lines (a ragged row is named by its line).
        # The first block of a file whose types are still to infer is the inference's; every later read has them.
        block = INFER_BLOCK_BYTES if column_types is None else READ_BLOCK_BYTES
        read = csv.ReadOptions(use_threads=False, block_size=block, encoding=dialect.encoding,
                               column_names=names)
        convert = csv.ConvertOptions(column_types=column_types, strings_can_be_null=True,
                                     include_columns=columns)
        reader = csv.open_csv(stream if stream is not None else self._stream(part), read_options=read,
                              parse_options=csv.ParseOptions(delimiter=dialect.delimiter,
                                                             invalid_row_handler=on_invalid),
                              convert_options=convert)
        return reader

    def _raw_batches(self, part: DataPart, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """A part's record batches as its reader gives them (``columns``: only those, where the format reads
        fewer), in the unified schema, its partition columns added."""
        self._part = part
        partition_names = [key for key, _ in part.partitions]
        own = self._own_names.get(part.path, {})  # the dataset's name -> this file's, where its case differs
        file_columns = None if columns is None else [own.get(name, name) for name in columns
                                                     if name not in partition_names]
        if self.format == "parquet":
            import pyarrow.parquet as pq

            # Row group by row group: never more than one group and one batch in memory (pyarrow's pre-buffering
            # would keep every row group read so far: memory growing with the file).
            batches = pq.ParquetFile(part.path, pre_buffer=False).iter_batches(
                batch_size=CONVERT_ROWS, columns=file_columns, use_pandas_metadata=True)
        elif self.format == "arrow":
            batches = _arrow_file_batches(part.path, file_columns)
        elif self.format == "arrow stream":
            batches = _arrow_stream_batches(self._stream(part), file_columns)
        elif self.format == "json":
            from pyarrow import json as pa_json

            explicit = pa.schema([pa.field(own.get(item.name, item.name), item.type) for item in self._read_types
                                  if item.name not in partition_names])
            batches = pa_json.open_json(self._stream(part), read_options=pa_json.ReadOptions(
                use_threads=False, block_size=READ_BLOCK_BYTES), parse_options=pa_json.ParseOptions(
                explicit_schema=explicit, unexpected_field_behavior="error"))
            batches = (batch.select(file_columns) if file_columns is not None else batch for batch in batches)
        else:
            types = {own.get(item.name, item.name): item.type for item in self._read_types
                     if item.name not in partition_names}
            batches = self._open_csv(part, types, file_columns)
        wanted = self.raw_schema if columns is None else pa.schema([self.raw_schema.field(name) for name in columns])
        file_wanted = pa.schema([item for item in wanted if item.name not in partition_names])
        for batch in batches:
            if batch.schema.remove_metadata() != file_wanted:  # another file's widened types, or names' case
                batch = pa.RecordBatch.from_arrays(
                    [batch.column(own.get(item.name, item.name)).cast(item.type) for item in file_wanted],
                    schema=file_wanted)
            if partition_names:
                batch = with_partitions(batch, part, wanted)
            yield batch

    def _normalised(self, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Every part's batches made what the client takes (``columns``: only those, by the file's names); rows
        lost to values that did not parse (``--on-bad-timestamp skip``) counted in ``skipped_rows``."""
        read = columns if columns is None or set(columns) <= set(self.raw_schema.names) else None  # a struct's field
        kept = None if columns is None else [self.normalisation.final_name(name) for name in columns]
        skipped = 0
        for part in self.parts:
            self._batch_start = 0
            for batch in self._guarded(self._raw_batches(part, read)):
                start = self._batch_start
                result, lost = self._guard(lambda: self.normalisation.apply(batch))
                self._batch_start = start + batch.num_rows
                skipped += lost
                yield result if read is not None or kept is None else result.select(kept)
        self.skipped_rows = skipped

    def _guarded(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches``, each read under ``_guard``."""
        while (batch := self._guard(lambda: next(batches, None))) is not None:
            yield batch

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The data's record batches as sent, errors in one line."""
        self._scanned()
        return self._normalised()

    def _scanned(self) -> None:
        """A text format read once before anything else reads it: its types are final only then (``_widen``)."""
        if self._rows is None and self.format not in ("parquet", "arrow"):
            self._scan()

    # --- what can be known before sending -----------------------------------------------------------------------

    def columns(self) -> list[tuple[str, pa.DataType | None, str]]:
        empty = self._empty_frame()
        dtypes = [str(dtype) for dtype in empty.dtypes] if len(empty.columns) == len(self.schema) else \
            [""] * len(self.schema)
        return [(item.name, item.type, dtype) for item, dtype in zip(self.schema, dtypes)]

    def _empty_frame(self) -> pd.DataFrame:
        return frame_of(self.schema.empty_table(), self.object_strings, self._nullable_columns())

    def rows(self) -> int:
        if self._rows is None:
            # Parquet and Arrow files count their rows in their metadata, unless a timestamp is parsed: every value
            # is then parsed once first, so that one that does not parse is found before anything is sent.
            if self.format in ("parquet", "arrow") and not self.normalisation.parsers:
                self._rows = sum(self._guard(lambda: _metadata_rows(part.path, self.format)) for part in self.parts)
            else:
                self._scan()
        return self._rows

    def _scan(self) -> None:
        """Read the data once before sending, keeping nothing: its rows, and the columns whose every value must be
        known first (``_scanned_columns``), their nulls counted; on the way, the first ragged CSV row (named by
        its line), value one of them cannot take, or timestamp that does not parse. A text format's other
        columns are tokenised, not converted (a third of the cost of reading them all)."""
        for _ in range(2 * len(self.raw_schema) + 1):
            try:
                return self._count(self._scanned_columns())
            except WrongType as wrong:
                if not self._widen(wrong.column, wrong.value):
                    raise

    def _widen(self, column: str, value: str) -> bool:
        """A CSV's integer or boolean column whose later value its type cannot take, given the type that takes it
        (an integer column with a decimal: double; otherwise text), the change named; False for any other."""
        if self.format != "csv" or column not in self._read_types.names:
            return False
        index = self._read_types.get_field_index(column)
        before = self._read_types.field(index).type
        if not (pa.types.is_integer(before) or pa.types.is_boolean(before)):
            return False
        try:
            float(value)
            after = pa.float64() if pa.types.is_integer(before) else pa.string()
        except ValueError:
            after = pa.string()
        self._read_types = self._read_types.set(index, pa.field(column, after))
        self.raw_schema = partition_schema(self._read_types, self.parts, self.flag, self.name)
        previous = self.normalisation
        self.normalisation = normalise.Normalisation(normalise.flatten_schema(self.raw_schema), previous.parsers,
                                                     previous.names, previous.bad_rows)
        self.schema = self.normalisation.schema
        self._nulls, self._early = {}, {}
        self.widened.append(normalise.Conversion(column, str(before), str(after),
                                                 f"a later value, {value!r}, is not {before}: the column's type "
                                                 f"as its first 16 MiB gave it, widened"))
        return True

    def _scanned_columns(self) -> list[str]:
        """The file's columns a scan reads: those parsed as timestamps and, in a text format, integers and
        booleans (a null anywhere makes every piece's dtype nullable); at least one, to count the rows."""
        columns = list(self.normalisation.parsers)
        if self.format not in ("parquet", "arrow"):
            columns += [item.name for item in self.normalisation.raw_schema
                        if normalise.nullable(item.type) and item.name not in columns]
        return columns or self.normalisation.raw_schema.names[:1]

    def _count(self, columns: list[str]) -> None:
        rows, nulls = 0, dict.fromkeys((self.normalisation.final_name(name) for name in columns), 0)
        early = {name: None for name in nulls if pa.types.is_timestamp(self.schema.field(name).type)}
        for batch in self._normalised(columns):
            for name, column in zip(batch.schema.names, batch.columns):
                nulls[name] += column.null_count
                if name in early and early[name] is None and (at := _arrow_before_epoch(column)) is not None:
                    early[name] = (rows + at + 1, column[at].as_py())
            rows += batch.num_rows
        if set(self.normalisation.parsers) <= set(columns):  # the rows a bad timestamp skips are left out
            self._rows = rows
        self._nulls.update(nulls)
        self._early.update(early)

    def first_before_epoch(self, column: str) -> tuple[int, object] | None:
        self._scanned()
        if column in self._early:
            return self._early[column]
        raw = self.normalisation.raw_name(column)
        if self.format == "parquet" and raw not in self.normalisation.parsers and all(
                statistics is not None and statistics.has_min_max and statistics.min is not None
                and pd.Timestamp(statistics.min).value >= 0 for statistics in self._parquet_statistics(raw)):
            return None  # every row group's statistics say so
        return super().first_before_epoch(column)

    def nulls(self, column: str) -> int:
        self._scanned()
        if column not in self._nulls:
            self._count([self.normalisation.raw_name(column)])
        return self._nulls[column]

    def _nullable_columns(self) -> frozenset[str]:
        """Integer and boolean columns that hold a null anywhere (their pieces then all nullable dtypes)."""
        candidates = [item.name for item in self.schema if normalise.nullable(item.type)]
        if not candidates:
            return frozenset()
        if self.format in ("parquet", "arrow"):
            return frozenset(name for name in candidates if self._may_hold_nulls(name))
        return frozenset(name for name in candidates if self.nulls(name))

    def _may_hold_nulls(self, column: str) -> bool:
        """Whether a Parquet or Arrow file's column may hold a null: Parquet's statistics say so per row group
        (a group without them counts as yes); an Arrow file's column is read."""
        raw = self.normalisation.raw_name(column)
        if self.format == "parquet" and not any(raw == key for part in self.parts for key, _ in part.partitions):
            return any(statistics is None or not statistics.has_null_count or statistics.null_count
                       for statistics in self._parquet_statistics(raw))
        return self.nulls(column) > 0

    def _parquet_statistics(self, column: str):
        """Each row group's statistics of a Parquet dataset's ``column`` (the file's name), every part's; None for
        a group without them, or a part where the column is no leaf of its own."""
        import pyarrow.parquet as pq

        for part in self.parts:
            own = self._own_names.get(part.path, {}).get(column, column)
            metadata = pq.ParquetFile(part.path).metadata
            leaves = [metadata.schema.column(leaf).path for leaf in range(metadata.num_columns)]
            index = leaves.index(own) if own in leaves else None
            for group in range(metadata.num_row_groups):
                yield None if index is None else metadata.row_group(group).column(index).statistics

    def column_pieces(self, column: str, chunk_rows: int = HEAD_ROWS * 10) -> Iterator[pd.Series]:
        """Only ``column`` read where the format allows it (Parquet, Arrow IPC; a CSV's other columns are
        parsed but not converted), in pieces, as ``frames`` gives it."""
        self._scanned()
        raw = self.normalisation.raw_name(column)
        nullable = self._nullable_columns()
        for batch in self._normalised([raw]):
            yield frame_of(pa.Table.from_batches([batch]), self.object_strings, nullable)[column]

    def frames(self, chunk_rows: int) -> Iterator[pd.DataFrame]:
        return recut(self.batches(), chunk_rows, self.object_strings, self._nullable_columns())

    def head(self, rows: int = HEAD_ROWS) -> pd.DataFrame:
        # Only the batches the rows need: a value further on that its column's type cannot take is met when sending.
        batches, held = [], 0
        for batch in self.batches():
            batches.append(batch)
            held += batch.num_rows
            if held >= rows:
                break
        table = pa.Table.from_batches(batches, schema=self.schema if not batches else None).slice(0, rows)
        return frame_of(table, self.object_strings, self._nullable_columns())

    def converted(self, convert) -> tuple[DataFrames, bool]:
        # Strings read as Python objects are read as Arrow strings instead (the conversion made by the reader,
        # never a copy); every other conversion is made piece by piece, as the pieces are read.
        if not self.object_strings:
            return self, True
        native = copy.copy(self)  # the same file, already opened and counted
        native.object_strings = False
        return native, True

    def described(self) -> dict:
        """How the data was read, for messages and the record: format, files, dialect, conversions, names."""
        described = {"format": self.kind.describe(), "files": len(self.parts)}
        if self.dialect is not None:
            described["dialect"] = self.dialect.describe()
        described["conversions"] = [conversion.stored() for conversion in
                                    self.widened + self.normalisation.conversions]
        described["renames"] = self.normalisation.renames
        described["skipped_rows"] = self.skipped_rows
        return described

    def reading_lines(self) -> list[str]:
        files = f" ({len(self.parts)} files)" if self.dataset else ""
        dialect = f", {self.dialect.describe()}" if self.dialect is not None else ""
        lines = [f"Read as {self.kind.describe()}{files}{dialect}"]
        lines += [f"  converted {conversion.line()}" for conversion in self.widened + self.normalisation.conversions]
        lines += [f"  renamed {line}" for line in self.normalisation.rename_lines()]
        if self.skipped_rows:
            lines.append(f"  skipped {self.skipped_rows} rows whose timestamp did not parse (--on-bad-timestamp skip)")
        return lines


def _holds_times(head: pa.Table | None, column: str) -> bool:
    """Whether a text ``column``'s first values in ``head`` are timestamps (``timestamps.looks_like_times``)."""
    return head is not None and looks_like_times(head.column(column).drop_null()[:1_000].to_pylist())


def _arrow_before_epoch(column: pa.Array) -> int | None:
    """The position of an Arrow timestamp column's first value before 1970, or None."""
    early = pc.fill_null(pc.less(column.cast(pa.int64()), 0), False)
    return int(pc.index(early, True).as_py()) if pc.any(early).as_py() else None


def _read_as_time(arrow_type: pa.DataType) -> bool:
    return pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type)


def _read_as_text(arrow_type: pa.DataType) -> bool:
    """A text reader's type that is read as text instead: timestamps and dates (parsed here, every form and
    every later value), times of day, nothing (a column empty in the first block)."""
    return _read_as_time(arrow_type) or pa.types.is_time(arrow_type) or pa.types.is_null(arrow_type)


def _lines(stream) -> Iterator[bytes]:
    pending = b""
    while chunk := stream.read(1 << 20):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending


def _metadata_rows(path: Path, form: str) -> int:
    if form == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    reader = pa.ipc.open_file(pa.memory_map(str(path)))
    return sum(reader.get_batch(index).num_rows for index in range(reader.num_record_batches))


def _arrow_file_batches(path: Path, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    # Read, not memory-mapped: a mapped file's pages would stay in the process's memory as they are read.
    with pa.OSFile(str(path)) as source:
        reader = pa.ipc.open_file(source)
        for index in range(reader.num_record_batches):
            batch = reader.get_batch(index)
            yield batch if columns is None else batch.select(columns)


def _arrow_stream_batches(stream, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    with stream as source:
        for batch in pa.ipc.open_stream(source):
            yield batch if columns is None else batch.select(columns)


def open_data(data, object_strings: bool = False, flag: str = "--data", reading: Reading | None = None
              ) -> DataFrames:
    """The user's data: a path (``DataFile``; ``object_strings``: its strings read as Python objects; ``flag``: the
    option that named it, for messages; ``reading``: how it is read), a DataFrame or DataFrames
    (``FramesInMemory``)."""
    if isinstance(data, DataFrames):
        return data
    if isinstance(data, (str, os.PathLike)):
        return DataFile(data, object_strings, flag, reading)
    return FramesInMemory(data)
