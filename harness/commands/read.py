"""The ``read`` command: a QuestDB table (whole, ``--from``/``--to``, or ``--sql``) read into pandas (over QWP also
into Arrow or Polars, ``--frame``) over one protocol, measured (rows/s, MiB/s received, client CPU, time to the
first rows, peak RSS), optionally checked against its TSBS data set (``--check``) or the user's file that filled it
(``--check-against``; the file is also read by DuckDB, whose reading must agree with the one compared:
``harness.own_data.cross_check``), and recorded. ``run_read(ReadOptions(...))`` is what ``python -m harness read``
calls and what tests and benchmarks call directly.

The comparison of ``--check`` and ``--check-against`` runs in the consumer as the frames arrive, so its CPU is
in the client's figures: measure without it.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from harness.errors import RunError, UsageError
from harness.frames.kinds import FrameKind
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
from harness.own_data.partitioning import MapLimit
from harness.own_data.source import default_table
from harness.questdb.features import detect
from harness.questdb.http import QuestDBSql
from harness.questdb.tls import PgTls
from harness.read.check import CheckFailed, DataSetCheck, OrderedCheck
from harness.read.check_against import open_check
from harness.read.partitioned import partitioning_said
from harness.read.connection import Endpoint
from harness.read.loop import read_frames
from harness.read.protocols import PGWIRE_PROTOCOLS, ReadProtocol, frame_kinds, needed_features, prepare_reader
from harness.read.slices import ReadSlices, read_slices
from harness.records.run_record import ReadFigures, RunRecord
from harness.report.tables import MIB
from harness.run.plan import Metrics
from harness.run.session import Lifecycle, Run, recorded_if_interrupted, session
from harness.telemetry.metrics import ReadRunMetrics
from harness.telemetry.peak_rss import PeakRss
from harness.telemetry.phase import PhaseRecord
from harness.telemetry.progress import ProgressPrinter
from harness.tsbs import use_cases
from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.params import DatasetSpec, parse_rfc3339_ns
from harness.tsbs.use_case import UseCase

# A row reader's batch of Records or tuples holds each value as a Python object (about 1 KB a cpu row) until it
# is a DataFrame: 50,000 rows keep a worker's batch near 50 MB.
DEFAULT_CHUNK_ROWS = 50_000


@dataclass
class ReadOptions(MetricsOptions, ProgressOptions, DataSetRowsOptions, RecordOptions, SamplingOptions, PgwireOptions,
                  EndpointOptions, FileReadingOptions, ProfileOptions, CommandOptions):
    """Every option of a read. The data set flags name, for ``--check``, the data set the table holds (as
    ``bench`` took them)."""

    protocol: ReadProtocol = option(ReadProtocol.asyncpg, "asyncpg, psycopg or connectorx (PGWire), http-csv or "
                                                          "http-parquet (HTTP /exp), qwp (the questdb client's "
                                                          "QuestDB.query(), columnar over WebSocket on the HTTP "
                                                          "port: QuestDB 10+).")
    frame: FrameKind = option(FrameKind.pandas, "The kind of frame the read hands over: pandas (NumPy-backed), "
                                                "pandas-arrow (Arrow-backed columns), arrow (a pyarrow Table) or "
                                                "polars; qwp hands over every kind, the other protocols pandas.")
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
        frame = "" if self.frame == FrameKind.pandas else f"-{self.frame}"
        return f"read-{self.protocol}{frame}-{self.workers}w"

    def time_range_ns(self) -> tuple[int | None, int | None]:
        start = None if self.from_time is None else parse_rfc3339_ns(self.from_time, "from_time")
        end = None if self.to_time is None else parse_rfc3339_ns(self.to_time, "to_time")
        if start is not None and end is not None and end <= start:
            raise UsageError(f"--to {self.to_time} must be after --from {self.from_time}")
        return start, end

    def check_values(self) -> None:
        super().check_values()
        self.time_range_ns()
        if self.frame not in frame_kinds(self.protocol):
            takers = [str(protocol) for protocol in ReadProtocol if self.frame in frame_kinds(protocol)]
            raise UsageError(f"--frame {self.frame}: --protocol {self.protocol} hands over pandas frames only; "
                             f"{self.frame} frames come over --protocol {' or '.join(takers)}")
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
            table = self.table or use_case.tables()[0]
            if table not in tables:
                raise UsageError(f"--check: {table} is not a table of {use_case.name} ({', '.join(tables)})")

    def _check_against_alone(self) -> None:
        """--check-against takes no other reference and no --sql."""
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

    def rehearse(self) -> None:
        """A --dry-run also opens --check-against's file (a missing or corrupt one refused in one line)."""
        self.plan()

    def plan(self) -> ReadPlan:
        """The read these options ask for (checked at the door already): --check-against's file opened (a missing
        or corrupt one refused here, before any server is asked), the table and time range resolved."""
        check_file = None if self.check_against is None else DataFile(self.check_against, parameter="check_against",
                                                                     reading=self.reading())
        use_case = use_cases.get(self.use_case)
        table = self.table or (default_table(check_file) if check_file is not None else use_case.tables()[0])
        data_set = DataSetToCheck(use_case, self.dataset(), self.fields,
                                  table if use_case.renamable_table else None) if self.check else None
        start, end = self.time_range_ns()
        # PGWire's TLS only where the read speaks PGWire; HTTP's the harness's own requests'.
        endpoint = dataclasses.replace(self.endpoint(), pg_tls=self.pg_tls() if self.protocol in PGWIRE_PROTOCOLS
                                       else PgTls())
        return ReadPlan(self.protocol, self.frame, self.workers, self.chunk_rows, endpoint, self.sql, table, start, end,
                        data_set, check_file, self.partition_by, self.map_limit(), self.reporting_period,
                        Lifecycle(self.recording(), self.spelling(), self.sampling(), self.profiling()),
                        Metrics(self.metrics_port, self.metrics_linger, self.metrics_host), self.mode,
                        dataclasses.asdict(self), self.seed)


