"""Latency distributions: an HdrHistogram per figure (1 µs to an hour, 3 significant digits), recorded from
any thread, summarised as percentiles with their sample count and kept whole (the histogram's own
compressed encoding) so that a record can be merged or re-read later.

Every latency the open loop reports is measured from a chunk's *intended* time, not from when it really went
out: a stall delays the chunks behind it, and timing them from their real start would hide it (coordinated
omission, as HdrHistogram and wrk2 name it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

# Microseconds: 1 µs to an hour, 3 significant digits (0.1 % resolution).
LOWEST_US, HIGHEST_US, DIGITS = 1, 3_600_000_000, 3
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


@dataclass
class LatencySummary:
    """A distribution's figures in seconds; ``histogram`` is HdrHistogram's base64 encoding of the whole."""

    count: int
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    max: float | None = None
    histogram: str | None = None

    def figure(self, name: str) -> float | None:
        """``p50``, ``p90``, ``p99``, ``p999`` or ``max``."""
        return getattr(self, name)


class Latencies:
    """One figure's histogram; ``record`` is safe from every thread. ``observer``, where given, sees every
    sample too (the run's live Prometheus histogram)."""

    def __init__(self, observer: Callable[[float], None] | None = None) -> None:
        self.observer = observer
        # Imported here: only an open-loop run records latencies, and every command loads this module's types.
        from hdrh.histogram import HdrHistogram

        self._histogram = HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)
        self._lock = threading.Lock()

    def record(self, seconds: float) -> None:
        """One sample; below a microsecond counts as one, beyond an hour as an hour."""
        value = min(max(round(seconds * 1e6), LOWEST_US), HIGHEST_US)
        with self._lock:
            self._histogram.record_value(value)
        if self.observer is not None:
            self.observer(seconds)

    @property
    def count(self) -> int:
        with self._lock:
            return self._histogram.get_total_count()

    def summary(self) -> LatencySummary:
        with self._lock:
            histogram = self._histogram
            count = histogram.get_total_count()
            if not count:
                return LatencySummary(0)
            p50, p90, p99, p999 = (histogram.get_value_at_percentile(p) / 1e6 for p in PERCENTILES)
            return LatencySummary(count, p50, p90, p99, p999, histogram.get_max_value() / 1e6,
                                  histogram.encode().decode("ascii"))


def decoded(summary: LatencySummary) -> HdrHistogram | None:
    """The whole histogram of a recorded summary (None when it holds no sample)."""
    from hdrh.histogram import HdrHistogram

    return HdrHistogram.decode(summary.histogram.encode("ascii")) if summary.histogram else None


class BoundedSeries:
    """Points ``(seconds, value)`` kept at most ``limit`` at a time: when full, every other point goes and from
    then on only every other point is kept (a long run's series coarser, its memory the same)."""

    def __init__(self, limit: int = 2000):
        self.limit = limit
        self.points: list[list[float]] = []
        self._stride = 1
        self._seen = 0
        self._lock = threading.Lock()

    def add(self, seconds: float, value: float) -> None:
        with self._lock:
            self._seen += 1
            if (self._seen - 1) % self._stride:
                return
            self.points.append([round(seconds, 3), round(value, 6)])
            if len(self.points) > self.limit:
                self.points = self.points[::2]
                self._stride *= 2
