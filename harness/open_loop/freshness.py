"""Freshness: how long after its intended time a chunk's rows are visible to a query.

The probe is a thread that asks the server what any reader would ask: ``count()`` of each table the run
writes (one statement, ``union all``), every ``interval`` seconds, over an HTTP connection of its own kept open. The chunks
sent (``harness.open_loop.schedule.SentChunk``) are kept in the order their sends ended, with each table's
running total; a chunk is visible once every table's count, less what the table held before the run, has
reached its total. QuestDB applies a table's WAL transactions in the order they were committed, so rows
become visible in that order; a send ends after its commit (HTTP) or its write (TCP), so the order kept is
the commits' order, but for two sends ending within a moment of each other on different connections.

A chunk's freshness is the time from its intended time to the answer of the first count that shows it: an
upper bound, at most one probe interval (and a count's round trip) above the moment the rows became
visible. What the probe costs the server is one ``count()`` per table per interval (a WAL table's count is
read from its metadata: no scan); the record states how many the run asked.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from harness.open_loop.schedule import SentChunk
from harness.questdb.http import QuestDBSql, checked_table_name
from harness.telemetry.latency import BoundedSeries, Latencies

# A probe's count that fails (the server paused, restarting) is asked again at the next interval; the reason
# of the last failure is kept for the record.
PROBE_TIMEOUT_SECONDS = 5.0
# While the last chunks become visible after the send, they are counted at least this often.
DRAIN_SECONDS = 0.01


class FreshnessProbe:
    """Counts the run's tables every ``interval`` seconds and records each sent chunk's freshness."""

    def __init__(self, questdb: QuestDBSql, tables: list[str], before: dict[str, int], interval: float,
                 clock: Callable[[], float] = time.perf_counter):
        # Its own connection, kept open: a new one for each count would cost the server more than the count.
        self.questdb = questdb.copy(timeout=PROBE_TIMEOUT_SECONDS, keep_alive=True)
        self.tables = list(tables)
        self.before = dict(before)
        self.interval = interval
        self.freshness = Latencies()
        # Each chunk's freshness by its intended time, in seconds since the schedule's start.
        self.series = BoundedSeries()
        self.queries = 0
        self.failures = 0
        self.last_error: str | None = None
        self.seconds = 0.0  # wall time the probe ran
        self._clock = clock
        self._sql = " union all ".join(f"select '{checked_table_name(table)}' t, count() n from "
                                       f"'{checked_table_name(table)}'" for table in self.tables)
        self._pending: deque[tuple[dict[str, int], float, float]] = deque()  # (running totals, intended, start)
        self._totals = {table: 0 for table in self.tables}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="freshness-probe", daemon=True)

    def sent(self, chunk: SentChunk) -> None:
        """A chunk the server has (called in the order sends end)."""
        with self._lock:
            for table, rows in chunk.rows.items():
                self._totals[table] = self._totals.get(table, 0) + rows
            self._pending.append((dict(self._totals), chunk.intended, chunk.start))

    @property
    def unresolved(self) -> int:
        """Chunks sent and not yet seen."""
        with self._lock:
            return len(self._pending)

    def start(self) -> None:
        self._started = self._clock()
        self._thread.start()

    def stop(self, drain_seconds: float = 0.0) -> None:
        """Stop probing, after up to ``drain_seconds`` more for the chunks sent and not yet seen (counted here
        every interval, at most every ``DRAIN_SECONDS``)."""
        self._stop.set()
        self._thread.join(timeout=PROBE_TIMEOUT_SECONDS + 1)
        deadline = self._clock() + drain_seconds
        while self.unresolved and self._clock() < deadline:
            self.probe()
            time.sleep(min(self.interval, DRAIN_SECONDS))
        self.seconds = self._clock() - self._started
        self.questdb.close()

    def probe(self) -> None:
        """One count of every table; the chunks it shows are resolved."""
        try:
            _, rows = self.questdb.query(self._sql)
        except Exception as exc:  # noqa: BLE001 (a failed count is the probe's to report, never the run's end)
            self.failures += 1
            self.last_error = str(exc)
            return
        finally:
            self.queries += 1
        seen = self._clock()
        visible = {str(table): int(count) - self.before.get(str(table), 0) for table, count in rows}
        with self._lock:
            while self._pending and all(visible.get(table, 0) >= total
                                        for table, total in self._pending[0][0].items()):
                _, intended, start = self._pending.popleft()
                self.freshness.record(seen - intended)
                self.series.add(intended - start, seen - intended)

    def _run(self) -> None:
        next_at = self._clock()
        while not self._stop.is_set():
            self.probe()
            next_at += self.interval
            wait = next_at - self._clock()
            if wait < 0:  # a slow count: the next one goes at once, and the schedule starts again from it
                next_at = self._clock()
                wait = 0
            self._stop.wait(wait)
