"""The user's data as pieces of pandas DataFrames in bounded memory: a data file (Parquet by row groups, Arrow
IPC files and streams by record batches, CSV by blocks, all through pyarrow's readers) or DataFrames already in
memory. Owns the formats, their errors in one line, and what can be known of the data before anything is
sent: its columns, rows, timestamp columns and the nulls of one.

A piece becomes a DataFrame as ``pd.read_parquet`` (``pyarrow.Table.to_pandas``) gives it, the pandas
metadata a file carries included: the frames a user's own code would hold. pandas 3 reads strings as
Arrow-backed ``str``; ``object_strings`` reads them as pandas 2 does, Python ``str`` objects (object dtype).
Pieces are re-cut to exactly ``chunk_rows`` rows, so a chunk's number names the same rows whatever the file's row groups are.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa

from harness.errors import UsageError

# A file's format by its suffix (lower case).
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
           ".arrows": "arrow stream", ".csv": "csv"}
# Bytes of CSV pyarrow parses at a time: one block's rows are the most the reader holds.
CSV_BLOCK_BYTES = 16 << 20
# Rows of a piece read to learn a CSV's or an Arrow stream's columns, and by default for the dtype audit.
HEAD_ROWS = 10_000
# Rows converted to pandas at a time, the chunks then sliced from them: the most rows held as a DataFrame.
CONVERT_ROWS = 100_000


class DataFrames:
    """What a run may ask of the user's data, whatever holds it (``DataFile``, ``FramesInMemory``)."""

    name: str  # how it is named in messages and records (the path; "DataFrame")

    def columns(self) -> list[tuple[str, pa.DataType | None, str]]:
        """(name, Arrow type or None, pandas dtype) of every column, in order."""
        raise NotImplementedError

    def rows(self) -> int:
        """Rows in all (counting them may read the data once, without keeping it)."""
        raise NotImplementedError

    def nulls(self, column: str) -> int:
        """Nulls in ``column`` (it exists)."""
        raise NotImplementedError

    def frames(self, chunk_rows: int) -> Iterator[pd.DataFrame]:
        """Every row, in order, in DataFrames of ``chunk_rows`` rows (the last may hold fewer)."""
        raise NotImplementedError

    def column_pieces(self, column: str, chunk_rows: int = HEAD_ROWS * 10) -> Iterator[pd.Series]:
        """``column``'s values, in order, in pieces (a file reads only that column where its format allows)."""
        for frame in self.frames(chunk_rows):
            yield frame[column]

    def head(self, rows: int = HEAD_ROWS) -> pd.DataFrame:
        """The first ``rows`` rows (fewer when there are fewer)."""
        return next(iter(self.frames(rows)), None)

    def converted(self, convert) -> tuple[DataFrames, bool]:
        """The data as sent with the dtype audit's conversions (``convert``: a frame to its converted copy):
        the data to read, and whether each piece still needs ``convert``."""
        raise NotImplementedError

    def timestamp_columns(self) -> list[str]:
        """Columns holding timestamps: the candidates for the designated one."""
        return [name for name, arrow_type, dtype in self.columns()
                if (arrow_type is not None and pa.types.is_timestamp(arrow_type))
                or dtype.startswith("datetime64") or dtype.startswith("timestamp[")]


