"""A benchmark run, phase by phase: prepare -> generate -> serialize -> send -> validate -> record.

``run_bench(BenchOptions(...))`` is what ``python -m harness bench`` calls and what tests and notebooks
call directly; ``run_replay(ReplayOptions(...))`` sends an ILP file raw over TCP. Both print the original
py-tsbs-benchmark's report (``Serialized:`` / ``Sent:``), read the row count back from the server, and
always leave a results record, for failed and interrupted runs too. Each phase is one small function;
preparing the table and validating the count are shared by every kind of run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import itertools
import threading
import os
import pprint
import re
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

import pandas as pd

from harness.errors import RunError, UsageError
from harness.ingest import raw
from harness.ingest.ilp import Chunk, write_ilp
from harness.ingest.ordered_write import default_workers
from harness.ingest.phases import (
    ChunkStream, PhaseFailed, SendWorker, SerializeWorker, deal_round_robin, run_phase,
)
from harness.ingest.senders import SenderTarget, check_listening, parse_conf, redact_conf
from harness.metrics import RunMetrics
from harness.options import (
    FieldType, Op, ProtocolVersion, SymbolDtype, Target, Transport, check_options, coerce_choices, option,
)
from harness.phase import PhaseProgress, PhaseRecord
from harness.progress import ProgressPrinter
from harness.report import write_report
from harness.results import (
    RunRecord, TableCount, Validation, format_phase, load_results, reserve_results_path, write_results,
)
from harness.sql import QuestDBSql
from harness.timeseries import Sampler, listening_process
from harness.tsbs import cpu_only, devops, devops_schema, params
from harness.tsbs.schema import TableSchema

DEFAULT_CHUNK_ROWS = 10_000  # the original benchmark's --worker-chunk-row-count
# Exactly-once runs let the client itself retry a failed request this long (a blip), and re-send the chunk
# on a new connection after that, counting it, until --retry-timeout.
CLIENT_RETRY_TIMEOUT_MS = 2_000


@dataclass
class EndpointOptions:
    """The server's address and where the run's record goes: what every kind of run (ingest or queries)
    shares."""

    host: str = option("localhost", "Server host.")
    http_port: int = option(9000, "HTTP port (ILP/HTTP, /exec: DDL, validation and HTTP queries).", min=1,
                            max=65535)
    results: str | None = option(None, "Results JSON path. Default: results/<UTC time>-<mode>.json.")
    results_dir: str = option("results", "Folder of default results paths.", cli=False)
    report: bool = option(False, "Also write the HTML run report beside the results file (as `harness report` "
                                 "does).", flags=("--report",))


@dataclass
class ServerOptions(EndpointOptions):
    """Where an ingest run sends and the table it fills."""

    target: Target = option(Target.questdb, "questdb (DDL and validation) or sink (a no-op socat sink: no DDL, "
                                            "no validation).")
    ilp_port: int = option(9009, "ILP/TCP port.", min=1, max=65535)
    table: str = option(cpu_only.TABLE_NAME, "Table name.")
    keep_table: bool = option(False, "Do not drop the table: append, after checking its schema.",
                              flags=("--keep-table",))
    validation_query_timeout: float = option(120.0, "Seconds to wait for all rows to become visible.", min=0,
                                             min_open=True)
    sample_interval: float = option(1.0, "Seconds between the samples of the record's time series (rows, bytes, "
                                         "client CPU, server WAL); 0: none.", min=0)
    server_metrics_port: int = option(9003, "QuestDB's /metrics port (its min HTTP server), sampled for the WAL's "
                                            "written and applied rows and apply lag.", min=1, max=65535)


@dataclass
class BenchOptions(ServerOptions):
    """Every option of a benchmark run; the defaults are the original benchmark's."""

    use_case: str = option("cpu-only", "TSBS use case: cpu-only (one table) or devops (nine measurement tables).")
    scale: int = option(4000, "Number of hosts (TSBS --scale).", min=1)
    seed: int | None = option(None, "PRNG seed. Default: random, printed and recorded.")
    row_count: int = option(10_000_000, "Rows to generate (ignored when --timestamp-end is given).", min=1)
    timestamp_start: str = option(params.DEFAULT_TIMESTAMP_START, "First epoch (RFC 3339).")
    timestamp_end: str | None = option(None, "End of a TSBS time range instead of --row-count.")
    log_interval: str = option(params.DEFAULT_LOG_INTERVAL, "Time between epochs (Go duration).")
    fields: FieldType = option(FieldType.double, "double (10 DOUBLE columns) or long (TSBS's integers, LONG).")
    symbol_dtype: SymbolDtype = option(SymbolDtype.category, "Tag column dtype.")
    workers: int | None = option(None, "Threads, each with its own buffer/connection. Default: one, "
                                       "single-threaded.", min=1)
    worker_chunk_row_count: int = option(DEFAULT_CHUNK_ROWS, "Rows per chunk (dealt round-robin to workers; one "
                                                             "flush each).", min=1)
    send: bool = option(False, "After serializing, send to the target.", flags=("--send",))
    stream: bool = option(False, "Generate chunks while sending (bounded memory); skips the serialize-only phase "
                                 "when sending.", flags=("--stream",))
    op: Op = option(Op.dataframe, "dataframe (Sender.dataframe), iterrows or itertuples (Sender.row per row).")
    transport: Transport = option(Transport.tcp, "ILP transport.")
    protocol_version: ProtocolVersion = option(ProtocolVersion.auto, "ILP protocol version: 1 (text), 2 (binary "
                                                                     "doubles), 3, or auto.")
    conf: str | None = option(None, "A full client configuration string (auth, TLS, auto-flush...); overrides "
                                    "--transport/--protocol-version/--ilp-port for sending. Secrets are recorded "
                                    "as ***.")
    exactly_once: bool = option(False, "Every row exactly once, whatever the server does: HTTP only; the table "
                                       "deduplicates, each chunk is one transaction, and a chunk whose flush "
                                       "failed is sent again until --retry-timeout.", flags=("--exactly-once",))
    retry_timeout: float = option(60.0, "With --exactly-once: seconds a chunk may keep failing (server down) "
                                        "before the run fails.", min=0, min_open=True)
    flush_timeout: float = option(60.0, "Seconds one flush may take before the run fails (a server that stopped "
                                        "reading: ILP over TCP has no timeout of its own).", min=0, min_open=True)
    resume: str | None = option(None, "Continue the --exactly-once run this results file records (it died: client "
                                      "killed, machine rebooted) from the last chunk the server acknowledged; "
                                      "every other option comes from the file.")
    first_chunk: int = option(0, "Chunks of the data set already in the table (set by --resume).", cli=False)
    write_ilp: str | None = option(None, "Also write the serialized ILP to this file (not timed).")
    reporting_period: float = option(10.0, "Seconds between progress lines (0: none).", min=0)
    metrics_port: int | None = option(None, "Serve Prometheus metrics on this port during the run.", min=1,
                                      max=65535)
    metrics_linger: float = option(0.0, "Seconds to keep serving metrics after the run, for a final scrape.",
                                   min=0)
    metrics_host: str | None = option(None, "Address the metrics endpoint binds (default: $HARNESS_METRICS_HOST, "
                                            "else 127.0.0.1). 0.0.0.0 shows the run to the whole network.")
    verbose: bool = option(False, "Print every parameter before the run.", flags=("--verbose",))

    def __post_init__(self) -> None:
        coerce_choices(self)

    @property
    def sender_transport(self) -> str:
        """The transport senders use: the scheme of ``conf`` when given (it wins), else ``transport``."""
        return parse_conf(self.conf)[0] if self.conf is not None else str(self.transport)

    @property
    def mode(self) -> str:
        """What the run does, in a few words; it also names the default results file."""
        kind = ("sink" if self.target == Target.sink else "send") if self.send else "serialize"
        threads = f"{self.workers}w" if self.workers else "1t"
        use_case = "" if self.use_case == "cpu-only" else f"{self.use_case}-"
        return f"{use_case}{kind}-{self.op}-{self.fields}-{threads}"

    def check(self) -> None:
        check_options(self)
        if self.op != Op.dataframe and self.workers is not None:
            raise UsageError(f"--op {self.op} is the single-threaded row-by-row baseline: it takes no --workers")
        if self.target == Target.sink and self.sender_transport != "tcp":
            raise UsageError("--target sink takes ILP over TCP only (the sink never answers HTTP)")
        cpu_only.check_frame_options(self.worker_chunk_row_count, self.fields, self.symbol_dtype)
        if self.use_case == devops.USE_CASE:
            check_devops_options(self)
        else:
            cpu_only.check_memory(self.scale, min(self.worker_chunk_row_count, self.row_count))
        if self.write_ilp is not None:
            folder = os.path.dirname(os.path.abspath(self.write_ilp))
            if os.path.isdir(self.write_ilp) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
                raise UsageError(f"--write-ilp: cannot write {self.write_ilp}")
        if self.exactly_once and (self.sender_transport != "http" or self.target != Target.questdb):
            raise UsageError("--exactly-once needs --transport http to QuestDB: ILP over TCP has no "
                             "acknowledgements, so a chunk's fate after a failure is unknowable")

    def dataset(self) -> params.DatasetSpec:
        return params.make_spec(use_case=self.use_case, seed=self.seed, scale=self.scale,
                                timestamp_start=self.timestamp_start,
                                timestamp_end=self.timestamp_end, log_interval=self.log_interval,
                                row_limit=None if self.timestamp_end else self.row_count)

    def chunks(self, spec: params.DatasetSpec) -> Iterator[Chunk]:
        """The data set in chunks of ``worker_chunk_row_count`` rows, each mapping its table to its rows."""
        if self.use_case == devops.USE_CASE:
            chunks = devops.chunks(spec, self.worker_chunk_row_count, self.fields, self.symbol_dtype)
        else:
            chunks = cpu_only.chunks(spec, self.worker_chunk_row_count, self.fields, self.symbol_dtype, self.table)
        # The chunks before first_chunk are generated all the same: later ones depend on the PRNG's state.
        return itertools.islice(chunks, self.first_chunk, None)

    def schemas(self) -> list[TableSchema]:
        if self.use_case == devops.USE_CASE:
            return devops_schema.schemas(self.fields)
        return [cpu_only.schema(self.fields, self.table)]

    def table_rows(self, spec: params.DatasetSpec) -> dict[str, int]:
        """Rows of the whole data set per table."""
        if self.use_case == devops.USE_CASE:
            return dict(zip(devops_schema.TABLES, devops.table_rows_before(spec, spec.row_count)))
        return {self.table: spec.row_count}


