"""An open loop's send (``open_loop_send``): every rate of its plan in turn over consecutive chunks of the data
set (``RatesInTurn``): one rate, or a ramp's every step after a closed-loop step, or a search for the knee
(``--repeat`` times), each rate held as ``harness.open_loop.rate_hold`` holds it; then the knee named."""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from harness.ingest.phase_loop import ChunkStream
from harness.open_loop.freshness import FreshnessProbe
from harness.open_loop.knee import knee, search_knee
from harness.open_loop.made_ahead import ahead_of_schedule
from harness.open_loop.printing import rate_text, say_ramp
from harness.open_loop.prompt_threads import prompt_threads
from harness.open_loop.queries_beside import queries_beside
from harness.open_loop.rate_hold import RateHold
from harness.open_loop.schedule import RateSchedule
from harness.questdb.wal import wait_for_count
from harness.records.run_record import KneeSearch, OpenLoopFigures, RateStep

if TYPE_CHECKING:
    from harness.ingest.send_schedule import SendSchedule
    from harness.open_loop.inputs import OpenLoopPlan, SendContext
    from harness.open_loop.run_log import RunLog
    from harness.questdb.http import QuestDBSql
    from harness.telemetry.metrics import RunMetrics
    from harness.telemetry.phase import PhaseRecord
    from harness.tsbs.use_case import Chunk

    # Sends chunks as the send phase does: (chunks, rows, phase name, schedule or None) -> (phase, last flush).
    SendPhase = Callable[[Iterable, int, str, SendSchedule | None], tuple[PhaseRecord, float]]


def open_loop_send(plan: OpenLoopPlan, context: SendContext, chunks: Iterator[Chunk],
                   watch: Callable[[Iterable[Chunk]], Iterator[Chunk]], questdb: QuestDBSql | None, run: RunLog,
                   metrics: RunMetrics, send: SendPhase) -> tuple[dict[str, int], float]:
    """Every rate of ``plan`` in turn, over consecutive chunks of the data set (made ahead as it says, each passed
    through ``watch`` as it comes): one rate for its duration (or until the data set ends), or a ramp: a
    closed-loop step first (the rate this machine reaches when nothing waits), then each rate for its duration,
    and the knee named. Records the figures in ``run``; returns the rows sent per table and when the last flush
    ended."""
    figures = run.record.open_loop = OpenLoopFigures([], slo_seconds=plan.slo_seconds if plan.ramp else None)
    with ahead_of_schedule(chunks, plan.chunks_ahead, context.chunk_rows, context.threads, figures,
                           run.say) as made, prompt_threads(), \
            queries_beside(plan.queries, context.query_server, figures, run.say, metrics):
        rates = RatesInTurn(plan, context, watch(made), questdb, run, metrics, send)
        if plan.search:
            rates.search()
        else:
            rates.ramp()
    if plan.search:
        knees = figures.knees()
        closed = [search.closed_loop_rows_per_second for search in figures.searches
                  if search.closed_loop_rows_per_second]
        figures.knee_rows_per_second = statistics.median(knees) if knees else None
        figures.closed_loop_rows_per_second = statistics.median(closed) if closed else None
        say_ramp(run.say, figures)
    elif plan.ramp:
        figures.knee_rows_per_second = knee(figures.steps, figures.slo_seconds)
        say_ramp(run.say, figures)
    return rates.sent, rates.last_flush


