"""``--check``: every value of a read equal to the data set that filled the table, compared as the frames
arrive, in bounded memory; and the comparison itself (``OrderedCheck``), which ``--check-against``
(``harness.read.check_against``) shares. A frame is pandas (NumPy- or Arrow-backed), a pyarrow Table or a
Polars DataFrame: each column is brought to one canonical form per kind (``canonical``), whatever held it.

The data set is regenerated chunk by chunk (the same frames ``bench`` sends, from the same flags) and only
the read table's rows kept. Both sides are cut at the same timestamps: once the answer has reached time
``t``, every row before ``t`` is complete on its side, and the data set's too once it has generated rows
``LATE_INTERVALS`` intervals past ``t`` (TSBS's iot delays a few lines by a few intervals; cpu-only and
devops come in time order). Those rows are compared, then dropped. Values compare exactly: doubles bit
for bit (NULL: NaN on both sides; QuestDB reads a non-finite double as NULL over PGWire and CSV, so
infinities count as NULL too), integers, booleans, strings (NULL: None), timestamps at the precision the
column keeps (microseconds, or nanoseconds for TIMESTAMP_NS), truncated toward zero as QuestDB truncates.
Rows of one timestamp may come back in another order than they were sent (an out-of-order merge): where
a timestamp's rows differ in order only, they are compared sorted. The first difference raises a
``RunError`` naming the row of the answer (counted from 0), its timestamp and series, and the column.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import RunError
from harness.read.frames import BOOLEAN, DOUBLE, LONG, STRING, TIMESTAMP, TIMESTAMP_NS, kind_of
from harness.tsbs.schema import TableSchema

LATE_INTERVALS = 16
# The answer's rows gathered before a comparison: each comparison copies the reference's rows held ahead, so
# small frames are compared in batches.
COMPARE_ROWS = 50_000


class CheckFailed(RunError):
    """A value of the answer differs from the reference's (or a row is missing or extra)."""

_NULL_LONG = np.iinfo(np.int64).min  # also numpy's NaT
_NULL_BOOLEAN = -1
_END = np.iinfo(np.int64).max
# A timestamp kind's unit, in nanoseconds.
_UNIT_NS = {TIMESTAMP: 1_000, TIMESTAMP_NS: 1}
_DATETIME_UNIT_NS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def epoch(series: pd.Series, kind: str) -> np.ndarray:
    """A datetime column (naive: UTC; zone-aware: its UTC instants) as int64 since 1970 in the unit of ``kind``
    (TIMESTAMP: microseconds, TIMESTAMP_NS: nanoseconds), a finer unit truncated toward zero as QuestDB
    truncates (-1 ns is 0 us); NaT: ``_NULL_LONG``."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        series = series.dt.tz_convert(None)
    values = series.to_numpy()
    if values.dtype.kind != "M":
        values = pd.to_datetime(series, utc=True).dt.tz_convert(None).to_numpy()
    return _in_unit(values.view(np.int64), _DATETIME_UNIT_NS[np.datetime_data(values.dtype)[0]], kind)


def _in_unit(raw: np.ndarray, have: int, kind: str) -> np.ndarray:
    """Int64 instants of ``have`` nanoseconds each (``_NULL_LONG``: NULL) in the unit of ``kind``, a finer unit
    truncated toward zero."""
    want = _UNIT_NS[kind]
    null = raw == _NULL_LONG
    if have >= want:
        result = raw * (have // want)
    else:
        step = want // have
        result = raw // step
        result += (raw < 0) & (raw % step != 0)  # floor division rounds down; QuestDB toward zero
    if null.any():
        result = np.where(null, _NULL_LONG, result)
    return result


def canonical(series, kind: str) -> np.ndarray:
    """A column's values as the comparison holds them: one numpy array per kind (``_equal``). The column is a pandas
    Series, a pyarrow (chunked) array or a Polars Series; an Arrow-backed one is read through Arrow
    (``_arrow_canonical``), to the same values."""
    if not isinstance(series, pd.Series):
        return _arrow_canonical(series if isinstance(series, (pa.Array, pa.ChunkedArray)) else series.to_arrow(), kind)
    if isinstance(series.dtype, pd.ArrowDtype):
        return _arrow_canonical(pa.array(series.array), kind)
    if kind == DOUBLE:
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        infinite = np.isinf(values)
        if infinite.any():
            values = np.where(infinite, np.nan, values)
        return values
    if kind == LONG:
        return series.astype("Int64").to_numpy(dtype=np.int64, na_value=_NULL_LONG)
    if kind == BOOLEAN:
        return series.astype("boolean").to_numpy(dtype=np.int8, na_value=_NULL_BOOLEAN)
    if kind in _UNIT_NS:
        return epoch(series, kind)
    return series.to_numpy(dtype=object, na_value=None)


def _arrow_canonical(values: pa.Array | pa.ChunkedArray, kind: str) -> np.ndarray:
    """``canonical`` of an Arrow column: NULL as each kind holds it (NaN, ``_NULL_LONG``, ``_NULL_BOOLEAN``,
    None), a dictionary's values, timestamps as instants of their unit (a zone changes no instant)."""
    if kind == DOUBLE:
        numbers = pc.cast(values, pa.float64()).fill_null(np.nan).to_numpy()
        infinite = np.isinf(numbers)
        return np.where(infinite, np.nan, numbers) if infinite.any() else numbers
    if kind == LONG:
        return pc.cast(values, pa.int64()).fill_null(_NULL_LONG).to_numpy()
    if kind == BOOLEAN:
        return pc.cast(values, pa.int8()).fill_null(_NULL_BOOLEAN).to_numpy()
    if kind in _UNIT_NS and pa.types.is_timestamp(values.type):
        raw = pc.cast(values, pa.int64()).fill_null(_NULL_LONG).to_numpy()
        return _in_unit(raw, _DATETIME_UNIT_NS[values.type.unit], kind)
    if kind in _UNIT_NS:  # text or dates: as pandas reads them
        return epoch(values.to_pandas(), kind)
    if pa.types.is_dictionary(values.type):
        values = pc.cast(values, values.type.value_type)
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)


