"""The open loop's schedule: chunk ``n`` of a send is due at a fixed *intended* time, ``n`` chunk intervals
(``chunk_rows / rate`` seconds) after the start, whatever happened to the chunks before it.

A worker waits for its chunk's time; a chunk whose time has passed (its worker was busy, the server stalled)
goes out at once, late. The schedule ends when its last chunk's interval does (``--duration``, or the data
set's end when that comes first): from then on no chunk starts, those left are never sent (``unsent_rows``),
and the chunks in flight have ``grace`` seconds to finish, as k6's ``gracefulStop`` gives its iterations.
Every latency counts from the intended time (``Latencies``), so a stall shows in the chunks it delayed
instead of hiding behind them (coordinated omission). A chunk the source had not made by its time (the
generator or the file's reader could not keep up) is the client's doing, not the server's: how far behind the
source was is ``source_behind``, and that chunk's latencies count from when it was at hand. The schedule also
keeps what the run is behind (the backlog: rows of chunks due by now that have not gone out) and, for each chunk sent, its
intended time and rows per table, in the order the sends ended, for the freshness probe
(``harness.open_loop.freshness``). It is the send phase's schedule (``harness.ingest.send_schedule``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.telemetry.latency import BoundedSeries, Latencies

# How often the backlog is sampled into the record (and at most how many samples it keeps, halving).
BACKLOG_SAMPLE_SECONDS = 0.25
MAX_BACKLOG_SAMPLES = 2000
# A sleep ends this long before the intended time, and the rest is waited out spinning on the clock:
# sleeping to the exact time overshoots by the scheduler's tick (~0.1-1 ms here; more under load).
SPIN_SECONDS = 0.0005


@dataclass
class SentChunk:
    """A chunk the server has (HTTP: acknowledged; TCP: written): its intended time and rows per table."""

    number: int
    intended: float
    rows: dict[str, int]
    start: float  # the schedule's start, which the chunk's series times count from


@dataclass
class RateSchedule:
    """The schedule of one rate: ``rate`` rows per second in chunks of ``chunk_rows`` (``perf_counter``
    times). ``acknowledged``: whether a finished send means the server took the rows (ILP over HTTP)."""

    rate: float
    chunk_rows: int
    total_rows: int
    first_chunk: int = 0
    grace: float = 10.0  # seconds the chunks in flight at the schedule's end have to finish
    acknowledged: bool = False
    on_sent: Callable[[SentChunk], None] | None = None
    start: float | None = None
    schedule_delay: Latencies = field(default_factory=Latencies)  # from intended to the send's start
    ack_latency: Latencies = field(default_factory=Latencies)  # from intended to the send's end
    # From the send's start to its end: what a closed-loop tool reports, blind to the wait before the send.
    ack_from_send: Latencies = field(default_factory=Latencies)
    # How far after its intended time a chunk the worker waited for came from the source (those late only).
    source_behind: Latencies = field(default_factory=Latencies)
    late_chunks: int = 0
    started_chunks: int = 0
    sent_rows: int = 0
    sent_chunks: int = 0
    last_sent: float | None = None
    last_started: float | None = None
    backlog: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, rows behind)
    # Each chunk's acknowledgement latency by its intended time (seconds since the start), bounded.
    ack_series: BoundedSeries = field(default_factory=BoundedSeries)
    ack_from_send_series: BoundedSeries = field(default_factory=BoundedSeries)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _next_sample: float = 0.0
    _sample_every: float = BACKLOG_SAMPLE_SECONDS

    @property
    def interval(self) -> float:
        """Seconds between two chunks' intended times."""
        return self.chunk_rows / self.rate

    def begin(self) -> None:
        """Chunk ``first_chunk`` is due now."""
        self.start = time.perf_counter()
        self._next_sample = 0.0

    def intended(self, number: int) -> float:
        return self.start + (number - self.first_chunk) * self.interval

    @property
    def end(self) -> float:
        """When the schedule ends: its last chunk's interval is over (``perf_counter`` time)."""
        return self.start + math.ceil(self.total_rows / self.chunk_rows) * self.interval

    def ended(self, now: float) -> bool:
        """Whether no chunk may start at ``now``."""
        return self.start is not None and now >= self.end

    def past_grace(self, now: float) -> bool:
        """Whether the chunks still in flight at ``now`` have had their grace."""
        return self.start is not None and now >= self.end + self.grace

    def grace_left(self, now: float) -> float:
        """Seconds from ``now`` until the grace is over (none when the schedule never began)."""
        return 0.0 if self.start is None else max(0.0, self.end + self.grace - now)

    @property
    def unsent_rows(self) -> int:
        """Rows of the schedule that never went out (their chunk did not start before its end, or never
        finished)."""
        return self.total_rows - self.sent_rows

    def wait(self, number: int, stop: threading.Event, waited: tuple[float, float] | None = None) -> float | None:
        """Until chunk ``number`` is due (at once when it is late, or ``stop`` is set); returns its intended
        time, or None when the schedule has ended: the chunk is not to start. ``waited``: from when to when the
        worker waited for the chunk from the source; what of that wait fell after the intended time is the
        source's lateness (``source_behind``), and the time returned moves on by as much."""
        intended = self.intended(number)
        if waited is not None and (behind := waited[1] - max(intended, waited[0])) > 0:
            self.source_behind.record(behind)
            intended += behind
        while True:
            now = time.perf_counter()
            left = intended - now
            if left <= 0 or stop.is_set():
                if self.ended(now):
                    return None
                with self._lock:
                    self.started_chunks += 1
                return intended
            if left > SPIN_SECONDS:
                stop.wait(left - SPIN_SECONDS)

    def sent(self, number: int, intended: float, started: float, ended: float, rows: dict[str, int]) -> None:
        """Chunk ``number`` went out at ``started`` and its send ended at ``ended``."""
        self.schedule_delay.record(started - intended)
        if self.acknowledged:
            self.ack_latency.record(ended - intended)
            self.ack_series.add(intended - self.start, ended - intended)
            self.ack_from_send.record(ended - started)
            self.ack_from_send_series.add(intended - self.start, ended - started)
        with self._lock:
            # Late: it started a chunk interval or more after its time (its worker was still busy).
            self.late_chunks += started - intended >= self.interval
            self.sent_rows += sum(rows.values())
            self.sent_chunks += 1
            self.last_sent = max(self.last_sent or ended, ended)
            self.last_started = max(self.last_started or started, started)
            if self.on_sent is not None:
                self.on_sent(SentChunk(number, intended, rows, self.start))
        self.sample_backlog(ended)

    def due_chunks(self, now: float) -> int:
        """Chunks whose time has come by ``now``."""
        chunks = math.floor((now - self.start) / self.interval) + 1
        return min(max(chunks, 0), math.ceil(self.total_rows / self.chunk_rows))

    def behind(self, now: float) -> int:
        """The backlog at ``now``: rows of the chunks whose time has come and that have not gone out (as k6
        counts the iterations it could not start)."""
        with self._lock:
            started = self.started_chunks
        return max(self.due_chunks(now) - started, 0) * self.chunk_rows

    def sample_backlog(self, now: float) -> None:
        """Keep the backlog at ``now`` when a sample is due (every ``BACKLOG_SAMPLE_SECONDS``, coarser as the
        run grows long: at most ``MAX_BACKLOG_SAMPLES`` are kept)."""
        since = now - self.start
        with self._lock:
            if since < self._next_sample:
                return
            self._next_sample = since + self._sample_every
        behind = self.behind(now)
        with self._lock:
            self.backlog.append((round(since, 3), behind))
            if len(self.backlog) > MAX_BACKLOG_SAMPLES:
                self.backlog = self.backlog[::2]
                self._sample_every *= 2

    def achieved_rate(self) -> float | None:
        """The rate the chunks went out at: the rows over the longer of the scheduled time (every chunk's
        interval) and the time to the last chunk's start and its interval. A slow answer to the last chunk
        is its acknowledgement's latency, not a rate missed; a chunk that could not start on time is."""
        if not self.sent_rows or self.last_started is None:
            return None
        scheduled = math.ceil(self.total_rows / self.chunk_rows) * self.interval
        return self.sent_rows / max(scheduled, self.last_started - self.start + self.interval)
