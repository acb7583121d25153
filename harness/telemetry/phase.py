"""One phase of a run: its live counters while it runs, and its figures once it has ended.

``PhaseProgress`` is the one counter of a phase: the workers add to it, and the progress lines, the
Prometheus metrics and the results record all read it. ``PhaseRecord`` is what it becomes when the phase
ends (the results file stores it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

MIB = 1024 * 1024


class PhaseProgress:
    """Thread-safe running totals of one phase, per worker."""

    def __init__(self, phase: str, workers: int, on_flush: Callable[[int, float], None] | None = None,
                 first_chunk: int = 0):
        self.phase = phase
        # Every chunk numbered below this one is done (for a send: acknowledged by the server, or over TCP
        # at least flushed); chunks done out of order wait in _done_above until the gap closes.
        self.done_below = first_chunk
        self._done_above: set[int] = set()
        self.rows = 0
        self.bytes = 0
        self.worker_rows = [0] * workers
        self.worker_flushes = [0] * workers
        self.worker_bytes = [0] * workers
        self.table_rows: dict[str, int] = {}
        self.resent_chunks = 0
        self.outage_seconds = 0.0
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._on_flush = on_flush

    def add(self, worker: int, rows: int, nbytes: int, table_rows: dict[str, int] | None = None) -> None:
        """Count a finished chunk; ``table_rows`` splits its rows by table where it held several."""
        with self._lock:
            for table, count in (table_rows or {}).items():
                self.table_rows[table] = self.table_rows.get(table, 0) + count
            self.rows += rows
            self.bytes += nbytes
            self.worker_rows[worker] += rows
            self.worker_bytes[worker] += nbytes

    @property
    def workers(self) -> int:
        return len(self.worker_rows)

    def flushed(self, worker: int, seconds: float) -> None:
        with self._lock:
            self.worker_flushes[worker] += 1
        if self._on_flush is not None:
            self._on_flush(worker, seconds)

    def acknowledge(self, chunk: int) -> None:
        """Chunk number ``chunk`` of the data set is done."""
        with self._lock:
            self._done_above.add(chunk)
            while self.done_below in self._done_above:
                self._done_above.remove(self.done_below)
                self.done_below += 1

    def resent(self, worker: int) -> None:
        """A chunk is being sent again after a failed flush (exactly-once runs)."""
        with self._lock:
            self.resent_chunks += 1

    def waited(self, seconds: float) -> None:
        """Time a worker spent between a failed flush and the successful re-send."""
        with self._lock:
            self.outage_seconds += seconds

    def record(self, seconds: float, client_cpu_seconds: float | None = None) -> PhaseRecord:
        """The phase's figures as they stand (the per-worker split only where there was more than one)."""
        with self._lock:
            workers = ([WorkerTotals(rows, nbytes) for rows, nbytes in zip(self.worker_rows, self.worker_bytes)]
                       if len(self.worker_rows) > 1 else [])
            tables = dict(self.table_rows) if len(self.table_rows) > 1 else {}
            return PhaseRecord(self.rows, self.bytes, seconds, client_cpu_seconds, sum(self.worker_flushes), workers,
                               tables, self.resent_chunks, round(self.outage_seconds, 3), time.time())


@dataclass
class WorkerTotals:
    """What one worker thread handled in a phase."""

    rows: int
    bytes: int


@dataclass
class PhaseRecord:
    """One timed phase: rows and bytes (of ILP) handled in seconds of wall-clock time.

    ``client_cpu_seconds`` is the whole client process's CPU time over the phase: against ``seconds``
    it says how many cores the client kept busy (about the workers' count when the client is the
    bottleneck, far less when it waits for the server). ``workers`` splits rows and bytes by thread."""

    rows: int
    bytes: int
    seconds: float
    client_cpu_seconds: float | None = None
    flushes: int = 0
    workers: list[WorkerTotals] = field(default_factory=list)
    tables: dict[str, int] = field(default_factory=dict)  # rows per table, where there were several
    resent_chunks: int = 0  # exactly-once runs: chunks sent again after a failed flush
    outage_seconds: float = 0.0  # summed over workers: from a failed flush to its successful re-send
    # When it ended, in seconds since 1970 (wall clock): where several clients' phases are merged, their
    # union spans from the earliest start (ended_at - seconds) to the latest end.
    ended_at: float | None = None

    @property
    def started_at(self) -> float | None:
        """When it started, in seconds since 1970 (from its end and its time)."""
        return self.ended_at - self.seconds if self.ended_at is not None else None

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def rows_by_table(self, tables: list[str]) -> dict[str, int]:
        """Rows per table of the run's ``tables`` (every row in the one table where there is one)."""
        if len(tables) == 1 and not self.tables:
            return {tables[0]: self.rows}
        return {table: self.tables.get(table, 0) for table in tables}

    @property
    def mib_per_second(self) -> float:
        return self.bytes / MIB / self.seconds if self.seconds > 0 else 0.0

    @property
    def client_cpu_cores(self) -> float | None:
        if self.client_cpu_seconds is None:
            return None
        return self.client_cpu_seconds / self.seconds if self.seconds > 0 else 0.0


