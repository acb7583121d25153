"""``--check``: every value of a read equal to the data set that filled the table, compared as the frames
arrive, in bounded memory.

The data set is regenerated chunk by chunk (the same frames ``bench`` sends, from the same flags) and only
the read table's rows kept. Both sides are cut at the same timestamps: once the answer has reached time
``t``, every row before ``t`` is complete on its side, and the data set's too once it has generated rows
``LATE_INTERVALS`` intervals past ``t`` (TSBS's iot delays a few lines by a few intervals; cpu-only and
devops come in time order). Those rows are compared, then dropped. Values compare exactly: doubles bit
for bit (NULL: NaN on both sides), integers, strings (NULL: None), timestamps at QuestDB's microseconds.
Rows of one timestamp may come back in another order than they were sent (an out-of-order merge): where
a timestamp's rows differ in order only, they are compared sorted. The first difference raises a
``RunError`` naming the row of the answer (counted from 0), its timestamp and series, and the column.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from harness.errors import RunError
from harness.read.frames import DOUBLE, LONG, STRING, TIMESTAMP, kind_of
from harness.tsbs.schema import TableSchema

LATE_INTERVALS = 16
# The answer's rows gathered before a comparison: each comparison copies the data set's rows held ahead, so
# small frames are compared in batches.
COMPARE_ROWS = 50_000


class CheckFailed(RunError):
    """A value of the answer differs from the data set's (or a row is missing or extra)."""

_NULL_LONG = np.iinfo(np.int64).min
_END = np.iinfo(np.int64).max


def _as_us(series: pd.Series) -> np.ndarray:
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        series = series.dt.tz_convert(None)
    return series.dt.as_unit("us").to_numpy().view(np.int64)


def _canonical(series: pd.Series, kind: str) -> np.ndarray:
    if kind == DOUBLE:
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    if kind == LONG:
        return series.astype("Int64").to_numpy(dtype=np.int64, na_value=_NULL_LONG)
    if kind == TIMESTAMP:
        return _as_us(series)
    return series.to_numpy(dtype=object, na_value=None)


def _equal(kind: str, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    if kind == DOUBLE:
        return (left.view(np.int64) == right.view(np.int64)) | (np.isnan(left) & np.isnan(right))
    return left == right


def _shown(kind: str, value) -> str:
    if value is None or (kind == DOUBLE and np.isnan(value)) or (kind == LONG and value == _NULL_LONG):
        return "NULL"
    if kind == TIMESTAMP:
        return str(pd.Timestamp(int(value), unit="us", tz="UTC"))
    return repr(float(value)) if kind == DOUBLE else repr(value.item() if hasattr(value, "item") else value)


class _Rows:
    """Rows of one side not compared yet: each compared column as a canonical array, timestamps first."""

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


class DataSetCheck:
    """Feed it the read's frames in order (``feed``), then ``finish``; ``checked`` rows compared so far."""

    def __init__(self, expected: Iterator[pd.DataFrame], schema: TableSchema, interval_ns: int,
                 start_ns: int | None = None, end_ns: int | None = None):
        self.kinds = {schema.timestamp: TIMESTAMP} | {name: kind_of(sql_type) for name, sql_type in schema.columns}
        self.names = list(self.kinds)  # the timestamp first
        self.series = schema.series_tags[0] if schema.series_tags else schema.tags[0]
        self._expected = expected
        self._late_us = LATE_INTERVALS * max(interval_ns // 1000, 1)
        self._range_us = (None if start_ns is None else start_ns // 1000, None if end_ns is None else end_ns // 1000)
        self._actual, self._reference = _Rows(self.names), _Rows(self.names)
        self._reference_until = None  # the newest timestamp generated so far
        self._exhausted = False
        self._compared_below = None  # every row before this timestamp is compared
        self._fed = 0  # rows fed since the last comparison
        self.checked = 0

    def feed(self, frame: pd.DataFrame) -> None:
        if frame.empty:
            return
        missing = [name for name in self.names if name not in frame.columns]
        if missing:
            raise CheckFailed(f"check: the answer has no column {missing[0]} (the data set's table has it)")
        piece = {name: _canonical(frame[name], kind) for name, kind in self.kinds.items()}
        self._actual.add(piece)
        self._fed += len(frame)
        if self._fed >= COMPARE_ROWS:
            self._compare_below(int(piece[self.names[0]][-1]))
            self._fed = 0

    def finish(self) -> None:
        self._compare_below(_END)

    def _pull(self, below: int) -> None:
        """Generate the data set until every row before ``below`` is in (or it ends)."""
        while not self._exhausted and (self._reference_until is None or self._reference_until < below + self._late_us
                                       or below == _END):
            frame = next(self._expected, None)
            if frame is None:
                self._exhausted = True
                break
            piece = {name: _canonical(frame[name], kind) for name, kind in self.kinds.items()}
            times = piece[self.names[0]]
            if not len(times):
                continue
            self._reference_until = max(self._reference_until or 0, int(times.max()))
            start, end = self._range_us
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
                raise CheckFailed(f"check: the data set has a row at {_shown(TIMESTAMP, times.min())} generated more "
                               f"than {LATE_INTERVALS} intervals late, after that time was compared")
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
            unequal |= ~_equal(self.kinds[name], actual[name], reference[name])
        if not unequal.any():
            return
        # Rows of one timestamp that differ: the same rows in another order, or a real difference.
        for moment in np.unique(times[unequal]):
            lo, hi = np.searchsorted(times, moment, "left"), np.searchsorted(times, moment, "right")
            self._compare_sorted(actual, reference, int(lo), int(hi))

    def _compare_sorted(self, actual: dict, reference: dict, lo: int, hi: int) -> None:
        def order(side: dict) -> np.ndarray:
            series = side[self.series][lo:hi]
            if None not in series and len(set(series)) == len(series):  # a timestamp's rows, one per series
                return lo + np.argsort(series, kind="stable")
            keys = [np.array([str(value) for value in side[name][lo:hi]], dtype=object) for name in self.names[1:]]
            return lo + np.lexsort(tuple(reversed(keys)))

        mine, theirs = order(actual), order(reference)
        for name in self.names[1:]:
            kind = self.kinds[name]
            unequal = np.flatnonzero(~_equal(kind, actual[name][mine], reference[name][theirs]))
            if len(unequal):
                row = int(mine[unequal[0]])
                raise CheckFailed(f"check: row {self.checked + row} ({self._where(actual, row)}), column {name}: the "
                               f"table has {_shown(kind, actual[name][row])}, the data set "
                               f"{_shown(kind, reference[name][theirs[unequal[0]]])}")

    def _where(self, side: dict, row: int) -> str:
        return f"{_shown(TIMESTAMP, side[self.names[0]][row])}, {self.series} {_shown(STRING, side[self.series][row])}"

    def _count_mismatch(self, times: np.ndarray, reference_times: np.ndarray, position: int) -> None:
        if position >= len(times):
            raise CheckFailed(f"check: the answer ends after {self.checked + len(times)} rows; the data set has more, "
                           f"from {_shown(TIMESTAMP, reference_times[position])}")
        moment = times[position] if position >= len(reference_times) else min(times[position],
                                                                               reference_times[position])
        have = int(np.count_nonzero(times == moment))
        want = int(np.count_nonzero(reference_times == moment))
        raise CheckFailed(f"check: row {self.checked + position} ({_shown(TIMESTAMP, moment)}): the table has {have} "
                       f"rows at this timestamp, the data set {want}")