def equal(kind: str, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    if kind == DOUBLE:
        return (left.view(np.int64) == right.view(np.int64)) | (np.isnan(left) & np.isnan(right))
    return left == right


def shown(kind: str, value) -> str:
    """A canonical value as a message names it."""
    if (value is None or (kind == DOUBLE and np.isnan(value)) or (kind in (LONG, *_UNIT_NS) and value == _NULL_LONG)
            or (kind == BOOLEAN and value == _NULL_BOOLEAN)):
        return "NULL"
    if kind in _UNIT_NS:
        return str(pd.Timestamp(int(value), unit="us" if kind == TIMESTAMP else "ns", tz="UTC"))
    if kind == BOOLEAN:
        return repr(bool(value))
    return repr(float(value)) if kind == DOUBLE else repr(value.item() if hasattr(value, "item") else value)


class _Rows:
    """Rows of one side not compared yet: each column as a canonical array, timestamps first."""

    def __init__(self, names: list[str]):
        self.names = names
        self.columns: dict[str, np.ndarray] = {name: np.empty(0, dtype=object) for name in names}
        self.pieces: list[dict[str, np.ndarray]] = []

    def add(self, piece: dict[str, np.ndarray]) -> None:
        if len(piece[self.names[0]]):
            self.pieces.append(piece)

    def gather(self, sort: bool) -> None:
        if not self.pieces:
            return
        pieces = [self.columns, *self.pieces] if len(self.columns[self.names[0]]) else self.pieces
        self.columns = {name: np.concatenate([piece[name] for piece in pieces]) for name in self.names}
        self.pieces = []
        times = self.columns[self.names[0]]
        if sort and len(times) > 1 and np.any(times[1:] < times[:-1]):
            order = np.argsort(times, kind="stable")
            self.columns = {name: values[order] for name, values in self.columns.items()}

    def split(self, count: int) -> dict[str, np.ndarray]:
        head = {name: values[:count] for name, values in self.columns.items()}
        self.columns = {name: values[count:] for name, values in self.columns.items()}
        return head


class OrderedCheck:
    """The answer (in time order) compared with a reference that comes in pieces (``_next_reference``, which a
    subclass gives), both cut at timestamps: feed it the read's frames in order (``feed``), then ``finish``;
    ``checked`` rows compared so far. ``kinds``: each compared column's kind (``canonical``), the time column
    first; ``series``: the column that tells a timestamp's rows apart, if one does; ``late``: how far (in the
    time column's unit) the reference may bring a row after a later one; ``start``/``end``: the range read,
    in that unit (rows of the reference outside it are dropped); ``carried``: columns of the reference's
    pieces kept beside the compared ones, for messages."""

    prefix = "check"  # what every message starts with
    reference = "the data set"  # what messages call the reference side

    def __init__(self, kinds: dict[str, str], series: str | None = None, late: int = 0,
                 start: int | None = None, end: int | None = None, carried: tuple[str, ...] = ()):
        self.kinds = kinds
        self.names = list(kinds)  # the timestamp first
        self.series = series
        self._late = late
        self._range = (start, end)
        self._actual, self._reference = _Rows(self.names), _Rows(self.names + list(carried))
        self._reference_until = None  # the newest timestamp of the reference so far
        self._exhausted = False
        self._compared_below = None  # every row before this timestamp is compared
        self._fed = 0  # rows fed since the last comparison
        self.checked = 0

    def _next_reference(self) -> dict[str, np.ndarray] | None:
        """The reference's next piece (canonical columns, ``carried`` too), None at its end."""
        raise NotImplementedError

    def _late_row(self, moment: int) -> str:
        return (f"{self.prefix}: {self.reference} has a row at {shown(self.kinds[self.names[0]], moment)} after "
                f"that time was compared")

    def feed(self, frame) -> None:
        """Compare a frame of the answer (pandas, a pyarrow Table or a Polars DataFrame) as far as it allows."""
        if not len(frame):
            return
        present = set(frame.column_names if isinstance(frame, pa.Table) else frame.columns)
        missing = [name for name in self.names if name not in present]
        if missing:
            raise CheckFailed(f"{self.prefix}: the answer has no column {missing[0]} ({self.reference} has it)")
        piece = {name: canonical(frame[name], kind) for name, kind in self.kinds.items()}
        self._actual.add(piece)
        self._fed += len(frame)
        if self._fed >= COMPARE_ROWS:
            self._compare_below(int(piece[self.names[0]][-1]))
            self._fed = 0

    def finish(self) -> None:
        self._compare_below(_END)

    def _pull(self, below: int) -> None:
        """Take the reference's pieces until every row before ``below`` is in (or it ends)."""
        while not self._exhausted and (self._reference_until is None or self._reference_until < below + self._late
                                       or below == _END):
            piece = self._next_reference()
            if piece is None:
                self._exhausted = True
                break
            times = piece[self.names[0]]
            if not len(times):
                continue
            self._reference_until = max(self._reference_until or _NULL_LONG, int(times.max()))
            start, end = self._range
            keep = np.ones(len(times), dtype=bool)
            if start is not None:
                keep &= times >= start
            if end is not None:
                keep &= times < end
            if not keep.all():
                piece = {name: values[keep] for name, values in piece.items()}
                times = piece[self.names[0]]
                if not len(times):
                    continue
            if self._compared_below is not None and times.min() < self._compared_below:
                raise CheckFailed(self._late_row(int(times.min())))
            self._reference.add(piece)

    def _compare_below(self, below: int) -> None:
        self._pull(below)
        self._actual.gather(sort=False)
        self._reference.gather(sort=True)
        time_name = self.names[0]
        actual_count = int(np.searchsorted(self._actual.columns[time_name], below, "left"))
        reference_count = int(np.searchsorted(self._reference.columns[time_name], below, "left"))
        self._compare(self._actual.split(actual_count), self._reference.split(reference_count))
        self._compared_below = below
        self.checked += actual_count

    def _compare(self, actual: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> None:
        time_name = self.names[0]
        times, reference_times = actual[time_name], reference[time_name]
        common = min(len(times), len(reference_times))
        differ = np.flatnonzero(times[:common] != reference_times[:common])
        if len(differ) or len(times) != len(reference_times):
            self._count_mismatch(times, reference_times, int(differ[0]) if len(differ) else common)
        unequal = np.zeros(len(times), dtype=bool)
        for name in self.names[1:]:
            unequal |= ~equal(self.kinds[name], actual[name], reference[name])
        if not unequal.any():
            return
        # Rows of one timestamp that differ: the same rows in another order, or a real difference.
        for moment in np.unique(times[unequal]):
            lo, hi = np.searchsorted(times, moment, "left"), np.searchsorted(times, moment, "right")
            self._compare_sorted(actual, reference, int(lo), int(hi))

    def _compare_sorted(self, actual: dict, reference: dict, lo: int, hi: int) -> None:
        def order(side: dict) -> np.ndarray:
            if self.series is not None:
                series = side[self.series][lo:hi]
                if None not in series and len(set(series)) == len(series):  # a timestamp's rows, one per series
                    return lo + np.argsort(series, kind="stable")
            keys = [np.array([repr(value) for value in side[name][lo:hi]], dtype=object) for name in self.names[1:]]
            return lo + np.lexsort(tuple(reversed(keys)))

        mine, theirs = order(actual), order(reference)
        for name in self.names[1:]:
            kind = self.kinds[name]
            unequal = np.flatnonzero(~equal(kind, actual[name][mine], reference[name][theirs]))
            if len(unequal):
                raise CheckFailed(self._difference(actual, reference, int(mine[unequal[0]]),
                                                   int(theirs[unequal[0]]), name))

    def _difference(self, actual: dict, reference: dict, row: int, reference_row: int, name: str) -> str:
        """The message of a value that differs: the answer's ``row``, the reference's ``reference_row``."""
        kind = self.kinds[name]
        return (f"{self.prefix}: row {self.checked + row} ({self._where(actual, row)}), column {name}: the table has "
                f"{shown(kind, actual[name][row])}, {self.reference} {shown(kind, reference[name][reference_row])}")

    def _where(self, side: dict, row: int) -> str:
        moment = shown(self.kinds[self.names[0]], side[self.names[0]][row])
        return moment if self.series is None else f"{moment}, {self.series} {shown(STRING, side[self.series][row])}"

    def _count_mismatch(self, times: np.ndarray, reference_times: np.ndarray, position: int) -> None:
        time_kind = self.kinds[self.names[0]]
        if position >= len(times):
            raise CheckFailed(f"{self.prefix}: the answer ends after {self.checked + len(times)} rows; "
                              f"{self.reference} has more, from {shown(time_kind, reference_times[position])}")
        moment = times[position] if position >= len(reference_times) else min(times[position],
                                                                               reference_times[position])
        have = int(np.count_nonzero(times == moment))
        want = int(np.count_nonzero(reference_times == moment))
        raise CheckFailed(f"{self.prefix}: row {self.checked + position} ({shown(time_kind, moment)}): the table has "
                          f"{have} rows at this timestamp, {self.reference} {want}")


class DataSetCheck(OrderedCheck):
    """``--check``: the answer against the TSBS data set regenerated as the comparison asks for it."""

    def __init__(self, expected: Iterator[pd.DataFrame], schema: TableSchema, interval_ns: int,
                 start_ns: int | None = None, end_ns: int | None = None):
        kinds = {schema.timestamp: TIMESTAMP} | {name: kind_of(sql_type) for name, sql_type in schema.columns}
        super().__init__(kinds, schema.series_tags[0] if schema.series_tags else schema.tags[0],
                         LATE_INTERVALS * max(interval_ns // 1000, 1),
                         None if start_ns is None else start_ns // 1000, None if end_ns is None else end_ns // 1000)
        self._expected = expected

    def _next_reference(self) -> dict[str, np.ndarray] | None:
        frame = next(self._expected, None)
        if frame is None:
            return None
        return {name: canonical(frame[name], kind) for name, kind in self.kinds.items()}

    def _late_row(self, moment: int) -> str:
        return (f"{self.prefix}: the data set has a row at {shown(TIMESTAMP, moment)} generated more than "
                f"{LATE_INTERVALS} intervals late, after that time was compared")
