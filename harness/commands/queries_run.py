"""``queries run``: TSBS's queries against QuestDB, as ``tsbs_run_queries_questdb`` runs them, measured and
(``--check``) every answer compared with the use case's reference (``references``); the run leaves a
results record.

The workers are ``harness.queries.pool``'s. The first ``--burn-in`` queries run but are not counted. A
rejected or timed-out query is counted per type and the run goes on (exit 1 at the end); a lost connection
ends the run.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from harness.commands.queries_generate import QuerySetOptions, skipped_types
from harness.errors import RunError, UsageError
from harness.options.declare import CommandOptions, command, option
from harness.options.groups import (
    DataSetOptions,
    DryRunOptions,
    EndpointOptions,
    MetricsOptions,
    PgwireOptions,
    ProfileOptions,
    ProgressOptions,
    RecordOptions,
)
from harness.queries.clients import FAILURE_KINDS
from harness.queries.pool import Protocol, QueryWork, needed_features, run_queries_on_workers, wire_form
from harness.queries.references import CHECKED_USE_CASES
from harness.queries.stats import QueryStats, format_slowdown, format_summary
from harness.questdb.features import detect
from harness.questdb.http import QuestDBSql
from harness.records.run_record import IngestBeside, QueryCheck, QueryFigures, RunRecord
from harness.run.limits import check_workers
from harness.run.session import Lifecycle, Run, session
from harness.telemetry.timeseries import Sampling
from harness.telemetry.metrics import QueryRunMetrics
from harness.telemetry.phase import PhaseRecord
from harness.telemetry.progress import PrefixedLines
from harness.tsbs import params, use_cases
from harness.tsbs.query_file import read_jsonl
from harness.tsbs.query_types import Query

if TYPE_CHECKING:
    from harness.queries.check import AnswerChecker

MISMATCHES_SHOWN = 3
LOAD_TABLE = "cpu"  # the table --under-load appends to


@dataclass
class QueriesRunOptions(DryRunOptions, MetricsOptions, ProgressOptions, QuerySetOptions, DataSetOptions,
                        RecordOptions, PgwireOptions, EndpointOptions, ProfileOptions, CommandOptions):
    """Every option of a query run. The data set flags (seed, scale, time range, log interval, fields) name
    both the generated queries and, for ``--check``, the data set the table holds (as ``bench`` took them)."""

    file: str = option("", "Query file (JSON lines, .gz read too), as `queries generate` writes it; omit with "
                           "--generate.", argument=True)
    generate: bool = option(False, "Generate the queries (with the generate flags) instead of reading FILE.",
                            flags=("--generate",))
    protocol: Protocol = option(Protocol.pgwire, "pgwire (asyncpg, statements prepared and bound), http (/exec) or "
                                                 "qwp (the questdb client's QuestDB.query(), columnar over WebSocket "
                                                 "on the HTTP port: QuestDB 10+).")
    workers: int = option(1, "Workers: connections, one query at a time each.", min=1)
    max_queries: int = option(0, "Run at most this many queries, burn-in included (0: all).", min=0)
    burn_in: int = option(0, "Queries run first and not counted.", min=0)
    query_types: str | None = option(None, "Only these query types (comma-separated).")
    timeout: float = option(60.0, "Seconds a query may take; a slower one fails as a timeout.", min=0,
                            min_open=True)
    check: bool = option(False, "Compare every answer with the reference answers computed from the data set's "
                                "own DataFrames (cpu-only, iot); a difference fails the run.", flags=("--check",))
    under_load: bool = option(False, "Query while ingesting: `bench --send --stream` appends --load-rows rows of "
                                     "the data set's hosts after --timestamp-end to table cpu (ILP/HTTP) while "
                                     "the queries run; both are reported and recorded.", flags=("--under-load",))
    load_rows: int = option(1_000_000, "With --under-load: rows the concurrent ingest sends.", min=1)
    load_workers: int | None = option(None, "With --under-load: the ingest's sender threads (default: one).",
                                      min=1)
    queries_only_after: bool = option(False, "With --under-load: once the ingest has finished, run the same "
                                             "queries again on the table at rest, and print each type's "
                                             "slowdown under load as a ratio from this one run.",
                                      flags=("--queries-only-after",))

    @property
    def mode(self) -> str:
        return f"queries-{self.protocol}-{self.workers}w"

    def check_values(self) -> None:
        super().check_values()
        check_workers("--workers", self.workers)
        if self.load_workers is not None:
            check_workers("--load-workers", self.load_workers)
        if self.generate == bool(self.file):
            raise UsageError("give a query FILE or --generate, not both" if self.generate else
                             "give a query FILE, or --generate to make the queries from the generate flags")
        if self.queries_only_after and not self.under_load:
            raise UsageError("--queries-only-after is the at-rest baseline of an --under-load run: add --under-load")
        if self.under_load and self.check:
            raise UsageError("--under-load changes what lastpoint answers while it runs: run --check without it")
        if self.check and self.use_case not in CHECKED_USE_CASES:
            raise UsageError(f"--check has reference answers for the data sets of {', '.join(CHECKED_USE_CASES)} "
                             f"only, not {self.use_case}")
        if self.under_load and LOAD_TABLE not in use_cases.get(self.use_case).tables():
            raise UsageError(f"--under-load appends rows to table {LOAD_TABLE}, which {self.use_case}'s queries "
                             f"do not read")
        if self.check and self.seed is None:
            raise UsageError("--check needs the data set's --seed (and --scale, --timestamp-start/-end as loaded)")

    def rehearse(self) -> None:
        load_queries(self)  # its refusals (query types, all burn-in) need no server


def load_queries(options: QueriesRunOptions) -> list[Query]:
    """The queries to run, filtered by type and cut to ``--max-queries``."""
    if options.generate:
        seed = options.seed or params.random_seed()
        if options.seed is None:
            options.seed = seed
        queries = list(options.generated(seed))
    else:
        queries = read_jsonl(options.file)
        if not queries:
            raise UsageError(f"query file {options.file} holds no queries")
    if options.query_types:
        known = use_cases.get(options.use_case).query_types
        wanted = [name.strip() for name in options.query_types.split(",") if name.strip()]
        unknown = [name for name in wanted if name not in known]
        if unknown:
            raise UsageError(f"--query-types: unknown {options.use_case} query type {unknown[0]!r}; known: "
                             f"{', '.join(known)}")
        queries = [query for query in queries if query.query_type in wanted]
    if options.max_queries:
        queries = queries[:options.max_queries]
    if len(queries) <= options.burn_in:
        raise UsageError(f"{len(queries)} queries to run, all of them burn-in (--burn-in {options.burn_in}): "
                         f"nothing would be counted")
    return queries


@command
def run_queries(options: QueriesRunOptions, out: TextIO | None = None) -> RunRecord | None:
    """Run the queries; returns the record (also written as JSON), or None after a --dry-run's checks.
    Raises UsageError/RunError."""
    out = out or sys.stdout
    record = RunRecord(kind="queries", mode=options.mode, parameters=dataclasses.asdict(options), seed=options.seed)
    lifecycle = Lifecycle(options.recording(), options.spelling(), Sampling(0.0), options.profiling())
    with session(record, lifecycle, out, functools.partial(_run_metrics, options)) as run:
        _query_phases(options, run, run.metrics)
    return run.record


def _run_metrics(options: QueriesRunOptions, run_id: str) -> QueryRunMetrics:
    return QueryRunMetrics(run_id, _metric_labels(options), options.metrics_port, options.metrics_linger,
                           query_types=use_cases.get(options.use_case).query_types, failure_kinds=FAILURE_KINDS,
                           host=options.metrics_host)


def _metric_labels(options: QueriesRunOptions) -> dict:
    return {key: str(getattr(options, key)) for key in ("protocol", "workers", "scale", "seed", "fields")} | {
        "kind": "queries"}


def _query_phases(options: QueriesRunOptions, run: Run, metrics: QueryRunMetrics) -> None:
    queries = load_queries(options)
    if options.generate:
        for refusal in skipped_types(options):
            run.say(f"skipped (as TSBS refuses it): {refusal}")
    # --generate without --seed drew one: the record names it.
    run.record.parameters.update(seed=options.seed, query_count=len(queries))
    run.record.seed = options.seed
    questdb = options.questdb_sql()
    questdb.ping()
    run.record.server = {"questdb_version": questdb.server_version()}
    if needed := needed_features(options.protocol):
        if lacking := detect(questdb).lacking(needed, f"{options.host}:{options.http_port}"):
            raise UsageError(lacking)
    checker = None
    if options.check:
        from harness.queries.check import AnswerChecker  # the reference's numpy and pandas: only to check

        checker = AnswerChecker(_reference(options, questdb, run))
    # Each query in the form its protocol sends, made before the clock starts: from TSBS's text, as reading the
    # query file is (TSBS's runner decodes its file on a thread of its own while its queries run).
    wire = wire_form(options.protocol)
    work = [(index, query, wire(query)) for index, query in enumerate(queries)]
    stats = QueryStats(metrics)
    run.say(f"Running {len(queries)} queries ({options.burn_in} burn-in) over {options.protocol} with "
            f"{options.workers} worker(s)")
    load = IngestLoad(options, run) if options.under_load else None
    cpu_started, started = time.process_time(), time.perf_counter()
    stats.started = started if not options.burn_in else None
    try:
        if load is not None:
            load.start()
        run_queries_on_workers(options, work, stats, checker, run.say)
    finally:
        queries_ended = time.perf_counter()
        # Through the run, which tells the profile (``--profile``: a recording a phase).
        run.phase("queries", None, PhaseRecord(stats.counted, 0, round(queries_ended - started, 6),
                                               time.process_time() - cpu_started))
        _record_statistics(run, stats, checker)
        if load is not None:
            load.finish(started, queries_ended)
    summary = stats.summary()
    run.say(format_summary(summary, stats.labels, options.workers))
    if load is not None:
        load.report()
    passes = {"": stats}
    if options.queries_only_after:
        passes["at rest: "] = at_rest = _at_rest(options, work, run)
        run.say(format_slowdown(summary, at_rest.summary()))
    _raise_failures(run, passes, checker, len(queries))


def _at_rest(options: QueriesRunOptions, work: list[QueryWork], run: Run) -> QueryStats:
    """The same queries once more, the ingest over: the baseline the under-load figures are divided by.
    Not fed to the live metrics, which stay those of the run under load."""
    run.say(f"At rest: the same {len(work)} queries again, the ingest finished")
    stats = QueryStats()
    cpu_started, started = time.process_time(), time.perf_counter()
    stats.started = started if not options.burn_in else None
    try:
        run_queries_on_workers(options, work, stats, None, run.say)
    finally:
        run.phase("queries_at_rest", None, PhaseRecord(stats.counted, 0, round(time.perf_counter() - started, 6),
                                                       time.process_time() - cpu_started))
        run.record.queries.at_rest = stats.figures()
    run.say(format_summary(stats.summary(), stats.labels, options.workers))
    return stats


class IngestLoad:
    """``bench --send --stream`` on a thread of its own while the queries run: its rows go after the data
    set's time range, so the queried windows keep their answers; its record is written beside the run's."""

    def __init__(self, options: QueriesRunOptions, run: Run):
        from harness.run.bench_options import BenchOptions

        path = run.record.path
        self.results = path.with_name(path.stem + "-ingest.json")
        self.bench = BenchOptions(
            send=True, stream=True, keep_table=True, transport="http", seed=options.seed, scale=options.scale,
            timestamp_start=options.range_end(), row_count=options.load_rows, log_interval=options.log_interval,
            fields=options.fields, workers=options.load_workers, host=options.host, http_port=options.http_port,
            results=str(self.results), reporting_period=options.reporting_period)
        self.run = run
        self.record: RunRecord | None = None
        self.error: BaseException | None = None
        self.ended: float | None = None
        self._thread = threading.Thread(target=self._ingest, name="ingest-load", daemon=True)

    def _ingest(self) -> None:
        from harness.commands.bench import run_bench

        try:
            self.record = run_bench(self.bench, out=PrefixedLines(self.run.out, "ingest: "))
        except BaseException as exc:  # reported by finish(), on the run's own thread
            self.error = exc
        finally:
            self.ended = time.perf_counter()

    def start(self) -> None:
        self.started = time.perf_counter()
        self._thread.start()

    def finish(self, queries_started: float, queries_ended: float) -> None:
        """Wait for the ingest; record what it did and how much of the query run it overlapped."""
        self._thread.join()
        overlap = max(0.0, min(self.ended, queries_ended) - max(self.started, queries_started))
        send = self.record.phases.get("send") if self.record else None
        self.summary = IngestBeside(
            results=str(self.results), rows=self.bench.row_count, workers=self.bench.threads,
            status=self.record.status if self.record else "failed",
            error=None if self.error is None else str(self.error),
            send_rows_per_second=send.rows_per_second if send else None,
            ingest_seconds=round(self.ended - self.started, 3),
            queries_seconds=round(queries_ended - queries_started, 3),
            overlap_of_queries=round(overlap / (queries_ended - queries_started), 3)
            if queries_ended > queries_started else 0.0,
        )
        self.run.record.queries.under_load = self.summary

    def report(self) -> None:
        summary = self.summary
        rate = summary.send_rows_per_second
        self.run.say(f"Under load: the ingest sent {summary.rows} rows in {summary.ingest_seconds:.2f}s"
                     + (f" ({rate / 1e6:.3f} mil rows/sec while sending)" if rate else "")
                     + f"; rows were arriving during {summary.overlap_of_queries:.0%} of the query run "
                       f"({summary.queries_seconds:.2f}s). Ingest record: {summary.results}")
        if self.error is not None:
            raise RunError(f"the concurrent ingest failed: {self.error}")


def _reference(options: QueriesRunOptions, questdb: QuestDBSql, run: Run):
    from harness.queries.references import reference_class

    spec = options.spec()
    started = time.perf_counter()
    reference = reference_class(options.use_case).generate(spec, str(options.fields))
    rows = reference.table_rows()
    run.say(f"Reference: {sum(rows.values())} rows (seed {spec.seed}, scale {spec.scale}) in "
            f"{time.perf_counter() - started:.2f}s")
    # Said before any query runs: answers over another data set all differ, and this says why.
    for table, expected in rows.items():
        visible = questdb.count(table)
        if visible != expected:
            run.say(f"warning: table {table} holds {visible} rows, the data set of these flags {expected}: "
                    f"was it loaded with the same --seed --scale --timestamp-start/-end --log-interval?")
    return reference


def _record_statistics(run: Run, stats: QueryStats, checker: AnswerChecker | None) -> None:
    check = None if checker is None else QueryCheck(checker.checked, len(checker.mismatches),
                                                    checker.mismatches[:MISMATCHES_SHOWN])
    run.record.queries = QueryFigures(**vars(stats.figures()), check=check)


def _raise_failures(run: Run, passes: dict[str, QueryStats], checker: AnswerChecker | None, total: int) -> None:
    """One line for the first pass (the run; ``at rest: `` the baseline) in which queries failed."""
    if checker is not None:
        for description in checker.mismatches[:MISMATCHES_SHOWN]:
            run.say(description)
        if checker.mismatches:
            raise checker.error()
        run.say(f"Checked: all {checker.checked} answers equal the reference.")
    for name, stats in passes.items():
        if stats.failed:
            kinds = "; ".join(f"{query_type}: " + ", ".join(f"{count} {kind}" for kind, count in sorted(per_kind.items()))
                              for query_type, per_kind in stats.failures_dict().items())
            first = stats.failure_samples[0] if stats.failure_samples else ""
            raise RunError(f"{name}{stats.failed} of {total} queries failed ({kinds}); the first: {first}")