def check_devops_options(options: BenchOptions) -> None:
    """What makes no sense for devops's nine tables, refused in one line."""
    if options.table != cpu_only.TABLE_NAME:
        raise UsageError("--table names cpu-only's one table; devops writes its nine measurement tables "
                         f"({', '.join(devops_schema.TABLES)})")
    if options.op != Op.dataframe:
        raise UsageError(f"--op {options.op} is cpu-only's row-by-row baseline; devops sends with --op dataframe")
    devops.check_memory(options.scale, min(options.worker_chunk_row_count, options.row_count))


@dataclass
class ReplayOptions(ServerOptions):
    """An ILP file (ours or tsbs_generate_data's, gzip'd or not) sent raw over TCP."""

    path: str | None = option(None, "ILP file (ours or tsbs_generate_data's; .gz is unzipped).", argument=True)
    write_size: int = option(raw.DEFAULT_WRITE_SIZE, "Bytes per socket write (whole lines).", min=1)
    workers: int = option(1, "Connections, one thread each; the file's pieces are dealt round-robin (as TSBS's "
                             "loader deals batches to its workers).", min=1)

    def __post_init__(self) -> None:
        coerce_choices(self)

    def check(self) -> None:
        check_options(self)
        if not self.path or not os.path.isfile(self.path) or not os.access(self.path, os.R_OK):
            raise UsageError(f"cannot read ILP file {self.path!r}")


