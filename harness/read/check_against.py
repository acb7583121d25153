"""``--check-against PATH``: every value of a read equal to the user's file that filled the table (``bench --send
--data PATH``), column by column, compared as the frames arrive (``harness.read.check.OrderedCheck``).

How a column is compared is decided by the file's dtype and by the type the server's table really has
(``show columns``), written down once in ``COMPARED``; what the client's ILP makes of each dtype and how it
reads back (QuestDB 9.3.4, questdb 6.0.0, pandas 3):

- int8 ... int64, uint8 ... uint64, Int8 ... Int64, UInt8 ... UInt64 -> LONG: the integer; ``<NA>`` = NULL (the
  client refuses a uint64 above 2^63 - 1).
- float32, float64, Float32, Float64 -> DOUBLE: the float64 of the value (a float32's exactly), bit for bit;
  NaN and ``<NA>`` = NULL, and so are infinities (QuestDB reads them back as NULL over PGWire and CSV).
- bool, boolean -> BOOLEAN: True/False (the client refuses a boolean ``<NA>``; BOOLEAN has no NULL).
- object, str, string[python], string[pyarrow], large_string -> VARCHAR (SYMBOL where ``--symbols`` names the
  column): the text; None, NaN, ``<NA>`` = NULL.
- category (of strings) -> SYMBOL: the text; NaN = NULL.
- datetime64[s], [ms], [us] -> TIMESTAMP: microseconds since 1970, UTC; NaT = NULL.
- datetime64[ns] -> TIMESTAMP_NS (ILP protocol 2 and up; TIMESTAMP with protocol 1, or in a table made so):
  nanoseconds; in a TIMESTAMP column microseconds truncated toward zero, as QuestDB keeps them (-1 ns is 0 us).
- datetime64[unit, tz] -> as datetime64[unit]: compared in UTC.

The designated timestamp is compared likewise, as the table's designated timestamp whatever its name (a table
ILP made names it ``timestamp``; ``bench`` makes it with the file's name). PGWire's timestamp is microseconds:
over asyncpg, psycopg and connectorx a TIMESTAMP_NS column arrives truncated toward zero, and is compared at
microseconds (the run says so). Any other pair (a dtype the client does not send, a table column of another
type) is refused or fails in one line naming the column.

The table must hold exactly the file's rows (with ``--from``/``--to``, the file's rows in that range): both
are counted before the read. QuestDB returns rows in designated-timestamp order, rows of one timestamp in
any order; a file in time order is compared as the table streams in, both sides cut at timestamps, rows of
one timestamp compared whatever their order. A file not in time order is read whole and sorted by its
timestamp first, if it has at most ``SORT_LIMIT_ROWS`` rows; a longer one is refused. Whether it is in time
order is learnt first, by reading its timestamp column alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.errors import UsageError
from harness.own_data.audit import is_string_like
from harness.own_data.frames import DataFrames
from harness.read.check import CheckFailed, OrderedCheck, canonical, shown
from harness.read.frames import BOOLEAN, DOUBLE, LONG, OTHER, STRING, TIMESTAMP, TIMESTAMP_NS, kind_of
from harness.read.slices import ReadSlices
from harness.read.protocols import NANOSECOND_PROTOCOLS, ReadProtocol

# The most rows of a file not in time order that are sorted in memory before the comparison.
SORT_LIMIT_ROWS = 5_000_000
# (the family of the file's dtype, the kind of the table column's type) -> how the two are compared.
COMPARED = {
    ("integer", LONG): LONG,
    ("float", DOUBLE): DOUBLE,
    ("bool", BOOLEAN): BOOLEAN,
    ("string", STRING): STRING,
    ("datetime", TIMESTAMP): TIMESTAMP,
    ("datetime", TIMESTAMP_NS): TIMESTAMP_NS,
}
FAMILIES = "integers, floats, booleans, strings, categories of strings and datetimes"
_ROW = "\0row"  # the file's row number, carried beside the compared columns


def family(series: pd.Series) -> str | None:
    """What a column of the file holds, as ``COMPARED`` names it (None: nothing the check compares)."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        categories = pd.Series(dtype.categories)
        return "string" if categories.empty or is_string_like(categories) else None
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "float"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if is_string_like(series):
        return "string"
    return None


@dataclass(frozen=True)
class Pairing:
    """A column of the file and the table's column of its name, and how they are compared."""

    column: str  # the file's name
    table_column: str
    dtype: str
    questdb_type: str
    kind: str


