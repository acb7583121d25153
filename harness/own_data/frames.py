"""The user's data as pieces of pandas DataFrames in bounded memory, whatever holds it: what a run may ask of it
(``DataFrames``: columns, rows, nulls, pieces), DataFrames the user holds (``FramesInMemory``), and record batches
re-cut into DataFrames of exactly ``chunk_rows`` rows (a file's: ``harness.own_data.files``), so that a chunk's
number names the same rows whatever the file's row groups or blocks are.

A piece becomes a DataFrame as ``pd.read_parquet`` (``pyarrow.Table.to_pandas``) gives it, the pandas metadata a file
carries included: the frames a user's own code would hold. pandas 3 reads strings as Arrow-backed ``str``;
``object_strings`` reads them as pandas 2 does, Python ``str`` objects (object dtype).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pandas as pd
import pyarrow as pa

from harness.errors import UsageError
from harness.own_data import normalise

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

    def is_file(self) -> bool:
        """Whether the data is read from files (its fixes are then flags, not pandas code)."""
        return False

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
           nullable: frozenset[str] = frozenset()) -> Iterator[pd.DataFrame]:
    """Record batches re-cut into DataFrames of exactly ``chunk_rows`` rows (the last one: the rest). Rows are
    converted to pandas ``CONVERT_ROWS`` (or a chunk, if more) at a time and the chunks sliced from them without
    a copy: a conversion's cost per call (categories, column objects) is paid once per many small chunks."""
    whole_chunks = max(1, CONVERT_ROWS // chunk_rows) * chunk_rows
    held: list[pa.RecordBatch] = []
    held_rows = 0

    def cut(table: pa.Table) -> Iterator[pd.DataFrame]:
        frame = frame_of(table, object_strings, nullable)
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


def _before_epoch(piece: pd.Series) -> int | None:
    """The position of ``piece``'s first timestamp before 1970, or None (a column not of datetimes: the dtype
    audit speaks of it)."""
    if not pd.api.types.is_datetime64_any_dtype(piece.dtype):
        return None
    early = (piece < pd.Timestamp(0, tz=piece.dt.tz)).to_numpy(dtype=bool, na_value=False)
    return int(early.argmax()) if early.any() else None
