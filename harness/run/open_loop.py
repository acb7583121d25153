"""A bench run's open-loop send (``--rate``): the schedule (``harness.ingest.open_loop``) handed to the send
phase, the freshness probe beside it (``harness.ingest.freshness``), the figures the record keeps and prints,
and the thresholds judged on them (``harness.records.thresholds``).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from harness.errors import UsageError
from harness.ingest.choices import ChunksAhead
from harness.ingest.freshness import FreshnessProbe
from harness.ingest.made_ahead import MadeAhead
from harness.ingest.open_loop import OpenLoop
from harness.ingest.phase_loop import ChunkStream, stream_depth
from harness.queries.paced import PacedQueries
from harness.questdb.wal import wait_for_count
from harness.records.run_record import (
    ChunksAheadFigures,
    KneeSearch,
    OpenLoopFigures,
    PacedQueryFigures,
    ProbeFigures,
    RateStep,
)
from harness.records.thresholds import failed_lines
from harness.telemetry.latency import LatencySummary
from harness.tsbs.query_file import read_jsonl

if TYPE_CHECKING:
    from harness.ingest.senders import SenderSettings
    from harness.questdb.http import QuestDBSql
    from harness.run.bench_options import BenchOptions
    from harness.run.session import Run
    from harness.telemetry.metrics import RunMetrics
    from harness.telemetry.phase import PhaseRecord
    from harness.tsbs.use_case import Chunk

    # Sends chunks as the send phase does: (chunks, rows, phase name, schedule or None) -> (phase, last flush).
    SendPhase = Callable[[Iterable, int, str, OpenLoop | None], tuple[PhaseRecord, float]]

# A rate counts as sustained when the rows went out at no less than this share of it.
SUSTAINED_SHARE = 0.99
# How often the interpreter hands the GIL over during an open loop (Python's default: 5 ms).
SWITCH_SECONDS = 0.0005


def open_loop_send(options: BenchOptions, target: SenderSettings, chunks: Iterator[Chunk],
                   watch: Callable[[Iterable[Chunk]], Iterator[Chunk]], total_rows: int, questdb: QuestDBSql | None,
                   rows_before: dict[str, int], run: Run, metrics: RunMetrics,
                   send: SendPhase) -> tuple[dict[str, int], float]:
    """Every rate of ``--rate`` in turn, over consecutive chunks of the data set (made ahead as --chunks-ahead
    says, each passed through ``watch`` as it comes): one rate for ``--duration`` (or until the data set ends),
    or a ramp: a closed-loop step first (the rate this machine reaches when nothing waits), then each rate for
    ``--duration``, and the knee named. Records the figures; returns the rows sent per table and when the last
    flush ended."""
    figures = run.record.open_loop = OpenLoopFigures([], slo_seconds=options.slo_seconds() if options.ramp else None)
    sent = dict.fromkeys((schema.table for schema in options.schemas()), 0)
    with made_ahead(options, chunks, figures, run) as made, prompt_threads(), queries_beside(options, run, metrics):
        last_flush = _rates(options, target, watch(made), total_rows, questdb, rows_before, run, metrics, send,
                            sent)
    if options.search:
        knees = figures.knees()
        closed = [search.closed_loop_rows_per_second for search in figures.searches
                  if search.closed_loop_rows_per_second]
        figures.knee_rows_per_second = statistics.median(knees) if knees else None
        figures.closed_loop_rows_per_second = statistics.median(closed) if closed else None
        say_ramp(run, figures)
    elif options.ramp:
        figures.knee_rows_per_second = knee(figures.steps, figures.slo_seconds)
        say_ramp(run, figures)
    return sent, last_flush


def _rates(options: BenchOptions, target: SenderSettings, chunks: Iterator[Chunk], total_rows: int,
           questdb: QuestDBSql | None, rows_before: dict[str, int], run: Run, metrics: RunMetrics,
           send: SendPhase, sent: dict[str, int]) -> float:
    """Each rate in turn (a ramp: after its closed-loop step), or each search for the knee (--search, --repeat
    times); adds the rows sent to ``sent``; returns when the last flush ended."""
    rates, duration = options.rates(), options.duration_seconds()
    tables = list(sent)
    chunk_rows = options.worker_chunk_row_count
    figures = run.record.open_loop
    left, next_chunk = total_rows, options.first_chunk
    last_flush = time.perf_counter()

    def rows_for(rate: float) -> int:
        return left if duration is None else min(left, max(1, math.ceil(rate * duration / chunk_rows)) * chunk_rows)

    def take(rows: int) -> Iterator[Chunk]:
        return itertools.islice(chunks, math.ceil(rows / chunk_rows))

    def closed_loop(name: str) -> tuple[float | None, float | None]:
        """HIGH x --duration rows as fast as they go: their rate until visible, and the seconds from the last
        flush until they were."""
        nonlocal left, next_chunk, last_flush
        rows = rows_for(rates[-1])
        run.say(f"Closed loop first: {rows} rows as fast as they go")
        stream = ChunkStream(take(rows), options.threads, first_index=next_chunk)
        record, last_flush = send(stream, rows, name, None)
        next_chunk += math.ceil(rows / chunk_rows)
        _add(sent, record.rows_by_table(tables))
        left -= record.rows
        # Its rate counts until its rows are visible, as a step's freshness does: rows sent into the WAL faster
        # than the server applies them are not yet capacity (and would weigh on the first step).
        seconds, visible = record.seconds, None
        if questdb is not None:
            for table in tables:
                wait_for_count(questdb, table, rows_before.get(table, 0) + sent[table],
                               options.validation_query_timeout)
            visible = round(time.perf_counter() - last_flush, 3)
            seconds += visible
        return (round(record.rows / seconds, 1) if seconds else None), visible

    def hold(rate: float, search: int | None = None) -> RateStep | None:
        """``rate`` for --duration (or the data set's rest); its step, or None when the data set has ended."""
        nonlocal left, next_chunk, last_flush
        if left <= 0:
            run.say(f"The data set ended before {rate:,.0f} rows/s (raise --row-count)")
            return None
        rows = rows_for(rate)
        before = {table: rows_before.get(table, 0) + sent[table] for table in tables}
        with RateHold(options, target, rate, take(rows), rows, next_chunk, questdb, before, run, metrics) as one:
            name = f"send at {rate:g} rows/s" if options.ramp else "send"
            name += f" (search {search})" if search is not None and options.repeat > 1 else ""
            record, last_flush = send(one.stream, rows, name, one.schedule)
        next_chunk += math.ceil(rows / chunk_rows)
        _add(sent, record.rows_by_table(tables))
        left -= one.stream.rows_made  # the rows it never sent are passed over, not sent at the next rate
        figures.steps[-1].search = search
        return figures.steps[-1]

    if options.search:
        figures.search_resolution = options.search_resolution
        for repetition in range(1, options.repeat + 1):
            name = "send" if repetition == 1 else f"send (closed loop, search {repetition})"
            closed, visible = closed_loop(name)
            found = search_knee(lambda rate: hold(rate, repetition), *rates, options.search_resolution,
                                figures.slo_seconds)
            figures.searches.append(KneeSearch(repetition, closed, visible, found))
            run.say(f"Search {repetition}: knee {_rate_text(found)}, closed loop {_rate_text(closed)}")
        return last_flush
    if options.ramp:
        figures.closed_loop_rows_per_second, figures.closed_loop_visible_seconds = closed_loop("send")
    for rate in rates:
        if hold(rate) is None:
            break
    return last_flush


def held(step: RateStep, slo_seconds: float | None) -> bool:
    """Whether a rate was held: sustained, and its freshness p99 (where measured) under the SLO, every chunk
    sent seen (one the probe did not see within the grace is in no percentile, and was not fresh)."""
    return step.sustained and (step.freshness is None or slo_seconds is None
                               or (step.freshness.count > 0 and step.freshness.p99 < slo_seconds
                                   and step.unseen_chunks == 0))


def search_knee(probe: Callable[[float], RateStep | None], low: float, high: float, resolution: float,
                slo_seconds: float | None) -> float | None:
    """The highest rate held between ``low`` and ``high``, by bisection: ``low`` first (None when it is missed),
    then ``high`` (the knee when it is held), then the middle of the highest held and the lowest missed until
    they are within ``resolution`` of the rate held. ``probe`` holds a rate and returns its step (None: no
    data left, and the search ends with what it found)."""
    step = probe(low)
    if step is None or not held(step, slo_seconds):
        return None
    step = probe(high)
    if step is None:
        return low
    if held(step, slo_seconds):
        return high
    held_rate, missed_rate = low, high
    while missed_rate - held_rate > resolution * held_rate:
        middle = round((held_rate + missed_rate) / 2)
        step = probe(middle)
        if step is None:
            break
        if held(step, slo_seconds):
            held_rate = middle
        else:
            missed_rate = middle
    return held_rate


def _rate_text(rate: float | None) -> str:
    return f"{rate:,.0f} rows/s" if rate else "none"


@contextlib.contextmanager
def made_ahead(options: BenchOptions, chunks: Iterator[Chunk], figures: OpenLoopFigures,
               run: Run) -> Iterator[Iterator[Chunk]]:
    """``chunks`` as --chunks-ahead makes them ahead of their time: in a process of their own (stopped when the block
    ends), or in the stream's thread of this process; what bounds them, the most they held and the process's CPU
    time in ``figures``, said before and after."""
    chunk_rows = options.worker_chunk_row_count
    if options.chunks_ahead == ChunksAhead.thread:
        depth = stream_depth(options.threads)
        ahead = figures.chunks_ahead = ChunksAheadFigures(str(ChunksAhead.thread), depth, depth * chunk_rows)
        run.say(f"Chunks {ahead.text()}")
        yield chunks
        return
    maker = MadeAhead(chunks, chunk_rows)
    ahead = figures.chunks_ahead = ChunksAheadFigures(str(ChunksAhead.process), maker.max_chunks, maker.max_rows,
                                                      maker.max_mib)
    run.say(f"Chunks {ahead.text()}")
    try:
        yield maker
    finally:
        maker.close()
        ahead.peak_chunks, ahead.peak_mib = maker.peak_chunks, round(maker.peak_bytes / 2**20, 1)
        ahead.cpu_seconds = maker.cpu_seconds
        run.say(f"Chunks {ahead.text()}")


@contextlib.contextmanager
def prompt_threads() -> Iterator[None]:
    """Over the block, nothing of the process holds a worker whose chunk is due for long:

    - the interpreter hands the GIL over every ``SWITCH_SECONDS`` instead of every 5 ms, so a thread running
      Python (the sampler parsing /metrics, the chunk generator) gives way that soon;
    - the cyclic garbage collector leaves the objects made before the block alone (``gc.freeze``). A full
      collection walks every object of the process: with pandas, numba and the client loaded it stops every
      thread for 20-35 ms here, and a 30 s open loop set one off."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_SECONDS)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        sys.setswitchinterval(before)


@contextlib.contextmanager
def queries_beside(options: BenchOptions, run: Run, metrics: RunMetrics) -> Iterator[None]:
    """``--queries`` at ``--query-rate`` over the block (nothing without them); their figures into the record."""
    if options.queries is None:
        yield
        return
    queries = read_jsonl(options.queries)
    if not queries:
        raise UsageError(f"query file {options.queries} holds no queries")
    pgwire = options.query_protocol == "pgwire"
    paced = PacedQueries(queries, options.query_rate, options.query_protocol, options.host,
                         options.pg_port if pgwire else options.http_port,
                         options.pg_login() if pgwire else options.http_login(),
                         options.pg_tls() if pgwire else options.http_tls(), options.query_connections,
                         observer=metrics.query_observer())
    paced.start()
    run.say(f"Queries beside: {options.query_rate:g}/s over {options.query_connections} {options.query_protocol} "
            f"connection(s), {len(queries)} queries in turn from {options.queries}")
    try:
        yield
    finally:
        paced.stop()
        figures = run.record.open_loop.queries = PacedQueryFigures(
            options.queries, options.query_rate, options.query_protocol, options.query_connections, paced.done,
            paced.late, paced.latency.summary(),
            {query_type: latencies.summary() for query_type, latencies in sorted(paced.by_type.items())},
            _failures(paced), paced.failure_sample)
    if paced.error is not None:
        raise paced.error
    run.say(f"Queries beside the ingest: {figures.done} done, {figures.late} late; latency from the intended "
            f"start: {latency_line(figures.latency).replace(' chunks)', ' queries)')}")
    if figures.failures:
        run.say(f"  failed: {sum(sum(kinds.values()) for kinds in figures.failures.values())} "
                f"({figures.failure_sample})")


def _failures(paced: PacedQueries) -> dict[str, dict[str, int]]:
    failures: dict[str, dict[str, int]] = {}
    for (query_type, kind), count in paced.failures.items():
        failures.setdefault(query_type, {})[kind] = count
    return failures


def _add(totals: dict[str, int], more: dict[str, int]) -> None:
    for table, rows in more.items():
        totals[table] = totals.get(table, 0) + rows


def knee(steps: list[RateStep], slo_seconds: float | None) -> float | None:
    """The highest rate held: sustained, its freshness p99 (where measured) under the SLO."""
    return max((step.target_rows_per_second for step in steps if held(step, slo_seconds)), default=None)


class RateHold:
    """One rate over ``chunks`` (``rows`` rows, numbered from ``first``), and the probe counting beside it when
    sending to QuestDB. The send phase takes ``stream`` and ``schedule`` inside the ``with`` block; leaving it
    adds the rate's figures to the record (and prints them when the send went well)."""

    def __init__(self, options: BenchOptions, target: SenderSettings, rate: float, chunks: Iterable[Chunk],
                 rows: int, first: int, questdb: QuestDBSql | None, rows_before: dict[str, int], run: Run,
                 metrics: RunMetrics):
        self.run = run
        self.drain_seconds = options.validation_query_timeout
        chunk_rows = options.worker_chunk_row_count
        self.schedule = OpenLoop(rate, chunk_rows, rows, first, grace=options.grace_seconds(),
                                 acknowledged=target.scheme.startswith("http"))
        observer = metrics.open_loop(rate, lambda: self.schedule.behind(time.perf_counter()))
        self.schedule.schedule_delay.observer = observer("schedule_delay")
        self.schedule.ack_latency.observer = observer("acknowledged")
        self.probe = None
        if questdb is not None:
            self.probe = FreshnessProbe(questdb, list(rows_before), rows_before, options.probe_seconds())
            self.probe.freshness.observer = observer("freshness")
            self.schedule.on_sent = self.probe.sent
        self.stream = ChunkStream(chunks, options.threads, first_index=first)
        seconds = math.ceil(rows / chunk_rows) * self.schedule.interval
        probed = f"; freshness probed every {self.probe.interval * 1e3:g} ms" if self.probe is not None else ""
        run.say(f"Open loop: {rate:,.0f} rows/s, a chunk of {chunk_rows} rows every "
                f"{self.schedule.interval * 1e3:.1f} ms, {rows} rows over {seconds:.1f}s{probed}")

    def __enter__(self) -> RateHold:
        if self.probe is not None:
            self.probe.start()
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.stream.close()
        if self.probe is not None:
            # After a send that went well, the chunks sent last become visible: the probe waits for them until
            # the schedule's grace is over (and at most the validation's timeout); those still unseen are counted.
            drain = min(self.drain_seconds, self.schedule.grace_left(time.perf_counter()))
            self.probe.stop(drain_seconds=drain if error is None else 0.0)
        figures = self.run.record.open_loop
        figures.steps.append(rate_step(self.schedule, self.probe))
        probe = probe_figures(self.probe)
        if probe is not None:
            figures.probe = probe if figures.probe is None else figures.probe.plus(probe)
        if error is None:
            say_step(self.run, figures.steps[-1], probe)


def rate_step(schedule: OpenLoop, probe: FreshnessProbe | None) -> RateStep:
    """The record's figures of one rate."""
    achieved = schedule.achieved_rate()
    return RateStep(
        target_rows_per_second=schedule.rate,
        achieved_rows_per_second=None if achieved is None else round(achieved, 1),
        # Every row out, and at the rate or never a whole chunk behind: the achieved rate ends at the last chunk's
        # start, so a single stall of that one chunk (on a short run) would otherwise decide alone.
        sustained=achieved is not None and schedule.sent_rows == schedule.total_rows
        and (achieved >= SUSTAINED_SHARE * schedule.rate or schedule.late_chunks == 0),
        rows=schedule.sent_rows, chunks=schedule.sent_chunks, late_chunks=schedule.late_chunks,
        unsent_rows=schedule.unsent_rows,
        max_backlog_rows=max((rows for _, rows in schedule.backlog), default=0),
        schedule_delay=schedule.schedule_delay.summary(),
        acknowledged=schedule.ack_latency.summary() if schedule.acknowledged else None,
        acknowledged_from_send=schedule.ack_from_send.summary() if schedule.acknowledged else None,
        freshness=probe.freshness.summary() if probe is not None else None,
        source_behind=schedule.source_behind.summary(),
        unseen_chunks=probe.unresolved if probe is not None else 0,
        backlog=[[seconds, rows] for seconds, rows in schedule.backlog],
        acknowledged_series=schedule.ack_series.points if schedule.acknowledged else [],
        acknowledged_from_send_series=schedule.ack_from_send_series.points if schedule.acknowledged else [],
        freshness_series=probe.series.points if probe is not None else [])


def probe_figures(probe: FreshnessProbe | None) -> ProbeFigures | None:
    if probe is None:
        return None
    return ProbeFigures(probe.interval, probe.queries, round(probe.queries / probe.seconds, 1) if probe.seconds else 0.0,
                        len(probe.tables), probe.failures, probe.last_error)


def say_step(run: Run, step: RateStep, probe: ProbeFigures | None) -> None:
    held = "sustained" if step.sustained else "NOT sustained"
    achieved = f"{step.achieved_rows_per_second:,.0f}" if step.achieved_rows_per_second is not None else "no"
    unsent = f"; {step.unsent_rows} rows never sent (the schedule ended)" if step.unsent_rows else ""
    run.say(f"Open loop at {step.target_rows_per_second:,.0f} rows/s: {achieved} rows/s achieved ({held}); "
            f"{step.late_chunks} of {step.chunks} chunks late; backlog at most {step.max_backlog_rows} rows{unsent}.")
    for name, summary in (("schedule delay", step.schedule_delay), ("acknowledged", step.acknowledged),
                          ("ack from send", step.acknowledged_from_send), ("freshness", step.freshness)):
        if summary is not None:
            run.say(f"  {name + ':':16}{latency_line(summary)}")
    if step.source_behind is not None and step.source_behind.count:
        run.say(f"  source behind:  {latency_line(step.source_behind)} came after their intended time from the "
                f"source (the client's making, not the server; their latencies count from when they came)")
    if probe is not None:
        unseen = f"; {step.unseen_chunks} chunks never seen" if step.unseen_chunks else ""
        failures = f"; {probe.failures} failed ({probe.last_error})" if probe.failures else ""
        run.say(f"  probe: {probe.queries} counts ({probe.queries_per_second:g}/s, {probe.tables} table(s) each)"
                f"{failures}{unseen}")


def latency_line(summary: LatencySummary) -> str:
    """``p50 12.3 ms  p90 ...  max ...  (N)`` from each chunk's intended time."""
    if not summary.count:
        return "no samples"
    figures = "  ".join(f"{name} {_ms(summary.figure(name))}" for name in ("p50", "p90", "p99", "p999", "max"))
    return f"{figures}  ({summary.count} chunks)"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


def say_ramp(run: Run, figures: OpenLoopFigures) -> None:
    """The ramp's table, rate by rate (a search's every probe, in the order held), and its knee beside the
    closed-loop rate; a search's median knee with its spread."""
    searched = bool(figures.searches)
    run.say(f"{'Search probes' if searched else 'Ramp'}:\n  {'search  ' if searched else ''}rows/s target   "
            f"achieved   held   freshness p50   p99   backlog max")
    for step in figures.steps:
        freshness = step.freshness
        p50, p99 = ((_ms(freshness.p50), _ms(freshness.p99)) if freshness is not None and freshness.count
                    else ("-", "-"))
        achieved = f"{step.achieved_rows_per_second:,.0f}" if step.achieved_rows_per_second else "-"
        search = f"{step.search or '-':>6}  " if searched else ""
        run.say(f"  {search}{step.target_rows_per_second:>13,.0f}  {achieved:>9}   "
                f"{'yes' if held(step, figures.slo_seconds) else 'no ':4} {p50:>14}  {p99:>9}  "
                f"{step.max_backlog_rows:>10}")
    closed = figures.closed_loop_rows_per_second
    closed_text = f"{closed:,.0f} rows/s" if closed else "unknown"
    if closed and figures.closed_loop_visible_seconds is not None:
        closed_text += f" (its rows visible {figures.closed_loop_visible_seconds:.2f}s after its last flush)"
    held_by = f"freshness p99 under {figures.slo_seconds:g}s, sustained"
    if searched:
        if figures.knee_spread() is None:
            run.say(f"Knee: no rate was held ({held_by}) in {len(figures.searches)} search(es)")
            return
        ratio = f"; knee over the closed loop {figures.ratio_text()}" if figures.ratio_spread() else ""
        run.say(f"Knee: {figures.knee_rows_per_second:,.0f} rows/s, the median of {len(figures.searches)} "
                f"search(es) to {figures.search_resolution:.0%} ({held_by}): {figures.knee_spread_text()}; "
                f"closed loop median {closed_text}{ratio}")
    elif figures.knee_rows_per_second is None:
        run.say(f"Knee: no rate was held ({held_by}); closed loop {closed_text}")
    else:
        ratio = f" ({figures.knee_rows_per_second / closed:.2f}x of it)" if closed else ""
        run.say(f"Knee: {figures.knee_rows_per_second:,.0f} rows/s ({held_by}){ratio}; closed loop {closed_text}")


def judge_thresholds(options: BenchOptions, run: Run) -> None:
    """The run's thresholds, judged on its figures into the record (``harness.records.thresholds``)."""
    figures = run.record.open_loop
    if figures is None:
        return
    queries = figures.queries.latency if figures.queries is not None else None
    figures.thresholds = [threshold.judge(figures.steps, queries) for threshold in options.thresholds()]
    for outcome in figures.thresholds:
        run.say(f"Threshold {outcome.expression}: {'passed' if outcome.passed else 'FAILED'}")


def missed_thresholds(run: Run) -> list[str]:
    """A line per threshold the run missed (none: every one held, or none was given)."""
    figures = run.record.open_loop
    return failed_lines(figures.thresholds) if figures is not None else []