class Run:
    """One run's record and output: ``say`` prints, ``phase`` records and prints a phase, and leaving the
    ``with`` block writes the record, ``ok``, or ``failed``/``interrupted`` with the error (re-raised)."""

    def __init__(self, record: RunRecord, options: EndpointOptions, out: TextIO):
        self.record = record
        self.options = options
        self.out = out
        reserve_results_path(record, options.results, options.results_dir)

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def phase(self, name: str, title: str | None, phase: PhaseRecord) -> None:
        self.record.phases[name] = phase
        if title:
            self.say(format_phase(title, phase))
            if phase.client_cpu_seconds is not None:
                self.say(f"  Client CPU: {phase.client_cpu_seconds:.2f}s: {phase.client_cpu_cores:.2f} cores "
                         f"busy on average.")

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if error is None:
            self.record.status = "ok"
        elif isinstance(error, KeyboardInterrupt):
            self.record.status, self.record.error = "interrupted", "interrupted"
        else:
            self.record.status = "failed"
            self.record.error = str(error) if isinstance(error, (RunError, UsageError)) else \
                f"{type(error).__name__}: {error}"
        try:
            path = write_results(self.record)
        except OSError as exc:
            failure = RunError(f"cannot write the results file {self.record.path}: {exc.strerror or exc}")
            if error is None:
                raise failure from None
            self.say(f"error: {failure}")  # the run's own error is the one raised
            return
        self.say(f"Results: {path}")
        if self.options.report:
            try:
                self.say(f"Report: {write_report([self.record], path.with_suffix('.html'))}")
            except UsageError as exc:
                self.say(f"error: {exc}")  # the run's own outcome stands