class RatesInTurn:
    """Rates held one after another over consecutive chunks of the data set, and where the run stands in it: the
    rows left, the next chunk's number, when the last flush ended and the rows sent per table."""

    def __init__(self, plan: OpenLoopPlan, context: SendContext, chunks: Iterator[Chunk],
                 questdb: QuestDBSql | None, run: RunLog, metrics: RunMetrics, send: SendPhase):
        self.plan, self.context, self.chunks = plan, context, chunks
        self.questdb, self.metrics, self.send = questdb, metrics, send
        self.figures, self.say = run.record.open_loop, run.say
        self.left, self.next_chunk = context.total_rows, context.first_chunk
        self.last_flush = time.perf_counter()
        self.sent = dict.fromkeys(context.tables, 0)

    def ramp(self) -> None:
        """Each rate in turn (a ramp's: after its closed-loop step), until the data set ends."""
        if self.plan.ramp:
            self.figures.closed_loop_rows_per_second, self.figures.closed_loop_visible_seconds = \
                self.closed_loop("send")
        for rate in self.plan.rates:
            if self.hold(rate) is None:
                break

    def search(self) -> None:
        """The search for the knee, ``repeat`` times, each after a closed-loop step of its own."""
        self.figures.search_resolution = self.plan.search_resolution
        low, high = self.plan.rates
        for repetition in range(1, self.plan.repeat + 1):
            name = "send" if repetition == 1 else f"send (closed loop, search {repetition})"
            closed, visible = self.closed_loop(name)
            found = search_knee(lambda rate: self.hold(rate, repetition), low, high, self.plan.search_resolution,
                                self.figures.slo_seconds)
            self.figures.searches.append(KneeSearch(repetition, closed, visible, found))
            self.say(f"Search {repetition}: knee {rate_text(found)}, closed loop {rate_text(closed)}")

    def closed_loop(self, name: str) -> tuple[float | None, float | None]:
        """The highest rate x its duration in rows, as fast as they go: their rate until visible, and the seconds
        from the last flush until they were."""
        rows = self._rows_for(self.plan.rates[-1])
        self.say(f"Closed loop first: {rows} rows as fast as they go")
        stream = ChunkStream(self._take(rows), self.context.threads, first_index=self.next_chunk)
        record, self.last_flush = self.send(stream, rows, name, None)
        self._moved_on(rows, record, record.rows)
        # Its rate counts until its rows are visible, as a step's freshness does: rows sent into the WAL faster
        # than the server applies them are not yet capacity (and would weigh on the first step).
        seconds, visible = record.seconds, None
        if self.questdb is not None:
            for table, rows_now in self._rows_now().items():
                wait_for_count(self.questdb, table, rows_now, self.context.validation_timeout)
            visible = round(time.perf_counter() - self.last_flush, 3)
            seconds += visible
        return (round(record.rows / seconds, 1) if seconds else None), visible

    def hold(self, rate: float, search: int | None = None) -> RateStep | None:
        """``rate`` for its duration (or the data set's rest); its step, or None when the data set has ended."""
        if self.left <= 0:
            self.say(f"The data set ended before {rate:,.0f} rows/s (raise --row-count)")
            return None
        rows = self._rows_for(rate)
        schedule = RateSchedule(rate, self.context.chunk_rows, rows, self.next_chunk, grace=self.plan.grace_seconds,
                                acknowledged=self.context.acknowledged)
        stream = ChunkStream(self._take(rows), self.context.threads, first_index=self.next_chunk)
        with RateHold(schedule, stream, self._probe(), self.context.validation_timeout, self.figures, self.say,
                      self.metrics):
            name = f"send at {rate:g} rows/s" if self.plan.ramp else "send"
            name += f" (search {search})" if search is not None and self.plan.repeat > 1 else ""
            record, self.last_flush = self.send(stream, rows, name, schedule)
        self._moved_on(rows, record, stream.rows_made)  # the rows it never sent are passed over, not sent later
        self.figures.steps[-1].search = search
        return self.figures.steps[-1]

    def _rows_for(self, rate: float) -> int:
        """The rows a rate holds: its duration's whole chunks (one at least), or the data set's rest."""
        duration, chunk_rows = self.plan.duration_seconds, self.context.chunk_rows
        if duration is None:
            return self.left
        return min(self.left, max(1, math.ceil(rate * duration / chunk_rows)) * chunk_rows)

    def _take(self, rows: int) -> Iterator[Chunk]:
        return itertools.islice(self.chunks, math.ceil(rows / self.context.chunk_rows))

    def _moved_on(self, rows: int, record: PhaseRecord, taken: int) -> None:
        """Past the chunks of ``rows`` rows just scheduled: ``taken`` rows of them taken from the data set, and
        the rows the phase ``record`` sent added to each table's."""
        self.next_chunk += math.ceil(rows / self.context.chunk_rows)
        for table, sent in record.rows_by_table(list(self.context.tables)).items():
            self.sent[table] = self.sent.get(table, 0) + sent
        self.left -= taken

    def _rows_now(self) -> dict[str, int]:
        """Each table's rows once those sent so far are visible."""
        return {table: self.context.rows_before.get(table, 0) + self.sent[table] for table in self.context.tables}

    def _probe(self) -> FreshnessProbe | None:
        """A freshness probe counting from what the tables hold now (None: no QuestDB to ask)."""
        if self.questdb is None:
            return None
        before = self._rows_now()
        return FreshnessProbe(self.questdb, list(before), before, self.plan.probe_seconds)