@dataclass(frozen=True)
class DataSetToCheck:
    """The TSBS data set ``--check`` compares a table with: its use case, its spec, its fields, and the name of the
    renamable table it was sent under (None: the use case's own)."""

    use_case: UseCase
    spec: DatasetSpec
    fields: FieldType
    renamed: str | None

    def checker(self, table: str, start_ns: int | None, end_ns: int | None) -> DataSetCheck:
        """The comparison with the data set, which is generated as the comparison asks for it."""
        use_case, spec = self.use_case, self.spec
        schema = next(schema for schema in use_case.schemas(self.fields, self.renamed) if schema.table == table)
        chunks = use_case.chunks(spec, use_case.default_chunk_rows, self.fields, SymbolDtype.category, self.renamed)
        frames = (chunk[table] for chunk in chunks if table in chunk)
        return DataSetCheck(frames, schema, spec.interval_ns, start_ns, end_ns)

    def described(self, table: str) -> str:
        spec = self.spec
        return (f"Check: against {self.use_case.name}'s table {table} of seed {spec.seed}, scale {spec.scale}, "
                f"{spec.row_count} rows")


@dataclass(frozen=True)
class ReadPlan:
    """A read resolved: over ``protocol`` with ``workers`` connections in frames of ``frame`` of ``chunk_rows`` rows,
    from the server at ``endpoint``, the answer to ``sql`` or ``table`` (``[start_ns, end_ns)`` of it), compared with
    a TSBS data set (``data_set``) or the user's file (``check_file``) where asked; and what the run records and
    measures."""

    protocol: ReadProtocol
    frame: FrameKind
    workers: int
    chunk_rows: int
    endpoint: Endpoint
    sql: str | None
    table: str
    start_ns: int | None
    end_ns: int | None
    data_set: DataSetToCheck | None
    check_file: DataFile | None
    # The table's partitioning the check expects (--partition-by; None: the data's choice, within ``map_limit``).
    partition_by: str | None
    map_limit: MapLimit
    progress_seconds: float
    lifecycle: Lifecycle
    metrics: Metrics
    mode: str
    parameters: dict
    seed: int | None

    def run_metrics(self, run_id: str) -> ReadRunMetrics:
        """The read's metrics."""
        labels = {"protocol": str(self.protocol), "workers": str(self.workers), "kind": "read"}
        return ReadRunMetrics(run_id, labels, self.metrics.port, self.metrics.linger_seconds, workers=self.workers,
                              host=self.metrics.host)

    def checker(self, questdb: QuestDBSql, slices: ReadSlices, say) -> tuple[DataSetCheck | OrderedCheck | None,
                                                                             dict | None]:
        """The comparison the read makes as the frames arrive (None: none) and what DuckDB's reading of the file
        agreed on (None: no file): with the data set, or with the user's file (its columns and rows checked before
        the read; the file read by DuckDB too, its reading held against the one the check compares with,
        ``harness.own_data.cross_check``: a disagreement fails the run before the table is read)."""
        if self.data_set is not None:
            say(self.data_set.described(self.table))
            return self.data_set.checker(self.table, self.start_ns, self.end_ns), None
        if self.check_file is None:
            return None, None
        from harness.own_data.cross_check import cross_check  # DuckDB: only for a read checked against a file

        checker = open_check(self.check_file, slices, self.protocol, self.start_ns, self.end_ns, self.chunk_rows)
        for note in checker.notes:
            say(note)
        say(partitioning_said(questdb, self.table, self.check_file, checker.pairings[0].column, self.partition_by,
                              self.map_limit))
        check = cross_check(self.check_file, checker.pairings[0].column)
        spelling = self.lifecycle.spelling
        for line in check.lines():
            say(spelling.text(line))
        if check.differences:
            raise CheckFailed(check.refusal(self.check_file.name))
        return checker, spelling.values(check.stored())