class DataFile(DataFrames):
    """A Parquet, Arrow IPC or CSV file, its format told by its suffix. Opening it reads its schema (a CSV's
    from its first block); a missing, unreadable, empty or corrupt file is refused in one line, which starts
    with ``flag`` (the option that named the file)."""

    def __init__(self, path: str | os.PathLike, object_strings: bool = False, flag: str = "--data"):
        self.path = Path(path)
        self.name = str(path)
        self.object_strings = object_strings
        self.flag = flag
        self.format = FORMATS.get(self.path.suffix.lower())
        if self.format is None:
            raise UsageError(f"{self.flag} {path}: unknown file type {self.path.suffix or '(no suffix)'!r} "
                             f"(Parquet: .parquet/.pq, Arrow IPC: .arrow/.feather/.ipc, Arrow stream: .arrows, CSV: "
                             f".csv)")
        if not self.path.is_file():
            raise UsageError(f"{self.flag} {path}: no such file" if not self.path.exists()
                             else f"{self.flag} {path}: not a file")
        if not os.access(self.path, os.R_OK):
            raise UsageError(f"{self.flag} {path}: not readable (permission denied)")
        self._rows: int | None = None
        self._csv_nulls: dict[str, int] | None = None
        # A CSV's rows whose fields do not match its header, as its reader skips them: the first one ends the read.
        self._ragged: list = []
        self.schema = self._guard(self._read_schema)
        if not len(self.schema):
            raise UsageError(f"{self.flag} {path}: the file has no columns")

    def _guard(self, read):
        """``read()``, its pyarrow errors (corrupt footer, ragged row, a value not of its column's type) turned
        into one line naming the file."""
        try:
            result = read()
        except UsageError:
            raise
        except (pa.ArrowException, OSError, ValueError) as exc:
            text = " ".join(str(exc).split())
            raise UsageError(f"{self.flag} {self.name}: not a readable {self.format} file: {text}") from None
        if self._ragged:
            row = self._ragged[0]
            raise UsageError(f"{self.flag} {self.name}: line {row.number} has {row.actual_columns} fields, the header "
                             f"{row.expected_columns}: {row.text[:80]!r}")
        return result

    def _read_schema(self) -> pa.Schema:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(self.path).schema_arrow
        if self.format == "arrow":
            return pa.ipc.open_file(pa.memory_map(str(self.path))).schema
        if self.format == "arrow stream":
            with pa.OSFile(str(self.path)) as source:
                return pa.ipc.open_stream(source).schema
        return self._open_csv().schema

    def _open_csv(self):
        from pyarrow import csv

        def on_invalid(row) -> str:
            self._ragged.append(row)
            return "skip"

        # One thread: rows are numbered as the file's lines (a ragged row is named by its line).
        return csv.open_csv(self.path, read_options=csv.ReadOptions(use_threads=False, block_size=CSV_BLOCK_BYTES),
                            parse_options=csv.ParseOptions(invalid_row_handler=on_invalid))

    def columns(self) -> list[tuple[str, pa.DataType | None, str]]:
        empty = self.schema.empty_table().to_pandas()
        dtypes = [str(dtype) for dtype in empty.dtypes] if len(empty.columns) == len(self.schema) else \
            [""] * len(self.schema)
        return [(field.name, field.type, dtype) for field, dtype in zip(self.schema, dtypes)]

    def _batches(self) -> Iterator[pa.RecordBatch]:
        if self.format == "parquet":
            import pyarrow.parquet as pq

            # Row group by row group: never more than one group and one batch in memory (pyarrow's pre-buffering
            # would keep every row group read so far: memory growing with the file).
            yield from pq.ParquetFile(self.path, pre_buffer=False).iter_batches(batch_size=CONVERT_ROWS,
                                                                                 use_pandas_metadata=True)
        elif self.format == "arrow":
            # Read, not memory-mapped: a mapped file's pages would stay in the process's memory as they are read.
            with pa.OSFile(str(self.path)) as source:
                reader = pa.ipc.open_file(source)
                for index in range(reader.num_record_batches):
                    yield reader.get_batch(index)
        elif self.format == "arrow stream":
            with pa.OSFile(str(self.path)) as source:
                yield from pa.ipc.open_stream(source)
        else:
            yield from self._open_csv()

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The file's record batches as its reader gives them, errors in one line."""
        return self._guarded(self._batches())

    def rows(self) -> int:
        if self._rows is None:
            if self.format == "parquet":
                import pyarrow.parquet as pq

                self._rows = self._guard(lambda: pq.ParquetFile(self.path).metadata.num_rows)
            elif self.format == "arrow":
                reader = self._guard(lambda: pa.ipc.open_file(pa.memory_map(str(self.path))))
                self._rows = sum(reader.get_batch(index).num_rows for index in range(reader.num_record_batches))
            else:
                self._scan()
        return self._rows

    def _scan(self) -> None:
        """Read a CSV or an Arrow stream once, keeping nothing: its rows and each column's nulls, and for a CSV
        its first ragged row (named by its line) or value its column's type cannot take."""
        rows, nulls = 0, dict.fromkeys(self.schema.names, 0)
        for batch in self.batches():
            rows += batch.num_rows
            for name, column in zip(batch.schema.names, batch.columns):
                nulls[name] += column.null_count
        self._rows, self._csv_nulls = rows, nulls

    def nulls(self, column: str) -> int:
        if self.format in ("csv", "arrow stream"):
            if self._csv_nulls is None:
                self._scan()
            return self._csv_nulls[column]
        if self.format == "parquet":
            import pyarrow.parquet as pq

            batches = pq.ParquetFile(self.path, pre_buffer=False).iter_batches(batch_size=CONVERT_ROWS,
                                                                                columns=[column])
            return sum(batch.column(0).null_count for batch in self._guarded(batches))
        return sum(batch.column(column).null_count for batch in self.batches())

    def column_pieces(self, column: str, chunk_rows: int = HEAD_ROWS * 10) -> Iterator[pd.Series]:
        """Only ``column`` read where the format allows it (Parquet, Arrow IPC; a CSV's other columns are
        parsed but not converted), in pieces of about ``chunk_rows`` rows, as ``frames`` gives it."""
        if self.format == "parquet":
            import pyarrow.parquet as pq

            batches = pq.ParquetFile(self.path, pre_buffer=False).iter_batches(
                batch_size=chunk_rows, columns=[column], use_pandas_metadata=True)
        elif self.format == "arrow":
            reader = self._guard(lambda: pa.ipc.open_file(pa.memory_map(str(self.path))))
            batches = (reader.get_batch(index).select([column]) for index in range(reader.num_record_batches))
        elif self.format == "csv":
            from pyarrow import csv

            batches = csv.open_csv(self.path, read_options=csv.ReadOptions(use_threads=False,
                                                                           block_size=CSV_BLOCK_BYTES),
                                   convert_options=csv.ConvertOptions(include_columns=[column]))
        else:
            batches = (batch.select([column]) for batch in self._batches())
        for batch in self._guarded(batches):
            yield _frame(pa.Table.from_batches([batch]))[column]

    def _guarded(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches``, each read under ``_guard``."""
        while (batch := self._guard(lambda: next(batches, None))) is not None:
            yield batch

    def frames(self, chunk_rows: int) -> Iterator[pd.DataFrame]:
        return _recut(self.batches(), chunk_rows, self.object_strings)

    def converted(self, convert) -> tuple[DataFrames, bool]:
        # Strings read as Python objects are read as Arrow strings instead (the conversion made by the reader,
        # never a copy); every other conversion is made piece by piece, as the pieces are read.
        if not self.object_strings:
            return self, True
        native = copy.copy(self)  # the same file, already opened and counted
        native.object_strings = False
        return native, True


def _recut(batches: Iterable[pa.RecordBatch], chunk_rows: int, object_strings: bool = False
           ) -> Iterator[pd.DataFrame]:
    """Record batches re-cut into DataFrames of exactly ``chunk_rows`` rows (the last one: the rest). Rows are
    converted to pandas ``CONVERT_ROWS`` (or a chunk, if more) at a time and the chunks sliced from them without
    a copy: a conversion's cost per call (categories, column objects) is paid once per many small chunks."""
    whole_chunks = max(1, CONVERT_ROWS // chunk_rows) * chunk_rows
    held: list[pa.RecordBatch] = []
    held_rows = 0

    def cut(table: pa.Table) -> Iterator[pd.DataFrame]:
        frame = _frame(table, object_strings)
        for start in range(0, len(frame), chunk_rows):
            yield frame.iloc[start:start + chunk_rows]

    for batch in batches:
        held.append(batch)
        held_rows += batch.num_rows
        while held_rows >= whole_chunks:
            table = pa.Table.from_batches(held)
            yield from cut(table.slice(0, whole_chunks))
            rest = table.slice(whole_chunks)
            held, held_rows = rest.to_batches(), rest.num_rows
    if held_rows:
        yield from cut(pa.Table.from_batches(held))


def _frame(table: pa.Table, object_strings: bool = False) -> pd.DataFrame:
    # Each piece numbered from 0, as a file read whole and sliced would not be: the client ignores the index.
    frame = table.to_pandas().reset_index(drop=True)
    if object_strings:  # as pandas 2 reads them: a Python str object per value, missing ones None
        for name in frame.columns:
            if isinstance(frame[name].dtype, pd.StringDtype):
                frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return frame


class FramesInMemory(DataFrames):
    """DataFrames the user holds: one DataFrame, or several in order (a list), cut into pieces of
    ``chunk_rows`` rows without copying more than a piece."""

    def __init__(self, frames: pd.DataFrame | Iterable[pd.DataFrame]):
        self.name = "DataFrame"
        self._frames = [frames] if isinstance(frames, pd.DataFrame) else list(frames)
        if not self._frames or not all(isinstance(frame, pd.DataFrame) for frame in self._frames):
            raise UsageError("the data: a DataFrame, or DataFrames in a list, is needed")
        first = self._frames[0]
        for frame in self._frames[1:]:
            if list(frame.columns) != list(first.columns):
                raise UsageError(f"the DataFrames have different columns: {list(first.columns)} and "
                                 f"{list(frame.columns)}")

    def columns(self) -> list[tuple[str, pa.DataType | None, str]]:
        first = self._frames[0]
        return [(str(name), None, str(dtype)) for name, dtype in zip(first.columns, first.dtypes)]

    def rows(self) -> int:
        return sum(len(frame) for frame in self._frames)

    def nulls(self, column: str) -> int:
        return sum(int(frame[column].isna().sum()) for frame in self._frames)

    def converted(self, convert) -> tuple[DataFrames, bool]:
        # Frames in memory are converted once, as the user would before sending them (the time it takes is
        # the source's ``conversion_seconds``, outside every timed phase).
        return FramesInMemory([convert(frame) for frame in self._frames]), False

    def frames(self, chunk_rows: int) -> Iterator[pd.DataFrame]:
        held: list[pd.DataFrame] = []
        held_rows = 0
        for frame in self._frames:
            start = 0
            while start < len(frame):
                piece = frame.iloc[start:start + chunk_rows - held_rows]
                start += len(piece)
                held.append(piece)
                held_rows += len(piece)
                if held_rows == chunk_rows:
                    yield held[0] if len(held) == 1 else pd.concat(held, ignore_index=True)
                    held, held_rows = [], 0
        if held_rows:
            yield held[0] if len(held) == 1 else pd.concat(held, ignore_index=True)


def open_data(data, object_strings: bool = False, flag: str = "--data") -> DataFrames:
    """The user's data: a path (``DataFile``; ``object_strings``: its strings read as Python objects; ``flag``: the
    option that named it, for messages), a DataFrame or DataFrames (``FramesInMemory``)."""
    if isinstance(data, DataFrames):
        return data
    if isinstance(data, (str, os.PathLike)):
        return DataFile(data, object_strings, flag)
    return FramesInMemory(data)
