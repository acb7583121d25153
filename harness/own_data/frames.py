"""The user's data as pieces of pandas DataFrames (or of another kind of frame, ``harness.frames.kinds``) in bounded
memory, whatever holds it: what a run may ask of it (``DataFrames``: columns, rows, nulls, pieces), frames the user
holds (``FramesInMemory``: pandas, Polars, pyarrow), and record batches re-cut into frames of exactly ``chunk_rows``
rows (a file's: ``harness.own_data.files``), so that a chunk's number names the same rows whatever the file's row
groups or blocks are.

A piece becomes a DataFrame as ``pd.read_parquet`` (``pyarrow.Table.to_pandas``) gives it, the pandas metadata a file
carries included: the frames a user's own code would hold. pandas 3 reads strings as Arrow-backed ``str``;
``object_strings`` reads them as pandas 2 does, Python ``str`` objects (object dtype).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import UsageError
from harness.frames.convert import as_pandas, from_arrow, from_pandas, kind_of, sliced
from harness.frames.kinds import PANDAS_KINDS, FrameKind
from harness.own_data import normalise

# Rows of a piece read to learn a CSV's or an Arrow stream's columns, and by default for the dtype audit.
HEAD_ROWS = 10_000
# Rows converted to pandas at a time, the chunks then sliced from them: the most rows held as a DataFrame.
CONVERT_ROWS = 100_000


class DataFrames:
    """What a run may ask of the user's data, whatever holds it (``DataFile``, ``FramesInMemory``)."""

    name: str  # how it is named in messages and records (the path; "DataFrame")
    kind: FrameKind = FrameKind.pandas  # the kind of frame it holds (a file's: what ``frames`` gives)

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

    def pieces(self, chunk_rows: int, kind: FrameKind) -> Iterator[object]:
        """``frames`` as frames of ``kind`` (converted from pandas, where the data is not read straight into it)."""
        for frame in self.frames(chunk_rows):
            yield from_pandas(frame, kind)

    def column_pieces(self, column: str, chunk_rows: int = HEAD_ROWS * 10) -> Iterator[pd.Series]:
        """``column``'s values, in order, in pieces (a file reads only that column where its format allows)."""
        for frame in self.frames(chunk_rows):
            yield frame[column]

    def sent_name(self, column: str) -> str:
        """The name ``column`` (as the user named it, in the data) is sent under."""
        return column

    def first_before_epoch(self, column: str) -> tuple[int, object] | None:
        """The first row (from 1) of timestamp ``column`` before 1970-01-01, and its value; None if there is none
        (QuestDB's designated timestamps start there)."""
        rows = 0
        for piece in self.column_pieces(column):
            found = _before_epoch(piece)
            if found is not None:
                return rows + found + 1, piece.iloc[found]
            rows += len(piece)
        return None

    def time_span(self, column: str) -> tuple[object, object] | None:
        """The least and greatest value of timestamp ``column`` (None: it holds none)."""
        least = most = None
        for piece in self.column_pieces(column):
            if pd.api.types.is_datetime64_any_dtype(piece.dtype) and piece.notna().any():
                least = piece.min() if least is None else min(least, piece.min())
                most = piece.max() if most is None else max(most, piece.max())
        return None if least is None else (least, most)

    def is_file(self) -> bool:
        """Whether the data is read from files (its fixes are then flags, not pandas code)."""
        return False

    def index_timestamp(self) -> str | None:
        """The timestamp column that was a DataFrame's index (a file pandas wrote), the designated timestamp where
        none is named; None where there is none."""
        return None

    def described(self) -> dict:
        """How the data was read, for the record (nothing for frames in memory)."""
        return {}

    def reading_lines(self) -> list[str]:
        """How the data was read, as a run prints it (nothing for frames in memory)."""
        return []

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