@command
def run_read(options: ReadOptions, out: TextIO | None = None) -> RunRecord:
    """Read; returns the record (also written as JSON). Raises UsageError/RunError."""
    plan = options.plan()
    record = RunRecord(kind="read", mode=plan.mode, parameters=plan.parameters, seed=plan.seed)
    with session(record, plan.lifecycle, out or sys.stdout, plan.run_metrics) as run:
        read_phase(plan, run)
    return run.record


def read_phase(plan: ReadPlan, run: Run) -> None:
    """The read: the server asked what it holds, every DataFrame read (and compared), the figures recorded and
    said; a shortfall against the server's count, or a value that differs, fails the run."""
    questdb = plan.endpoint.sql()
    questdb.ping()
    run.record.server = {"questdb_version": questdb.server_version()}
    if needed := needed_features(plan.protocol):
        if lacking := detect(questdb).lacking(needed, f"{plan.endpoint.host}:{plan.endpoint.http_port}"):
            raise UsageError(lacking)
    prepare_reader(plan.protocol, plan.endpoint, plan.frame)  # its driver's import (and a check): not the read's time
    slices = read_slices(questdb, plan.sql, plan.table, plan.start_ns, plan.end_ns, plan.workers)
    checker, cross_checked = plan.checker(questdb, slices, run.say)
    count = f" ({slices.expected_rows} rows)" if slices.expected_rows is not None else ""
    frames = "" if plan.frame == FrameKind.pandas else f" into {plan.frame} frames"
    run.say(f"Reading {slices.what}{count} over {plan.protocol}{frames} with {plan.workers} worker(s), chunks of "
            f"{plan.chunk_rows} rows")
    figures = _read_frames(plan, slices, checker, run, cross_checked)
    if slices.expected_rows is not None and figures.rows != slices.expected_rows:
        raise RunError(f"read {figures.rows} rows of {slices.what}; the server counted {slices.expected_rows} before "
                       f"the read")
    if plan.check_file is not None:
        run.say(f"Check: every value of {checker.checked} rows equal to {plan.check_file.name} "
                f"({len(checker.kinds)} columns)")
    elif checker is not None:
        run.say(f"Checked: all {checker.checked} rows equal the data set.")


def _read_frames(plan: ReadPlan, slices: ReadSlices, checker, run: Run, cross_checked: dict | None = None
                 ) -> PhaseRecord:
    """Every DataFrame of the answer read, each compared as it arrives; the phase and the read's figures recorded
    however it ends, and said when it ended well."""
    metrics: ReadRunMetrics = run.metrics
    progress = metrics.new_phase("read", plan.workers)
    rows = chunks = 0
    first_rows = check_error = None
    cpu_started, started = time.process_time(), time.perf_counter()
    peak = PeakRss()
    try:
        # A generator: nothing is read until the loop asks.
        frames = read_frames(slices, plan.protocol, plan.endpoint, plan.chunk_rows, progress, plan.frame)
        with peak, ProgressPrinter(progress, slices.expected_rows or 0, plan.progress_seconds, run.out), \
                recorded_if_interrupted(run, progress):
            for frame in frames:
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
            protocol=str(plan.protocol), frame=str(plan.frame), workers=plan.workers, chunk_rows=plan.chunk_rows,
            chunks=chunks, expected_rows=slices.expected_rows,
            first_rows_seconds=None if first_rows is None else round(first_rows, 6), peak_rss_bytes=peak.peak,
            checked_rows=None if checker is None else checker.checked, check_error=check_error,
            cross_check=cross_checked)
    _report(run, phase, run.record.read)
    return phase


# What the report calls the frames of each kind.
_FRAMES = {FrameKind.pandas: "DataFrames", FrameKind.pandas_arrow: "DataFrames (Arrow-backed)",
           FrameKind.arrow: "Arrow tables", FrameKind.polars: "Polars DataFrames"}


def _report(run: Run, phase, figures: ReadFigures) -> None:
    received = (f"  Received: {phase.bytes / MIB:.2f} MiB: {phase.mib_per_second:.2f} MiB/sec." if phase.bytes
                else "  Received: bytes not countable over this protocol.")
    cpu = phase.client_cpu_seconds or 0.0
    per_million = f", {cpu / phase.rows * 1e6:.2f}s per million rows" if phase.rows else ""
    run.say(f"Read:\n  {phase.rows} rows in {phase.seconds:.2f}s: {phase.rows_per_second / 1e6:.2f} mil rows/sec.\n"
            f"{received}\n"
            f"  First rows after {figures.first_rows_seconds or 0:.3f}s; {figures.chunks} {_FRAMES[figures.frame]}; "
            f"peak RSS {figures.peak_rss_bytes / MIB:.0f} MiB.\n"
            f"  Client CPU: {cpu:.2f}s: {phase.client_cpu_cores or 0:.2f} cores busy on average{per_million}.")