def bench_parameters(options: BenchOptions, spec: params.DatasetSpec, target: SenderTarget) -> dict:
    values = dataclasses.asdict(options)
    # What was really used: --conf wins over --transport and --protocol-version, and its secrets are never
    # recorded.
    values.update(target.used())
    if options.conf is not None:
        values["conf"] = redact_conf(options.conf)
    values.update(seed=spec.seed, row_count=spec.row_count, timestamp_start_ns=spec.start_ns,
                  interval_ns=spec.interval_ns)
    return values


def resumed_options(path: str) -> BenchOptions:
    """The options of the run recorded in ``path``, set to continue it where the server's acknowledgements
    end (``first_chunk``) into the same table and results file."""
    (record,) = load_results([path])
    parameters = record.parameters
    if record.kind != "bench" or not parameters.get("exactly_once"):
        raise UsageError(f"--resume: {path} is not an --exactly-once bench run: only such a run resumes exactly")
    if record.status == "ok":
        raise UsageError(f"--resume: the run in {path} finished: nothing to resume")
    if record.acknowledged_chunks is None:
        raise UsageError(f"--resume: {path} records no acknowledged chunks: the run never reached its send phase")
    if "***" in str(parameters.get("conf")):
        raise UsageError("--resume: the run used a --conf with secrets, which are never recorded")
    names = {field.name for field in dataclasses.fields(BenchOptions)} - {"resume", "results", "first_chunk"}
    values = {name: parameters[name] for name in names if name in parameters}
    values.update(seed=record.seed, keep_table=True, send=True, results=path, first_chunk=record.acknowledged_chunks)
    return BenchOptions(**values)


