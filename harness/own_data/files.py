"""The user's data files: a file, or a folder (or glob) of them read as one dataset (``own_data.formats``), as
pieces of pandas DataFrames in bounded memory (``own_data.frames``). Each file is read by its format's reader
(``own_data.readers``); here is what is the dataset's: its parts located, their schemas unified (``own_data.schemas``),
which columns become timestamps (``own_data.time_columns``) and which text columns numbers with placeholders
(``own_data.placeholders``), each batch made what the client takes (``own_data.normalise``: timestamps parsed or
joined, types normalised, names made QuestDB's), a CSV's column widened where a later value needs it, and what can
be known before anything is sent: its columns, rows, timestamp columns, the nulls of one and its first time before
1970. Its errors in one line naming the file (``own_data.part_errors``) and how it was read, said
(``own_data.reading_said``), are parts of ``DataFile`` of their own."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import ParameterError, UsageError, named
from harness.frames.kinds import FrameKind
from harness.own_data import normalise, placeholders, schemas, time_columns
from harness.own_data.formats import DataPart, locate, partition_schema, with_partitions
from harness.own_data.frames import HEAD_ROWS, DataFrames, FramesInMemory, frame_of, recut
from harness.own_data.names import parse_renames
from harness.own_data.part_errors import PartErrors, WrongType
from harness.own_data.read_names import ReadNames
from harness.own_data.readers.registry import READERS
from harness.own_data.reading import Reading
from harness.own_data.reading_said import ReadingSaid

__all__ = ["DataFile", "Reading", "WrongType", "open_data"]


class DataFile(PartErrors, ReadingSaid, DataFrames):
    """A file, or a folder or glob of files read as one dataset, its format told by its suffix. Opening it
    reads its schema (a CSV's or JSON lines file's from its first block, every file's of a dataset) and first
    rows, and decides how each batch is made what the client takes (``normalisation``); a missing, unreadable,
    empty or corrupt file, or a choice that does not fit it, is refused in one line, which starts with the
    ``parameter`` that named the file (``data``; ``check_against``), ``harness.errors.named``."""

    def __init__(self, path: str | os.PathLike, object_strings: bool = False, parameter: str = "data",
                 reading: Reading | None = None):
        self.name = str(path)
        self.object_strings = object_strings
        self.parameter = parameter
        self.reading = reading or Reading()
        self.reading.check()
        self.parts, self.kind, self.dataset = locate(path, parameter)
        self.format = self.kind.format
        for part in self.parts:
            if not os.access(part.path, os.R_OK):
                raise UsageError(f"{named(parameter)} {part.path}: not readable (permission denied)")
        with self._errors(self.parts[0]):
            self.reader = READERS[self.format](self.kind, self.reading, self.parts[0].path)
        self.dialect, self.preamble = self.reader.dialect, self.reader.preamble
        if self.reading.skip_rows and self.preamble is None:
            raise ParameterError("skip_rows", f"skips lines above a CSV's header: {self.name} is "
                                              f"{self.kind.describe()}")
        self._rows: int | None = None
        self._nulls: dict[str, int] = {}  # by the name sent, for the columns counted so far
        self._early: dict[str, tuple[int, object] | None] = {}  # and their first time before 1970, if any
        self._spans: dict[str, tuple[object, object] | None] = {}  # and a timestamp column's least and greatest
        self.skipped_rows = 0
        self.widened: list[normalise.Conversion] = []  # a CSV's columns whose type a later value widened
        self._read_types: pa.Schema | None = None  # a text format's columns as read (its text columns)
        self._inferred: dict[str, pa.DataType] = {}  # and as its reader inferred them
        self._own_names: dict[Path, dict[str, str]] = {}  # a dataset file's names where their case differs
        self._read_names: dict[Path, ReadNames] = {}  # a file's names where repeats and pandas' index change them
        self.missing_counts: dict[str, dict[str, int]] = {}  # each placeholder column's placeholders, counted
        self.kept_as_text: list[str] = []  # why a column of numbers, mostly, stays text
        self.raw_schema = self._unified_schema()
        if not len(self.raw_schema):
            raise UsageError(f"{self._named(self.name)}: the file has no columns")
        self.normalisation = self._decide()
        self.schema = self.normalisation.schema

    def sent_name(self, column: str) -> str:
        join = self.normalisation.join
        if join is not None and column == join.spec and column not in self.normalisation.joined_schema.names:
            column = join.name  # the joined column, as --at named it
        if column in self.normalisation.joined_schema.names:
            return self.normalisation.final_name(column)
        return column

    def is_file(self) -> bool:
        return True

    # --- opening ------------------------------------------------------------------------------------------------

    def _unified_schema(self) -> pa.Schema:
        """One schema for every part (``schemas.unified``), a text format's columns as read (``schemas.as_read``),
        partition folders' keys appended."""
        found = []
        for part in self.parts:
            with self._errors(part):
                schema = self.reader.schema(part.path)
            if (read := ReadNames.of(schema)) is not None:
                self._read_names[part.path], schema = read, read.schema(schema)
            found.append((part, schema))
        unified, self._own_names = schemas.unified(found, self._named(self.name))
        if self.reader.infers_types:
            self._inferred = {item.name: item.type for item in unified}
            self._read_types = unified = schemas.as_read(unified, self.reading, self._named(self.name))
        return partition_schema(unified, self.parts, self.parameter, self.name)

    def _decide(self) -> normalise.Normalisation:
        """Which columns become timestamps and how (``time_columns.decide``, on the first rows of the columns it
        reads), which text columns are numbers with placeholders (``_numbers_read``), the types and the names."""
        flat = normalise.flatten_schema(self.raw_schema)
        for name in self.reading.keep_text:
            if name not in flat.names:
                raise ParameterError("keep_text", f"{self.name} has no column {name!r} (columns: "
                                                  f"{', '.join(flat.names)})")
        text_read = self._read_types is not None
        wanted = time_columns.head_columns(flat, self.reading, text_read)
        with self._errors(self.parts[0]):
            head = self._head_raw(wanted) if wanted else None
        parsers, join = time_columns.decide(flat, head, self.reading, text_read, self._inferred, self.name)
        timed = {*parsers, *(join.parts if join is not None else ())}
        return normalise.decide(flat, parsers, join, parse_renames(self.reading.renames),
                                self.reading.on_bad_timestamp, self.name, self._numbers_read(flat, head, timed))

    def _numbers_read(self, flat: pa.Schema, head: pa.Table | None, timed: set[str]) -> dict:
        """A text format's text columns the placeholder rule reads as numbers, by name (why a column of numbers,
        mostly, stays text kept in ``kept_as_text``): not those read as timestamps or joined into one (``timed``),
        symbols or columns kept as text."""
        if self._read_types is None or head is None:
            return {}
        left = timed | set(self.reading.symbols) | set(self.reading.keep_text)
        texts = [item.name for item in flat if (pa.types.is_string(item.type) or pa.types.is_large_string(item.type))
                 and item.name not in left]
        found, self.kept_as_text = placeholders.read_as_numbers(head, texts, self.reading.na_values)
        return found

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

    def _raw_batches(self, part: DataPart, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """A part's record batches as its reader gives them (``columns``: only those, where the format reads
        fewer), in the unified schema, its partition columns added."""
        partition_names = [key for key, _ in part.partitions]
        own = self._own_names.get(part.path, {})  # the dataset's name -> this file's, where its case differs
        file_columns = None if columns is None else [own.get(name, name) for name in columns
                                                     if name not in partition_names]
        types = None if self._read_types is None else pa.schema(
            [pa.field(own.get(item.name, item.name), item.type) for item in self._read_types
             if item.name not in partition_names])
        wanted = self.raw_schema if columns is None else pa.schema([self.raw_schema.field(name) for name in columns])
        file_wanted = pa.schema([item for item in wanted if item.name not in partition_names])
        read = self._read_names.get(part.path)  # a text format reads under the names given with its types
        if read is not None and file_columns is not None and not self.reader.infers_types:
            file_columns = [read.file_name(name) for name in file_columns] if read.by_name else None
        for batch in self.reader.batches(part.path, file_columns, types):
            if read is not None:
                batch = read.batch(batch)
            if batch.schema.remove_metadata() != file_wanted:  # another file's widened types, or names' case
                batch = pa.RecordBatch.from_arrays(
                    [batch.column(own.get(item.name, item.name)).cast(item.type) for item in file_wanted],
                    schema=file_wanted)
            if partition_names:
                batch = with_partitions(batch, part, wanted)
            yield batch

    def _normalised(self, columns: list[str] | None = None, tally: dict | None = None) -> Iterator[pa.RecordBatch]:
        """Every part's batches made what the client takes (``columns``: only those, by the file's names); rows
        lost to values that did not parse (``on_bad_timestamp`` skip) counted in ``skipped_rows``, placeholders
        in ``tally`` (``Normalisation.apply``)."""
        file_columns = self.normalisation.file_columns(columns)  # a joined column read as its parts
        read = file_columns if columns is None or set(file_columns) <= set(self.raw_schema.names) else None
        kept = None if columns is None else [self.normalisation.final_name(name) for name in columns]
        skipped = 0
        for part in self.parts:
            start = 0  # the part's row the batch starts at
            for batch in self._guarded(part, self._raw_batches(part, read)):
                with self._errors(part, start):
                    result, lost = self.normalisation.apply(batch, tally)
                start += batch.num_rows
                skipped += lost
                yield result if read is not None or kept is None else result.select(kept)
        self.skipped_rows = skipped

    def _guarded(self, part: DataPart, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches`` of ``part``, each read with its errors in one line naming the part."""
        while True:
            with self._errors(part):
                batch = next(batches, None)
            if batch is None:
                return
            yield batch

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The data's record batches as sent, errors in one line."""
        self._scanned()
        return self._normalised()

    def _scanned(self) -> None:
        """A format read front to back, or a column whose day and month its first rows did not tell, read once before
        anything else reads it: its rows and nulls are known only then, a text format's types are final only then
        (``_widen``), and the day and month are decided only then."""
        if self._rows is None and (self.reader.streamed or self.normalisation.undecided()):
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
            # Files whose metadata counts their rows are counted so, unless a timestamp is parsed: every value is
            # then parsed once first, so that one that does not parse is found before anything is sent.
            counted = None if self.normalisation.parsers else self._metadata_rows()
            if counted is not None:
                self._rows = counted
            else:
                self._scan()
        return self._rows

    def _metadata_rows(self) -> int | None:
        """The rows every part's metadata counts, or None where a part's format does not count them."""
        rows = 0
        for part in self.parts:
            with self._errors(part):
                counted = self.reader.rows(part.path)
            if counted is None:
                return None
            rows += counted
        return rows

    def _scan(self) -> None:
        """Read the data once before sending, keeping nothing: its rows, and the columns whose every value must be
        known first (``_scanned_columns``), their nulls counted; on the way, the first ragged CSV row (named by
        its line), value one of them cannot take, or timestamp that does not parse; a column's day and month decided
        by its first value that tells, or, none telling in the whole column, refused. A text format's other columns
        are tokenised, not converted (a third of the cost of reading them all)."""
        for _ in range(2 * len(self.raw_schema) + 1):
            try:
                self._count(self._scanned_columns())
                break
            except WrongType as wrong:
                if not self._widen(wrong.column, wrong.value):
                    raise
        if undecided := self.normalisation.undecided():  # the whole column read, no value told
            self._rows = None
            raise UsageError(f"{self._named(self.name)}: {undecided[0].ambiguity()}")

    def _widen(self, column: str, value: str) -> bool:
        """A text file's column whose later value its type cannot take read as the type that takes it
        (``schemas.widening``), the change named; False where none does."""
        if self._read_types is None or column not in self._read_types.names:
            return False
        index = self._read_types.get_field_index(column)
        numbers = dict(self.normalisation.placeholders)
        change = schemas.widening(column, self._read_types.field(index).type, numbers.pop(column, None), value,
                                  self.reading.na_values)
        if change is None:
            return False
        read, made, before, after, how = change
        numbers.update({column: made} if made is not None else {})
        self._read_types = self._read_types.set(index, pa.field(column, read))
        self.raw_schema = partition_schema(self._read_types, self.parts, self.parameter, self.name)
        previous = self.normalisation
        self.normalisation = normalise.Normalisation(normalise.flatten_schema(self.raw_schema), previous.parsers,
                                                     previous.names, previous.bad_rows, previous.join, numbers)
        self.schema = self.normalisation.schema
        self._nulls, self._early, self._spans, self.missing_counts = {}, {}, {}, {}
        self.widened.append(normalise.Conversion(column, before, after, how))
        return True

    def _scanned_columns(self) -> list[str]:
        """The file's columns a scan reads: those parsed as timestamps, text read as numbers with placeholders (a
        later value that is neither ends the run before anything is sent) and, in a format read front to back,
        integers and booleans (a null anywhere makes every piece's dtype nullable), and with ``--na-values`` every
        number column (one of them further on makes its column numbers with placeholders); at least one, to count
        the rows."""
        columns = [*self.normalisation.parsers, *self.normalisation.placeholders]
        if self.reader.streamed:
            columns += [item.name for item in self.normalisation.joined_schema if item.name not in columns and (
                normalise.nullable(item.type) or (self.reading.na_values and pa.types.is_floating(item.type)))]
        return columns or self.normalisation.joined_schema.names[:1]

    def _count(self, columns: list[str]) -> None:
        rows, nulls = 0, dict.fromkeys((self.normalisation.final_name(name) for name in columns), 0)
        early = {name: None for name in nulls if pa.types.is_timestamp(self.schema.field(name).type)}
        spans: dict[str, tuple[object, object] | None] = dict.fromkeys(early)
        tally = {name: {} for name in columns if name in self.normalisation.placeholders}
        for batch in self._normalised(columns, tally):
            for name, column in zip(batch.schema.names, batch.columns):
                nulls[name] += column.null_count
                if name in early and early[name] is None and (at := _arrow_before_epoch(column)) is not None:
                    early[name] = (rows + at + 1, column[at].as_py())
                if name in spans:
                    spans[name] = _widest(spans[name], column)
            rows += batch.num_rows
        if set(self.normalisation.parsers) <= set(columns):  # the rows a bad timestamp skips are left out
            self._rows = rows
        self._nulls.update(nulls)
        self._early.update(early)
        self._spans.update(spans)
        self.missing_counts.update(tally)

    def first_before_epoch(self, column: str) -> tuple[int, object] | None:
        self._scanned()
        if column in self._early:
            return self._early[column]
        raw = self.normalisation.raw_name(column)
        if raw not in self.normalisation.parsers and (statistics := self._statistics(raw)) is not None and all(
                block.least is not None and pd.Timestamp(block.least).value >= 0 for block in statistics):
            return None  # every block's statistics say so
        return super().first_before_epoch(column)

    def time_span(self, column: str) -> tuple[object, object] | None:
        # Counting the column's nulls reads it whole (once: ``_count``), its least and greatest values on the way.
        self.nulls(column)
        return self._spans.get(column)

    def nulls(self, column: str) -> int:
        self._scanned()
        if column not in self._nulls:
            self._count([self.normalisation.raw_name(column)])
        return self._nulls[column]

    def _nullable_columns(self) -> frozenset[str]:
        """Integer and boolean columns that hold a null anywhere (their pieces then all nullable dtypes)."""
        return frozenset(item.name for item in self.schema
                         if normalise.nullable(item.type) and self._may_hold_nulls(item.name))

    def _may_hold_nulls(self, column: str) -> bool:
        """Whether ``column`` may hold a null: its files' statistics say so where they keep them (a block without
        them counts as yes); otherwise the column's nulls are counted."""
        raw = self.normalisation.raw_name(column)
        if not any(raw == key for part in self.parts for key, _ in part.partitions) and \
                (statistics := self._statistics(raw)) is not None:
            return any(block.nulls is None or block.nulls for block in statistics)
        return self.nulls(column) > 0

    def _statistics(self, column: str) -> list | None:
        """Every block's statistics of ``column`` (the file's name) in every part, or None where its format keeps
        none."""
        found = []
        for part in self.parts:
            with self._errors(part):
                statistics = self.reader.statistics(part.path, self._own_names.get(part.path, {}).get(column, column))
            if statistics is None:
                return None
            found += statistics
        return found

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

    def pieces(self, chunk_rows: int, kind: FrameKind) -> Iterator[object]:
        """Read straight into ``kind``: the record batches re-cut, with no pandas step for an Arrow or Polars
        frame."""
        return recut(self.batches(), chunk_rows, self.object_strings, self._nullable_columns(), kind)

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


def _arrow_before_epoch(column: pa.Array) -> int | None:
    """The position of an Arrow timestamp column's first value before 1970, or None."""
    early = pc.fill_null(pc.less(column.cast(pa.int64()), 0), False)
    return int(pc.index(early, True).as_py()) if pc.any(early).as_py() else None


def _widest(held: tuple[object, object] | None, column: pa.Array) -> tuple[object, object] | None:
    """``held`` (the least and greatest value so far, or None) widened by ``column``'s."""
    found = pc.min_max(column)
    least, most = found["min"].as_py(), found["max"].as_py()
    if least is None:
        return held
    return (least, most) if held is None else (min(held[0], least), max(held[1], most))


def open_data(data, object_strings: bool = False, parameter: str = "data", reading: Reading | None = None
              ) -> DataFrames:
    """The user's data: a path (``DataFile``; ``object_strings``: its strings read as Python objects;
    ``parameter``: the one that named it, for messages; ``reading``: how it is read), a DataFrame or DataFrames
    (``FramesInMemory``)."""
    if isinstance(data, DataFrames):
        return data
    if isinstance(data, (str, os.PathLike)):
        return DataFile(data, object_strings, parameter, reading)
    return FramesInMemory(data)
