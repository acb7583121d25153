"""The ``read`` command: a QuestDB table (whole, ``--from``/``--to``, or ``--sql``) read into pandas over one
protocol, measured (rows/s, MiB/s received, client CPU, time to the first rows, peak RSS), optionally
checked against its TSBS data set (``--check``) or the user's file that filled it (``--check-against``), and
recorded. ``run_read(ReadOptions(...))`` is what ``python -m harness read`` calls and what tests and benchmarks
call directly.

The comparison of ``--check`` and ``--check-against`` runs in the consumer as the frames arrive, so its CPU is
in the client's figures: measure without it.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from harness.errors import RunError, UsageError
from harness.options.declare import CommandOptions, command, flag_name, option
from harness.options.groups import (
    DataSetRowsOptions,
    EndpointOptions,
    FileReadingOptions,
    MetricsOptions,
    PgwireOptions,
    ProfileOptions,
    ProgressOptions,
    RecordOptions,
    SamplingOptions,
)
from harness.own_data.files import DataFile
from harness.own_data.source import default_table
from harness.questdb.http import QuestDBSql
from harness.questdb.tls import PgTls
from harness.read.check import CheckFailed, DataSetCheck, OrderedCheck
from harness.read.check_against import open_check
from harness.read.connection import Endpoint
from harness.read.loop import read_frames
from harness.telemetry.peak_rss import PeakRss
from harness.read.plan import ReadPlan, plan_sql, plan_table
from harness.read.protocols import PGWIRE_PROTOCOLS, ReadProtocol, prepare_reader
from harness.records.run_record import ReadFigures, RunRecord
from harness.report.tables import MIB
from harness.run.session import Run, metered, profiled, recorded_if_interrupted, sampled
from harness.telemetry.metrics import ReadRunMetrics
from harness.telemetry.progress import ProgressPrinter
from harness.tsbs import use_cases
from harness.tsbs.choices import SymbolDtype
from harness.tsbs.params import parse_rfc3339_ns

# A row reader's batch of Records or tuples holds each value as a Python object (about 1 KB a cpu row) until it
# is a DataFrame: 50,000 rows keep a worker's batch near 50 MB.
DEFAULT_CHUNK_ROWS = 50_000


@dataclass
class ReadOptions(MetricsOptions, ProgressOptions, DataSetRowsOptions, RecordOptions, SamplingOptions, PgwireOptions,
                  EndpointOptions, FileReadingOptions, ProfileOptions, CommandOptions):
    """Every option of a read. The data set flags name, for ``--check``, the data set the table holds (as
    ``bench`` took them)."""

    protocol: ReadProtocol = option(ReadProtocol.asyncpg, "asyncpg, psycopg or connectorx (PGWire), http-csv or "
                                                          "http-parquet (HTTP /exp).")
    table: str | None = option(None, "Table to read. Default: the use case's first table (cpu-only: cpu); with "
                                     "--check-against, the file's name without its suffix (as bench --data).")
    sql: str | None = option(None, "Read the answer to this SELECT instead of a table (one worker, no --check).")
    from_time: str | None = option(None, "Read the table's rows from this time on (RFC 3339).", flags=("--from",))
    to_time: str | None = option(None, "Read the table's rows before this time (RFC 3339).", flags=("--to",))
    workers: int = option(1, "Workers: connections, each reading one time slice of the table; the slices are put "
                             "back in order.", min=1)
    chunk_rows: int = option(DEFAULT_CHUNK_ROWS, "Rows per DataFrame (and per fetch where the protocol fetches "
                                                 "in pieces).", min=1)
    check: bool = option(False, "Compare every value with the data set the flags name (as bench --send loaded "
                                "it); the first difference fails the run.", flags=("--check",))
    check_against: str | None = option(None, "Compare every value with this file (Parquet, Arrow IPC or CSV, as "
                                             "bench --send --data sent it): the table must hold exactly its rows; "
                                             "the first difference fails the run.", flags=("--check-against",))

    @property
    def mode(self) -> str:
        return f"read-{self.protocol}-{self.workers}w"

    @property
    def read_table(self) -> str:
        if self.table is not None:
            return self.table
        if self.check_against is not None:
            return default_table(self.check_file)
        return use_cases.get(self.use_case).tables()[0]

    @functools.cached_property
    def check_file(self) -> DataFile:
        """The file of --check-against, opened (its schema read): a missing or corrupt one is refused here."""
        return DataFile(self.check_against, flag="--check-against", reading=self.reading())

    def time_range_ns(self) -> tuple[int | None, int | None]:
        start = None if self.from_time is None else parse_rfc3339_ns(self.from_time, "from_time")
        end = None if self.to_time is None else parse_rfc3339_ns(self.to_time, "to_time")
        if start is not None and end is not None and end <= start:
            raise UsageError(f"--to {self.to_time} must be after --from {self.from_time}")
        return start, end

    def check_values(self) -> None:
        super().check_values()
        self.time_range_ns()
        if self.check_against is not None:
            self._check_against_alone()
        elif self.reading_flags():
            raise UsageError(f"{self.reading_flags()[0]} says how --check-against's file is read: it needs "
                             f"--check-against PATH")
        if self.sql is not None:
            given = [flag for flag, value in (("--table", self.table), ("--from", self.from_time),
                                              ("--to", self.to_time)) if value is not None]
            if given:
                raise UsageError(f"--sql reads its own answer: it takes no {given[0]}")
            if self.workers > 1:
                raise UsageError("--workers splits a table by time; --sql is read by one worker")
            if self.check:
                raise UsageError("--check compares a table with its data set; --sql's answer has none")
        if self.check:
            if self.seed is None:
                raise UsageError("--check needs the data set's --seed (and --scale, --row-count or --timestamp-end, "
                                 "--use-case, --fields as bench --send took them)")
            use_case = use_cases.get(self.use_case)
            tables = use_case.tables(self.table if use_case.renamable_table else None)
            if self.read_table not in tables:
                raise UsageError(f"--check: {self.read_table} is not a table of {use_case.name} "
                                 f"({', '.join(tables)})")

    def _check_against_alone(self) -> None:
        """--check-against takes no other reference and no --sql; its file is opened (and refused in one line)
        before anything is read."""
        if self.check:
            raise UsageError("--check-against compares the table with a file, --check with a TSBS data set: give "
                             "one of them")
        if self.sql is not None:
            raise UsageError("--check-against compares a table with the file that filled it; --sql's answer is no "
                             "table")
        defaults = ReadOptions()
        tsbs_flags = [field for field in dataclasses.fields(DataSetRowsOptions)
                      if getattr(self, field.name) != getattr(defaults, field.name)]
        if tsbs_flags:
            raise UsageError(f"--check-against compares with the user's file, not a TSBS data set: leave out "
                             f"{', '.join(flag_name(field) for field in tsbs_flags)}")
        self.check_file  # opened now: a missing or corrupt file is refused before any server is asked


@command
def run_read(options: ReadOptions, out: TextIO | None = None) -> RunRecord:
    """Read; returns the record (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout
    options.check_values()
    run = Run(RunRecord(kind="read", mode=options.mode, parameters=dataclasses.asdict(options), seed=options.seed),
              options, out)
    labels = {"protocol": str(options.protocol), "workers": str(options.workers), "kind": "read"}
    metrics = ReadRunMetrics(run.record.run_id, labels, options.metrics_port, options.metrics_linger,
                             workers=options.workers, host=options.metrics_host)
    with metered(run, metrics), sampled(options, run, metrics.phases), profiled(options, run):
        _read_phase(options, run, metrics)
    return run.record


def _plan(options: ReadOptions, questdb: QuestDBSql) -> ReadPlan:
    if options.sql is not None:
        return plan_sql(questdb, options.sql)
    start, end = options.time_range_ns()
    return plan_table(questdb, options.read_table, start, end, options.workers)


def _checker(options: ReadOptions, run: Run) -> DataSetCheck:
    """The comparison with the data set, which is generated as the comparison asks for it."""
    use_case = use_cases.get(options.use_case)
    spec = options.dataset()
    table = options.read_table
    renamed = table if use_case.renamable_table else None
    schema = next(schema for schema in use_case.schemas(options.fields, renamed) if schema.table == table)
    chunks = use_case.chunks(spec, use_case.default_chunk_rows, options.fields, SymbolDtype.category, renamed)
    frames = (chunk[table] for chunk in chunks if table in chunk)
    run.say(f"Check: against {use_case.name}'s table {table} of seed {spec.seed}, scale {spec.scale}, "
            f"{spec.row_count} rows")
    start, end = options.time_range_ns()
    return DataSetCheck(frames, schema, spec.interval_ns, start, end)


def _file_checker(options: ReadOptions, run: Run, plan: ReadPlan) -> OrderedCheck | None:
    """The comparison with the user's file (--check-against), its columns and rows checked before the read."""
    if options.check_against is None:
        return None
    start, end = options.time_range_ns()
    checker = open_check(options.check_file, plan, options.protocol, start, end, options.chunk_rows)
    for note in checker.notes:
        run.say(note)
    return checker


def _read_phase(options: ReadOptions, run: Run, metrics: ReadRunMetrics) -> None:
    questdb = options.questdb_sql()
    questdb.ping()
    run.record.server = {"questdb_version": questdb.server_version()}
    plan = _plan(options, questdb)
    checker = _checker(options, run) if options.check else _file_checker(options, run, plan)
    endpoint = Endpoint(options.host, options.http_port, options.pg_port, options.pg_login(), options.http_login(),
                        options.pg_tls() if options.protocol in PGWIRE_PROTOCOLS else PgTls(), questdb.tls)
    count = f" ({plan.expected_rows} rows)" if plan.expected_rows is not None else ""
    run.say(f"Reading {plan.what}{count} over {options.protocol} with {options.workers} worker(s), chunks of "
            f"{options.chunk_rows} rows")
    prepare_reader(options.protocol, endpoint)  # its driver's import (and a check) is not the read's time
    progress = metrics.new_phase("read", options.workers)
    rows = chunks = 0
    first_rows = None
    check_error = None
    cpu_started, started = time.process_time(), time.perf_counter()
    peak = PeakRss()
    try:
        with peak, ProgressPrinter(progress, plan.expected_rows or 0, options.reporting_period, run.out), \
                recorded_if_interrupted(run, progress):
            for frame in read_frames(plan, options.protocol, endpoint, options.chunk_rows, progress):
                if first_rows is None:
                    first_rows = time.perf_counter() - started
                    metrics.first_rows_seconds.labels(run.record.run_id).set(first_rows)
                rows += len(frame)
                chunks += 1
                if checker is not None:
                    checker.feed(frame)
                del frame  # the next chunk never meets this one in memory
            if checker is not None:
                checker.finish()
    except CheckFailed as failure:
        check_error = str(failure)
        raise
    finally:
        phase = progress.record(time.perf_counter() - started, time.process_time() - cpu_started)
        phase.rows = rows
        run.phase("read", None, phase)
        run.record.read = ReadFigures(
            protocol=str(options.protocol), workers=options.workers, chunk_rows=options.chunk_rows, chunks=chunks,
            expected_rows=plan.expected_rows, first_rows_seconds=None if first_rows is None else round(first_rows, 6),
            peak_rss_bytes=peak.peak, checked_rows=None if checker is None else checker.checked,
            check_error=check_error)
    _report(run, phase, run.record.read)
    if plan.expected_rows is not None and rows != plan.expected_rows:
        raise RunError(f"read {rows} rows of {plan.what}; the server counted {plan.expected_rows} before the read")
    if options.check_against is not None:
        run.say(f"Check: every value of {checker.checked} rows equal to {options.check_against} "
                f"({len(checker.kinds)} columns)")
    elif checker is not None:
        run.say(f"Checked: all {checker.checked} rows equal the data set.")


def _report(run: Run, phase, figures: ReadFigures) -> None:
    received = (f"  Received: {phase.bytes / MIB:.2f} MiB: {phase.mib_per_second:.2f} MiB/sec." if phase.bytes
                else "  Received: bytes not countable over this protocol.")
    cpu = phase.client_cpu_seconds or 0.0
    per_million = f", {cpu / phase.rows * 1e6:.2f}s per million rows" if phase.rows else ""
    run.say(f"Read:\n  {phase.rows} rows in {phase.seconds:.2f}s: {phase.rows_per_second / 1e6:.2f} mil rows/sec.\n"
            f"{received}\n"
            f"  First rows after {figures.first_rows_seconds or 0:.3f}s; {figures.chunks} DataFrames; peak RSS "
            f"{figures.peak_rss_bytes / MIB:.0f} MiB.\n"
            f"  Client CPU: {cpu:.2f}s: {phase.client_cpu_cores or 0:.2f} cores busy on average{per_million}.")