def run_bench(options: BenchOptions, out: TextIO | None = None) -> RunRecord:
    """Run one benchmark; returns its record (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout
    if options.resume is not None:
        options = resumed_options(options.resume)
    options.check()
    target = SenderTarget(options.transport, options.protocol_version, options.host, options.ilp_port,
                          options.http_port, options.conf,
                          CLIENT_RETRY_TIMEOUT_MS if options.exactly_once else None)
    spec = options.dataset()
    parameters = bench_parameters(options, spec, target)
    run = Run(RunRecord(kind="bench", mode=options.mode, parameters=parameters, seed=spec.seed), options, out)
    if options.verbose:
        run.say("Running with params:")
        run.say(pprint.pformat(dict(sorted(parameters.items())), indent=4))
    elif options.seed is None:
        run.say(f"seed: {spec.seed}")
    metrics = RunMetrics(run.record.run_id, _metric_labels(parameters), options.metrics_port,
                         options.metrics_linger, workers=options.workers or 1, host=options.metrics_host)
    with metered(run, metrics), sampled(options, run, metrics.phases):
        _bench_phases(options, spec, target, run, metrics)
    return run.record


@contextlib.contextmanager
def metered(run: Run, metrics: RunMetrics):
    """The block as one run: metrics served during it, its end (done or failed) in the metrics, the record
    written however it ends. The record is written (and "Results:" printed) before the metrics endpoint
    lingers: a watcher that waits for the run's end still finds the final counters served, and Prometheus
    gets its last scrape. An interrupted run does not linger: the user asked it to stop."""
    interrupted = False
    try:
        with run:
            try:
                metrics.start()
                yield
                metrics.set_phase("done")
            except BaseException as exc:
                interrupted = isinstance(exc, KeyboardInterrupt)
                metrics.set_phase("failed")
                metrics.error(type(exc).__name__)
                raise
    finally:
        metrics.close(linger=not interrupted)


@contextlib.contextmanager
def sampled(options: ServerOptions, run: Run, phases: dict[str, PhaseProgress]):
    """The run's time series (``--sample-interval``) over the block, kept in the record however it ends."""
    if options.sample_interval <= 0:
        yield
        return
    url = (None if options.target == Target.sink
           else f"http://{options.host}:{options.server_metrics_port}/metrics")
    # The server's CPU and memory where it is a process of this machine (not the sink: nothing to learn).
    local = options.target != Target.sink and options.host in ("localhost", "127.0.0.1", "::1")
    sampler = Sampler(phases, options.sample_interval, url,
                      server_process=listening_process(options.http_port) if local else None)
    run.record.timeseries = sampler.series
    with sampler:
        yield


def _metric_labels(parameters: dict) -> dict:
    """The run's info labels, from what the record says was used."""
    labels = {key: str(parameters[key]) for key in ("transport", "fields", "scale", "seed", "op", "target")}
    return {**labels, "workers": str(parameters["workers"] or 1), "protocol": str(parameters["protocol_version"])}


def _bench_phases(options: BenchOptions, spec: params.DatasetSpec, target: SenderTarget, run: Run,
                  metrics: RunMetrics) -> None:
    questdb, rows_before = None, {}
    if options.send:
        questdb, rows_before = connect(options, target, run, options.schemas(), options.exactly_once)
    threads = options.workers or 1
    chunks = None if options.stream else generate_phase(options, spec, run, metrics)

    def work():
        if chunks is not None:
            return deal_round_robin(chunks, threads, options.first_chunk)
        return ChunkStream(options.chunks(spec), threads, first_index=options.first_chunk)

    protocol_version = target.offline_protocol_version()
    if not (options.stream and options.send):
        serialize_phase(options, protocol_version, work(), run, metrics, spec.row_count)
    if options.write_ilp:
        write_ilp_phase(options, chunks if chunks is not None else options.chunks(spec), protocol_version, run)
    if options.send:
        sent, last_flush = send_phase(options, target, work(), run, metrics, spec.row_count, questdb)
        if questdb is not None:
            metrics.set_phase("validate")
            whole = options.table_rows(spec)
            expected = {table: before + sent.tables.get(table, whole[table]) for table, before in rows_before.items()}
            if options.first_chunk:  # resumed: chunks sent again replaced themselves; the whole set is there
                expected = _whole_data_set(options, spec)
            validate(questdb, options, expected, last_flush, run)


def _whole_data_set(options: BenchOptions, spec: params.DatasetSpec) -> dict[str, int]:
    return options.table_rows(spec)