def recut(batches: Iterable[pa.RecordBatch], chunk_rows: int, object_strings: bool = False,
          nullable: frozenset[str] = frozenset(), kind: FrameKind = FrameKind.pandas) -> Iterator[object]:
    """Record batches re-cut into frames of ``kind`` (NumPy-backed pandas DataFrames by default) of exactly
    ``chunk_rows`` rows (the last one: the rest). Rows are converted ``CONVERT_ROWS`` (or a chunk, if more) at a time
    and the chunks sliced from them without a copy: a conversion's cost per call (categories, column objects) is
    paid once per many small chunks. Arrow frames are the batches themselves, re-cut."""
    whole_chunks = max(1, CONVERT_ROWS // chunk_rows) * chunk_rows
    held: list[pa.RecordBatch] = []
    held_rows = 0

    def cut(table: pa.Table) -> Iterator[object]:
        frame = from_arrow(table, kind, lambda whole: frame_of(whole, object_strings, nullable))
        for start in range(0, len(frame), chunk_rows):
            yield sliced(frame, start, chunk_rows)

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


def frame_of(table: pa.Table, object_strings: bool = False, nullable: frozenset[str] = frozenset()
             ) -> pd.DataFrame:
    # Each piece numbered from 0, as a file read whole and sliced would not be: the client ignores the index.
    frame = table.to_pandas().reset_index(drop=True)
    for name in nullable.intersection(frame.columns):  # one dtype in every piece, nulls or none
        dtype = normalise.NULLABLE_DTYPES.get(table.schema.field(name).type)
        if dtype is not None and str(frame[name].dtype) != dtype:
            frame[name] = pd.array(table.column(name), dtype=dtype)
    if object_strings:  # as pandas 2 reads them: a Python str object per value, missing ones None
        for name in frame.columns:
            if isinstance(frame[name].dtype, pd.StringDtype):
                frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return frame




class FramesInMemory(DataFrames):
    """Frames the user holds: one pandas DataFrame, or several in order (a list), cut into pieces of ``chunk_rows``
    rows without copying more than a piece; or a Polars DataFrame (a LazyFrame collected) or a pyarrow Table, or
    several of one kind (joined without a copy), sent as they are (``pieces`` of their own ``kind``) and converted a
    piece at a time where pandas is asked for (the dtype audit's head, ILP)."""

    def __init__(self, frames):
        self.name = "DataFrame"
        given = list(frames) if isinstance(frames, (list, tuple)) else [frames]
        given = [frame.collect() if type(frame).__name__ == "LazyFrame" else frame for frame in given]
        try:
            kinds = {kind_of(frame) for frame in given}
        except TypeError:
            kinds = set()
        if not given or not kinds or (len(kinds) > 1 and not kinds <= PANDAS_KINDS):
            raise UsageError("the data: a pandas DataFrame, a Polars DataFrame or a pyarrow Table (or a list of "
                             "frames of one kind) is needed")
        first = given[0]
        for frame in given[1:]:
            if _names(frame) != _names(first):
                raise UsageError(f"the frames have different columns: {_names(first)} and {_names(frame)}")
        self.kind = kind_of(first)
        if isinstance(first, pd.DataFrame):
            self._frames = given
        elif isinstance(first, pa.Table):
            self._frames = [pa.concat_tables(given) if len(given) > 1 else first]
        else:
            import polars as pl

            self._frames = [pl.concat(given, rechunk=False) if len(given) > 1 else first]

    def columns(self) -> list[tuple[str, pa.DataType | None, str]]:
        head = self.head(1)
        arrow = None if isinstance(self._frames[0], pd.DataFrame) else _arrow_schema(self._frames[0])
        return [(str(name), arrow.field(str(name)).type if arrow is not None else None, str(dtype))
                for name, dtype in zip(head.columns, head.dtypes)]

    def rows(self) -> int:
        return sum(len(frame) for frame in self._frames)

    def nulls(self, column: str) -> int:
        frame = self._frames[0]
        if isinstance(frame, pd.DataFrame):
            return sum(int(each[column].isna().sum()) for each in self._frames)
        return int(frame.column(column).null_count if isinstance(frame, pa.Table) else frame[column].null_count())

    def time_span(self, column: str) -> tuple[object, object] | None:
        # Each frame's column as it is held: a Polars or Arrow frame is not converted to pandas for two values.
        found = []
        for frame in self._frames:
            if isinstance(frame, pd.DataFrame):
                if pd.api.types.is_datetime64_any_dtype(frame[column].dtype) and frame[column].notna().any():
                    found.append((frame[column].min(), frame[column].max()))
            elif isinstance(frame, pa.Table):
                if pa.types.is_timestamp(frame.schema.field(column).type) and frame.column(column).null_count < len(frame):
                    extremes = pc.min_max(frame.column(column))
                    found.append((extremes["min"].as_py(), extremes["max"].as_py()))
            elif str(frame[column].dtype).startswith("Datetime") and frame[column].null_count() < len(frame):
                found.append((frame[column].min(), frame[column].max()))
        if not found:
            return None
        return min(pd.Timestamp(least) for least, _ in found), max(pd.Timestamp(most) for _, most in found)

    def converted(self, convert) -> tuple[DataFrames, bool]:
        # Frames in memory are converted once, as the user would before sending them (the time it takes is
        # the source's ``conversion_seconds``, outside every timed phase).
        if self.kind not in PANDAS_KINDS:
            raise UsageError(f"the dtype audit's conversions are pandas': the data is a {self.kind} frame")
        return FramesInMemory([convert(frame) for frame in self._frames]), False

    def frames(self, chunk_rows: int) -> Iterator[pd.DataFrame]:
        if not isinstance(self._frames[0], pd.DataFrame):
            for piece in self.pieces(chunk_rows, self.kind):
                yield as_pandas(piece)
            return
        held: list[pd.DataFrame] = []
        held_rows = 0
        for frame in self._frames:
            start = 0
            while start < len(frame):
                piece = sliced(frame, start, chunk_rows - held_rows)
                start += len(piece)
                held.append(piece)
                held_rows += len(piece)
                if held_rows == chunk_rows:
                    yield held[0] if len(held) == 1 else pd.concat(held, ignore_index=True)
                    held, held_rows = [], 0
        if held_rows:
            yield held[0] if len(held) == 1 else pd.concat(held, ignore_index=True)

    def pieces(self, chunk_rows: int, kind: FrameKind) -> Iterator[object]:
        """Slices of the frames as they are where ``kind`` is theirs; else each piece converted."""
        if kind != self.kind or isinstance(self._frames[0], pd.DataFrame):
            yield from super().pieces(chunk_rows, kind)
            return
        frame = self._frames[0]
        for start in range(0, len(frame), chunk_rows):
            yield sliced(frame, start, chunk_rows)


def _names(frame) -> list[str]:
    return list(frame.column_names if isinstance(frame, pa.Table) else frame.columns)


def _arrow_schema(frame) -> pa.Schema:
    """The Arrow schema of a pyarrow or Polars frame (Polars': of its first row, converted)."""
    return frame.schema if isinstance(frame, pa.Table) else frame.head(1).to_arrow().schema


def _before_epoch(piece: pd.Series) -> int | None:
    """The position of ``piece``'s first timestamp before 1970, or None (a column not of datetimes: the dtype
    audit speaks of it)."""
    if not pd.api.types.is_datetime64_any_dtype(piece.dtype):
        return None
    early = (piece < pd.Timestamp(0, tz=piece.dt.tz)).to_numpy(dtype=bool, na_value=False)
    return int(early.argmax()) if early.any() else None