@dataclass(frozen=True)
class TimeScan:
    """What reading the file's timestamp column alone tells: its rows (in the range read) and where it first
    goes back in time, if it does."""

    rows: int
    rows_in_range: int
    disorder: tuple[int, int, int] | None  # (row, its timestamp, the row before's), in the column's unit


def scan_times(data: DataFrames, column: str, kind: str, start: int | None, end: int | None) -> TimeScan:
    rows = in_range = 0
    last = None
    disorder = None
    for piece in data.column_pieces(column):
        times = canonical(piece, kind)
        if not len(times):
            continue
        if disorder is None:
            joined = times if last is None else np.concatenate(([last], times))
            back = np.flatnonzero(joined[1:] < joined[:-1])
            if len(back):
                at = int(back[0])
                disorder = (rows + at + (last is None), int(joined[at + 1]), int(joined[at]))
        keep = np.ones(len(times), dtype=bool)
        if start is not None:
            keep &= times >= start
        if end is not None:
            keep &= times < end
        in_range += int(np.count_nonzero(keep))
        rows += len(times)
        last = times[-1]
    return TimeScan(rows, in_range, disorder)


class FileCheck(OrderedCheck):
    """The answer against the user's file: its pieces in order (``sort``: False), or the whole file sorted by
    its timestamp (``sort``: True). ``notes``: what the run says about the comparison before the read."""

    reference = "the file"

    def __init__(self, data: DataFrames, pairings: list[Pairing], chunk_rows: int, sort: bool,
                 start: int | None, end: int | None, notes: list[str]):
        super().__init__({pairing.table_column: pairing.kind for pairing in pairings}, None, 0, start, end,
                         carried=(_ROW,))
        self.prefix = f"check against {data.name}"
        self.data = data
        self.pairings = pairings
        self.sort = sort
        self.notes = notes
        self._frames: Iterator[pd.DataFrame] = data.frames(chunk_rows)
        self._rows_read = 0

    def _piece(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        piece = {pairing.table_column: canonical(frame[pairing.column], pairing.kind) for pairing in self.pairings}
        piece[_ROW] = np.arange(self._rows_read, self._rows_read + len(frame), dtype=np.int64)
        self._rows_read += len(frame)
        return piece

    def _next_reference(self) -> dict[str, np.ndarray] | None:
        if not self.sort:
            frame = next(self._frames, None)
            return None if frame is None else self._piece(frame)
        pieces = [self._piece(frame) for frame in self._frames]
        if not pieces:
            return None
        whole = {name: np.concatenate([piece[name] for piece in pieces]) for name in pieces[0]}
        del pieces
        order = np.argsort(whole[self.names[0]], kind="stable")
        return {name: values[order] for name, values in whole.items()}

    def _difference(self, actual: dict, reference: dict, row: int, reference_row: int, name: str) -> str:
        kind = self.kinds[name]
        return (f"{self.prefix}: row {self.checked + row} of the table ({self._where(actual, row)}; row "
                f"{int(reference[_ROW][reference_row])} of the file), column {name}: the file has "
                f"{shown(kind, reference[name][reference_row])}, the table {shown(kind, actual[name][row])}")


def _in_unit(ns: int | None, kind: str) -> int | None:
    """A bound of the range read (nanoseconds; the read's queries name it at microseconds) in ``kind``'s unit."""
    if ns is None:
        return None
    return ns // 1000 if kind == TIMESTAMP else ns // 1000 * 1000


def _designated(data: DataFrames, head: pd.DataFrame, timestamp: str, table_names: set[str], prefix: str) -> str:
    """The file's column that is the table's designated timestamp: the one of its name, else the file's one
    timestamp column that is no other column of the table."""
    for name in head.columns:
        if str(name).lower() == timestamp.lower():
            return str(name)
    candidates = [name for name in data.timestamp_columns() if name.lower() not in table_names]
    if len(candidates) == 1:
        return candidates[0]
    raise CheckFailed(f"{prefix}: the table's designated timestamp {timestamp} is no column of the file, and the file "
                      f"has {len(candidates) or 'no'} other timestamp column{'s' if len(candidates) != 1 else ''}"
                      f"{' (' + ', '.join(candidates) + ')' if candidates else ''} to be it")


def pair_columns(data: DataFrames, head: pd.DataFrame, slices: ReadSlices, protocol: ReadProtocol,
                 prefix: str) -> tuple[list[Pairing], list[str]]:
    """Each column of the file with the table's, the designated timestamp first, and the notes of the
    comparison (a TIMESTAMP_NS read at microseconds)."""
    if slices.timestamp is None:
        raise UsageError(f"--check-against: table {slices.table} has no designated timestamp: the check compares in "
                         f"its time order")
    table = {column.name.lower(): column for column in slices.columns}
    at = _designated(data, head, slices.timestamp, set(table), prefix)
    order = [at] + [str(name) for name in head.columns if str(name) != at]
    pairings, notes, coarse = [], [], []
    for name in order:
        column = table.pop(slices.timestamp.lower() if name == at else name.lower(), None)
        if column is None:
            raise CheckFailed(f"{prefix}: the table has no column {name} (the file has it)")
        series = head[name]
        dtype = str(series.dtype)
        found = family(series)
        if found is None:
            raise UsageError(f"--check-against: column {name} of {data.name} is {dtype}: the check compares "
                             f"{FAMILIES}")
        if name == at and found != "datetime":
            raise UsageError(f"--check-against: the file's column {name}, the table's designated timestamp, is "
                             f"{dtype}, not a datetime")
        server_kind = kind_of(column.questdb_type)
        if server_kind == OTHER:
            raise UsageError(f"--check-against: column {column.name} is {column.questdb_type} in table {slices.table}: "
                             f"the check compares LONG, DOUBLE, BOOLEAN, VARCHAR, SYMBOL, TIMESTAMP and TIMESTAMP_NS "
                             f"columns")
        kind = COMPARED.get((found, server_kind))
        if kind is None:
            raise CheckFailed(f"{prefix}: column {name} is {column.questdb_type} in the table; the file's is {dtype}, "
                              f"which the client never sends as {column.questdb_type}")
        if kind == TIMESTAMP_NS and protocol not in NANOSECOND_PROTOCOLS:
            kind = TIMESTAMP
            coarse.append(column.name)
        pairings.append(Pairing(name, column.name, dtype, column.questdb_type, kind))
    if table:
        extra = next(iter(table.values()))
        raise CheckFailed(f"{prefix}: the table has a column {extra.name} ({extra.questdb_type}) the file has not")
    if coarse:
        notes.append(f"Check: TIMESTAMP_NS column{'s' if len(coarse) > 1 else ''} {', '.join(coarse)} "
                     f"{'arrive' if len(coarse) > 1 else 'arrives'} over {protocol} (PGWire) at microseconds: "
                     f"compared at microseconds, the file's nanoseconds truncated toward zero")
    return pairings, notes


def open_check(data: DataFrames, slices: ReadSlices, protocol: ReadProtocol, start_ns: int | None, end_ns: int | None,
               chunk_rows: int, sort_limit: int | None = None) -> FileCheck:
    """The comparison of the read ``slices`` with ``data``, its columns paired and its rows counted and scanned
    for their order before anything is read: a table of other columns or rows fails here (``CheckFailed``).
    ``sort_limit``: the most rows of a file not in time order that are sorted (default ``SORT_LIMIT_ROWS``)."""
    sort_limit = SORT_LIMIT_ROWS if sort_limit is None else sort_limit
    prefix = f"check against {data.name}"
    head = data.head()
    if head is None or head.empty:
        raise CheckFailed(f"{prefix}: the table holds {slices.expected_rows} rows, the file none")
    pairings, notes = pair_columns(data, head, slices, protocol, prefix)
    at = pairings[0]
    start, end = _in_unit(start_ns, at.kind), _in_unit(end_ns, at.kind)
    scan = scan_times(data, at.column, at.kind, start, end)
    if scan.rows_in_range != slices.expected_rows:
        where = "" if start is None and end is None else " in the range read"
        raise CheckFailed(f"{prefix}: the table holds {slices.expected_rows} rows{where}, the file {scan.rows_in_range}")
    named = at.column if at.column == at.table_column else f"{at.column}, the table's {at.table_column}"
    columns = f"{len(pairings)} columns, designated timestamp {named}"
    if scan.disorder is None:
        notes.insert(0, f"Check: against {data.name} ({scan.rows_in_range} rows, {columns}): in time order, "
                        f"compared as the table streams in")
    else:
        row, moment, before = scan.disorder
        went_back = f"row {row} ({shown(at.kind, moment)}) comes after row {row - 1} ({shown(at.kind, before)})"
        if scan.rows > sort_limit:
            raise UsageError(f"--check-against: {data.name} is not in time order ({went_back}) and has {scan.rows} "
                             f"rows, more than the {sort_limit} the check sorts in memory: sort the file by "
                             f"{at.column} first")
        notes.insert(0, f"Check: against {data.name} ({scan.rows_in_range} rows, {columns}): not in time order "
                        f"({went_back}), so read whole and sorted by {at.column} in memory (at most {sort_limit} "
                        f"rows), then compared as the table streams in")
    return FileCheck(data, pairings, chunk_rows, scan.disorder is not None, start, end, notes)