def connect(options: ServerOptions, target: SenderTarget | None, run: Run, schemas: list[TableSchema],
            dedup: bool = False) -> tuple[QuestDBSql | None, dict[str, int]]:
    """Check the target answers before anything is sent; for QuestDB, record its version and prepare the
    tables. Returns the SQL client (None for the sink) and the rows each table already holds."""
    if options.target == Target.sink:
        if target is not None:
            check_listening(*target.endpoint(), "the no-op sink")
        return None, {}
    questdb = QuestDBSql(options.host, options.http_port)
    questdb.ping()
    if target is not None:
        check_listening(*target.endpoint(), f"QuestDB ILP over {target.scheme}")
    run.record.server = {"questdb_version": questdb.server_version()}
    return questdb, {schema.table: prepare_table(questdb, schema, options.keep_table, run, dedup)
                     for schema in schemas}


def prepare_table(questdb: QuestDBSql, schema: TableSchema, keep_table: bool, run: Run, dedup: bool = False) -> int:
    """Drop and create the table, or (``keep_table``) check the existing one; returns its row count."""
    table = schema.table
    exists = questdb.table_columns(table) is not None
    if keep_table and exists:
        questdb.check_schema(schema, dedup)
        rows = questdb.count(table)
        run.say(f"Kept table {table} ({rows} rows)")
        return rows
    if exists:
        questdb.drop_table(table)
        run.say(f"Dropped table {table}")
    elif not keep_table:
        run.say(f"Table {table} does not exist")
    questdb.create_table(schema, dedup)
    run.say(f"Created table {table}{' (deduplicating)' if dedup else ''}")
    return 0


def generate_phase(options: BenchOptions, spec: params.DatasetSpec, run: Run,
                   metrics: RunMetrics) -> list[pd.DataFrame]:
    """Every chunk in memory before the timed phases, as the original benchmark does."""
    metrics.set_phase("generate")
    cpu_started, started = time.process_time(), time.perf_counter()
    chunks = list(options.chunks(spec))
    seconds = time.perf_counter() - started
    run.phase("generate", None, PhaseRecord(spec.row_count, 0, seconds, time.process_time() - cpu_started))
    run.say(f"Generated:\n  {spec.row_count} rows in {seconds:.2f}s: {spec.row_count / seconds / 1e6:.2f} "
            f"mil rows/sec.")
    return chunks


def serialize_phase(options: BenchOptions, protocol_version: int, work, run: Run, metrics: RunMetrics,
                    total_rows: int) -> None:
    metrics.set_phase("serialize")
    threads = options.workers or 1
    progress = metrics.new_phase("serialize", threads)
    workers = [SerializeWorker(options.op, protocol_version) for _ in range(threads)]
    with ProgressPrinter(progress, total_rows, options.reporting_period, run.out), \
            _recorded_if_interrupted(run, progress):
        record = run_phase(progress, workers, work)
    run.phase("serialize", "Serialized", record)


def send_phase(options: BenchOptions, target: SenderTarget, work, run: Run, metrics: RunMetrics,
               total_rows: int, questdb: QuestDBSql | None = None) -> tuple[PhaseRecord, float]:
    """Send every chunk, one connection per worker; returns the phase and when its last flush ended."""
    metrics.set_phase("send")
    threads = options.workers or 1
    progress = metrics.new_phase("send", threads, options.first_chunk)
    senders: list[SendWorker] = []
    try:
        for index in range(threads):
            senders.append(SendWorker(options.op, target, progress, index,
                                      options.retry_timeout if options.exactly_once else None))
    except BaseException:
        for sender in senders:
            sender.close()
        raise
    try:
        with ProgressPrinter(progress, total_rows, options.reporting_period, run.out), \
                _recorded_if_interrupted(run, progress), _checkpoints(run, progress):
            record = run_phase(progress, senders, work, options.flush_timeout)
    except PhaseFailed as failure:
        run.phase("send", None, failure.record)
        # TCP has no acknowledgements: what was flushed is an upper bound of what the server received.
        bound = " (over TCP: an upper bound of what arrived)" if target.scheme.startswith("tcp") else ""
        server = f"; {server_state(questdb, options.schemas())}" if questdb is not None else ""
        unsent = total_rows - failure.record.rows
        # Without dedup a second attempt cannot fill the gap without doubling what arrived: say both sides.
        gap = "" if options.exactly_once or questdb is None else (
            f"; {unsent} of the {total_rows} rows were never sent: the table is incomplete, and sending the "
            f"data set again would double the rows that arrived (--exactly-once makes a re-send safe)")
        raise RunError(f"{failure}; {failure.record.rows} rows were sent (flushed) before the failure{bound}"
                       f"{gap}{server}") from None
    last_flush = time.perf_counter()
    run.phase("send", "Sent", record)
    if options.exactly_once:
        run.say(f"  Re-sent: {record.resent_chunks} chunks after failed flushes; "
                f"{record.outage_seconds:.1f}s spent waiting for the server.")
    return record, last_flush


CHECKPOINT_SECONDS = 1.0


@contextlib.contextmanager
def _checkpoints(run: Run, progress: PhaseProgress):
    """While sending, the record on disk says every second how many chunks the server has acknowledged,
    so that a run that dies (client killed, machine rebooted) can be resumed from there."""
    stop = threading.Event()

    def write() -> None:
        run.record.acknowledged_chunks = progress.done_below
        write_results(run.record)

    def loop() -> None:
        while not stop.wait(CHECKPOINT_SECONDS):
            write()

    thread = threading.Thread(target=loop, name="checkpoint", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        run.record.acknowledged_chunks = progress.done_below


def server_state(questdb: QuestDBSql, schemas: list[TableSchema]) -> str:
    """What the server says after a failed send: rows visible per table and, where its WAL apply stopped,
    the server's own reason (a full disk shows here, while the client only saw a reset connection)."""
    try:
        states = []
        for schema in schemas:
            wal = questdb.wal_state(schema.table) or {}
            reason = wal.get("errorMessage") or wal.get("errorTag")
            suspended = f", WAL apply suspended: {reason or 'no reason given'}" if wal.get("suspended") else ""
            states.append(f"{schema.table}: {questdb.count(schema.table)} rows visible{suspended}")
        return "server says " + "; ".join(states)
    except RunError as exc:
        return f"the server does not answer ({exc})"


@contextlib.contextmanager
def _recorded_if_interrupted(run: Run, progress: PhaseProgress):
    """An interrupted phase still goes into the record, with what it had done (for a send: the rows
    flushed, which over TCP is an upper bound of what the server received)."""
    try:
        yield
    except KeyboardInterrupt:
        run.phase(progress.phase, None, progress.record(time.perf_counter() - progress.started))
        raise


def write_ilp_phase(options: BenchOptions, chunks, protocol_version: int, run: Run) -> None:
    """Write the serialized ILP to a file, outside every timed phase."""
    try:
        with open(options.write_ilp, "wb", buffering=8 << 20) as out:
            rows, nbytes = write_ilp(chunks, out, protocol_version, default_workers())
    except OSError as exc:
        raise UsageError(f"--write-ilp: cannot write {options.write_ilp}: {exc.strerror}") from None
    run.say(f"Wrote ILP:\n  {rows} rows, {nbytes / 2**20:.2f} MiB to {options.write_ilp}")


def validate(questdb: QuestDBSql, options: ServerOptions, expected: dict[str, int], last_flush: float,
             run: Run) -> None:
    """Wait until each table holds exactly its expected rows; record the counts read back and the time
    it took after the last flush."""
    for table, rows in expected.items():
        questdb.wait_for_count(table, rows, options.validation_query_timeout)
    since_flush = time.perf_counter() - last_flush
    tables = {table: TableCount(rows, questdb.count(table)) for table, rows in expected.items()}
    run.record.validation = Validation(sum(expected.values()), sum(count.visible for count in tables.values()),
                                       round(since_flush, 3), tables if len(tables) > 1 else {})
    for table, rows in expected.items():
        run.say(f"Validated:\n  {rows} rows visible in table {table} {since_flush:.2f}s after the last flush.")


def _read_ilp_file(path: str) -> bytes:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as source:
            return source.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise UsageError(f"cannot read ILP file {path!r}: {exc}") from None


# One ILP line as TSBS writes it: measurement[,tag=value...] field=value[,field=value...] timestamp
_ILP_LINE = re.compile(rb"^[^ ,=]+(,[^ ,=]+=[^ ,]+)* [^ ,=]+=[^ ,]+(,[^ ,=]+=[^ ,]+)* \d+$")


def check_ilp(path: str, data: bytes) -> None:
    """Refuse, before any table is touched, a file that is empty or whose first or last line is not ILP."""
    if not data.strip():
        raise UsageError(f"ILP file {path!r} is empty")
    lines = data.rstrip(b"\n").split(b"\n", 1)
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    for name, line in (("first", lines[0]), ("last", last)):
        if not _ILP_LINE.match(line):
            raise UsageError(f"ILP file {path!r}: its {name} line is not ILP ({line[:80]!r})")
    if not data.endswith(b"\n"):
        raise UsageError(f"ILP file {path!r} does not end with a newline: truncated?")


def ilp_field_type(data: bytes) -> FieldType:
    """``long`` when the file's first line prints its first field as an integer (``usage_user=58i``, as
    TSBS does), else ``double``: the column type the replayed table needs."""
    first_field = data[: data.find(b"\n")].split(b" ")[1].split(b",")[0]
    return FieldType.long if first_field.endswith(b"i") else FieldType.double


def devops_file_rows(data: bytes) -> dict[str, int] | None:
    """Lines per measurement table of a devops ILP file (TSBS's or ours), or None when the file holds no
    devops-only measurement (a cpu-only file)."""
    counts = {table: data.count(b"\n" + table.encode() + b",") + data.startswith(table.encode() + b",")
              for table in devops_schema.TABLES}
    if not any(counts[table] for table in devops_schema.TABLES if table != cpu_only.TABLE_NAME):
        return None
    return counts


def run_replay(options: ReplayOptions, out: TextIO | None = None) -> RunRecord:
    """Send an ILP file raw over TCP, like the original bench_raw_ilp, then validate the count and record."""
    out = out or sys.stdout
    options.check()
    data = _read_ilp_file(options.path)
    check_ilp(options.path, data)
    rows = data.count(b"\n")
    fields = ilp_field_type(data)
    devops_rows = devops_file_rows(data)
    if devops_rows is not None and options.table != cpu_only.TABLE_NAME:
        raise UsageError(f"--table: {options.path} is a devops file: its lines name their nine tables")
    parameters = {**dataclasses.asdict(options), "fields": fields,
                  "use_case": "cpu-only" if devops_rows is None else devops.USE_CASE}
    mode = "replay" if options.workers == 1 else f"replay-{options.workers}w"
    run = Run(RunRecord(kind="replay", mode=mode, parameters=parameters), options, out)
    run.say(f"Replaying {options.path}: {rows} rows, {len(data) / 2**20:.2f} MiB")
    with run:
        schemas = [cpu_only.schema(fields, options.table)] if devops_rows is None else devops_schema.schemas(fields)
        questdb, rows_before = connect(options, None, run, schemas)
        progress = PhaseProgress("send", options.workers)
        with sampled(options, run, {"send": progress}):
            cpu_started = time.process_time()
            try:
                seconds = raw.send_raw(data, options.host, options.ilp_port, options.write_size, progress,
                                       options.workers)
            except raw.RawSendFailed as failure:
                raise RunError(f"{failure}; {failure.bytes_sent} bytes were written before the failure") from None
            last_write = time.perf_counter()
            run.phase("send", "Sent", progress.record(seconds, time.process_time() - cpu_started))
            if questdb is not None:
                new_rows = {options.table: rows} if devops_rows is None else devops_rows
                validate(questdb, options, {table: rows_before[table] + count for table, count in new_rows.items()},
                         last_write, run)
    return run.record
