"""The benchmark run: generate -> serialize -> send -> validate -> record, as one library call.

``run_bench(BenchOptions(...))`` is what ``python -m harness bench`` calls and what tests and notebooks
call directly. It prints the original py-tsbs-benchmark's report (``Serialized:`` / ``Sent:``), reads
the row count back from the server, and always leaves a results JSON file, for failed runs too.
``run_replay`` does the same for an ILP file sent raw over TCP.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import pprint
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from harness import __version__
from harness.errors import RunError, UsageError
from harness.ingest import raw
from harness.ingest.ilp import default_workers, write_ilp
from harness.ingest.phases import (
    OPS,
    ChunkStream,
    PhaseFailed,
    PhaseProgress,
    PhaseStats,
    SendWorker,
    SerializeWorker,
    deal_round_robin,
    run_phase,
)
from harness.ingest.senders import SenderTarget, check_listening, parse_conf, redact_conf
from harness.metrics import RunMetrics
from harness.progress import ProgressPrinter
from harness.questdb import QuestDB
from harness.results import PhaseResult, format_phase, system_info, write_results
from harness.tsbs import cpu_only, params

TARGETS = ("questdb", "sink")


@dataclass
class BenchOptions:
    """Every option of a benchmark run; the defaults are the original benchmark's."""

    scale: int = 4000
    seed: int | None = None
    row_count: int | None = 10_000_000
    timestamp_start: str = params.DEFAULT_TIMESTAMP_START
    timestamp_end: str | None = None
    log_interval: str = params.DEFAULT_LOG_INTERVAL
    fields: str = "double"
    symbol_dtype: str = "category"
    workers: int | None = None
    worker_chunk_row_count: int = 10_000
    send: bool = False
    stream: bool = False
    op: str = "dataframe"
    target: str = "questdb"
    transport: str = "tcp"
    protocol_version: str = "auto"
    conf: str | None = None
    host: str = "localhost"
    ilp_port: int = 9009
    http_port: int = 9000
    table: str = cpu_only.TABLE_NAME
    keep_table: bool = False
    validation_query_timeout: float = 120.0
    write_ilp: str | None = None
    reporting_period: float = 10.0
    results: str | None = None
    results_dir: str = "results"
    metrics_port: int | None = None
    metrics_linger: float = 0.0

    @property
    def sender_transport(self) -> str:
        """The transport senders use: the scheme of ``conf`` when given (it wins), else ``transport``."""
        return parse_conf(self.conf)[0] if self.conf is not None else self.transport

    def check(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise UsageError(f"--workers must be at least 1, got {self.workers}")
        if self.worker_chunk_row_count <= 0:
            raise UsageError(f"--worker-chunk-row-count must be positive, got {self.worker_chunk_row_count}")
        if self.op not in OPS:
            raise UsageError(f"--op must be one of {', '.join(OPS)}, got {self.op!r}")
        if self.op != "dataframe" and self.workers is not None:
            raise UsageError(f"--op {self.op} is the single-threaded row-by-row baseline: it takes no --workers")
        if self.target not in TARGETS:
            raise UsageError(f"--target must be one of {', '.join(TARGETS)}, got {self.target!r}")
        if self.target == "sink" and self.sender_transport != "tcp":
            raise UsageError("--target sink takes ILP over TCP only (the sink never answers HTTP)")
        if self.validation_query_timeout <= 0:
            raise UsageError(f"--validation-query-timeout must be positive, got {self.validation_query_timeout}")
        if self.reporting_period < 0:
            raise UsageError(f"--reporting-period must be >= 0, got {self.reporting_period}")
        if self.metrics_linger < 0:
            raise UsageError(f"--metrics-linger must be >= 0, got {self.metrics_linger}")
        cpu_only.check_frame_options(self.worker_chunk_row_count, self.fields, self.symbol_dtype)

    @property
    def mode(self) -> str:
        """What the run does, in a few words; it also names the default results file."""
        kind = ("sink" if self.target == "sink" else "send") if self.send else "serialize"
        threads = f"{self.workers}w" if self.workers else "1t"
        return f"{kind}-{self.op}-{self.fields}-{threads}"


class Report:
    """What a run prints and what its results file records, built up phase by phase."""

    def __init__(self, options: BenchOptions, mode: str, parameters: dict, seed: int | None, out: TextIO):
        self.out = out
        self.options = options
        self.record: dict = {
            "harness_version": __version__,
            "run_id": uuid.uuid4().hex[:12],
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "mode": mode,
            "parameters": parameters,
            "seed": seed,
            "system": system_info(),
            "server": None,
            "phases": {},
            "workers": {},
            "time_to_visible_seconds": None,
            "validated_row_count": None,
            "metrics": None,
            "status": "running",
            "error": None,
        }

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def phase(self, name: str, title: str | None, stats: PhaseStats) -> None:
        result = PhaseResult(rows=stats.rows, bytes=stats.bytes, seconds=stats.seconds)
        self.record["phases"][name] = result.to_dict()
        if stats.worker_rows and len(stats.worker_rows) > 1:
            self.record["workers"][name] = [
                {"rows": rows, "bytes": nbytes} for rows, nbytes in zip(stats.worker_rows, stats.worker_bytes)
            ]
        if stats.flushes:
            self.record["phases"][name]["flushes"] = stats.flushes
        if stats.cpu_seconds is not None:
            cores = stats.cpu_seconds / stats.seconds if stats.seconds > 0 else 0.0
            self.record["phases"][name].update(client_cpu_seconds=stats.cpu_seconds, client_cpu_cores=cores)
        if title:
            self.say(format_phase(title, result))
            if stats.cpu_seconds is not None:
                self.say(f"  Client CPU: {stats.cpu_seconds:.2f}s: {cores:.2f} cores busy on average.")

    def finish(self, status: str, error: str | None, metrics: RunMetrics | None) -> Path:
        self.record["status"] = status
        self.record["error"] = error
        if metrics is not None:
            self.record["metrics"] = metrics.snapshot()
        path = write_results(self.record, self.options.results, self.record["mode"], self.options.results_dir)
        self.say(f"Results: {path}")
        return path


def bench_parameters(options: BenchOptions, spec: params.DatasetSpec) -> dict:
    values = dataclasses.asdict(options)
    # What was really used: --conf wins over --transport, and its secrets are never recorded.
    values["transport"] = options.sender_transport
    if options.conf is not None:
        values["conf"] = redact_conf(options.conf)
    values["seed"] = spec.seed
    values["row_count"] = spec.row_count
    values["timestamp_start_ns"] = spec.start_ns
    values["interval_ns"] = spec.interval_ns
    return values


def run_bench(options: BenchOptions, out: TextIO | None = None) -> dict:
    """Run one benchmark; returns its record (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout
    options.check()
    target = SenderTarget(options.transport, options.protocol_version, options.host, options.ilp_port,
                          options.http_port, options.conf)
    spec = params.make_spec(
        seed=options.seed,
        scale=options.scale,
        timestamp_start=options.timestamp_start,
        timestamp_end=options.timestamp_end,
        log_interval=options.log_interval,
        row_limit=None if options.timestamp_end else options.row_count,
    )
    parameters = bench_parameters(options, spec)
    report = Report(options, options.mode, parameters, spec.seed, out)
    report.say("Running with params:")
    report.say(pprint.pformat({key: parameters[key] for key in sorted(parameters)}, indent=4))
    metrics = RunMetrics(report.record["run_id"], _metric_labels(options, spec), options.metrics_port,
                         options.metrics_linger, workers=options.workers or 1)
    metrics.start()
    try:
        _run(options, spec, target, report, metrics)
    except BaseException as exc:
        message = str(exc) if isinstance(exc, (RunError, UsageError)) else f"{type(exc).__name__}: {exc}"
        metrics.set_phase("failed")
        metrics.error(type(exc).__name__)
        report.finish("failed", message, metrics)
        metrics.close()
        raise
    metrics.set_phase("done")
    report.finish("ok", None, metrics)
    metrics.close()
    return report.record


def _metric_labels(options: BenchOptions, spec: params.DatasetSpec) -> dict:
    return {
        "workers": str(options.workers or 1),
        "transport": options.sender_transport,
        "protocol": options.protocol_version,
        "fields": options.fields,
        "scale": str(spec.scale),
        "seed": str(spec.seed),
        "op": options.op,
        "target": options.target,
    }


def _run(options: BenchOptions, spec: params.DatasetSpec, target: SenderTarget, report: Report,
         metrics: RunMetrics) -> None:
    questdb = None
    rows_before = 0
    if options.send and options.target == "questdb":
        questdb = QuestDB(options.host, options.http_port)
        questdb.ping()
        check_listening(*target.endpoint(), f"QuestDB ILP over {target.scheme}")
        report.record["server"] = {"questdb_version": questdb.server_version()}
        rows_before = _prepare_table(questdb, options, report)
    elif options.send:
        check_listening(*target.endpoint(), "the no-op sink")

    thread_count = options.workers or 1
    chunks = None
    if not options.stream:
        metrics.set_phase("generate")
        cpu_started, started = time.process_time(), time.perf_counter()
        chunks = list(cpu_only.frames(spec, options.worker_chunk_row_count, options.fields, options.symbol_dtype))
        seconds = time.perf_counter() - started
        report.phase("generate", None, PhaseStats(spec.row_count, 0, seconds,
                                                  cpu_seconds=time.process_time() - cpu_started))
        report.say(f"Generated:\n  {spec.row_count} rows in {seconds:.2f}s: {spec.row_count / seconds / 1e6:.2f} mil rows/sec.")

    def work():
        if chunks is not None:
            return deal_round_robin(chunks, thread_count)
        return ChunkStream(cpu_only.frames(spec, options.worker_chunk_row_count, options.fields,
                                           options.symbol_dtype), thread_count)

    def progress_for(phase: str) -> PhaseProgress:
        return PhaseProgress(phase, thread_count, on_chunk=metrics.add, on_flush=metrics.observe_flush)

    protocol_version = target.offline_protocol_version()
    if not (options.stream and options.send):
        metrics.set_phase("serialize")
        progress = progress_for("serialize")
        workers = [SerializeWorker(options.op, protocol_version, options.table) for _ in range(thread_count)]
        with ProgressPrinter(progress, spec.row_count, options.reporting_period, report.out):
            stats = run_phase(progress, workers, work())
        report.phase("serialize", "Serialized", stats)

    if options.write_ilp:
        _write_ilp_file(options, spec, chunks, protocol_version, report)

    if not options.send:
        return
    metrics.set_phase("send")
    progress = progress_for("send")
    senders: list[SendWorker] = []
    try:
        for index in range(thread_count):
            senders.append(SendWorker(options.op, target, progress, index, options.table))
    except BaseException:
        for sender in senders:
            sender.close()
        raise
    try:
        with ProgressPrinter(progress, spec.row_count, options.reporting_period, report.out):
            stats = run_phase(progress, senders, work())
    except PhaseFailed as failure:
        report.phase("send", None, failure.stats)
        raise RunError(f"{failure}; {failure.stats.rows} rows were sent (flushed) before the failure") from None
    last_flush = time.perf_counter()
    report.phase("send", "Sent", stats)

    if questdb is not None:
        metrics.set_phase("validate")
        expected = rows_before + stats.rows
        questdb.wait_for_count(options.table, expected, options.validation_query_timeout)
        since_flush = time.perf_counter() - last_flush
        report.record["time_to_visible_seconds"] = round(since_flush, 3)
        report.record["validated_row_count"] = questdb.count(options.table)
        report.say(f"Validated:\n  {expected} rows visible in table {options.table} "
                   f"{since_flush:.2f}s after the last flush.")


def _prepare_table(questdb: QuestDB, options: BenchOptions, report: Report) -> int:
    """Drop and create the table, or (``keep_table``) check the existing one; returns its row count."""
    if options.keep_table:
        if questdb.table_columns(options.table) is None:
            questdb.create_cpu_table(options.table, options.fields)
            report.say(f"Created table {options.table}")
            return 0
        questdb.check_cpu_schema(options.table, options.fields)
        rows = questdb.count(options.table)
        report.say(f"Kept table {options.table} ({rows} rows)")
        return rows
    if questdb.table_columns(options.table) is not None:
        questdb.drop_table(options.table)
        report.say(f"Dropped table {options.table}")
    else:
        report.say(f"Table {options.table} does not exist")
    questdb.create_cpu_table(options.table, options.fields)
    report.say(f"Created table {options.table}")
    return 0


def _write_ilp_file(options: BenchOptions, spec, chunks, protocol_version: int, report: Report) -> None:
    """Write the serialized ILP to a file, outside every timed phase."""
    frames = chunks if chunks is not None else cpu_only.frames(
        spec, options.worker_chunk_row_count, options.fields, options.symbol_dtype)
    try:
        with open(options.write_ilp, "wb", buffering=8 << 20) as out:
            rows, nbytes = write_ilp(frames, out, protocol_version, options.table, default_workers())
    except OSError as exc:
        raise UsageError(f"--write-ilp: cannot write {options.write_ilp}: {exc.strerror}") from None
    report.say(f"Wrote ILP:\n  {rows} rows, {nbytes / 2**20:.2f} MiB to {options.write_ilp}")


@dataclass
class ReplayOptions:
    path: str = ""
    target: str = "questdb"
    host: str = "localhost"
    ilp_port: int = 9009
    http_port: int = 9000
    table: str = cpu_only.TABLE_NAME
    keep_table: bool = False
    fields: str = "long"
    write_size: int = raw.DEFAULT_WRITE_SIZE
    validation_query_timeout: float = 120.0
    results: str | None = None
    results_dir: str = "results"

    def check(self) -> None:
        if self.target not in TARGETS:
            raise UsageError(f"--target must be one of {', '.join(TARGETS)}, got {self.target!r}")
        if self.write_size <= 0:
            raise UsageError(f"--write-size must be positive, got {self.write_size}")
        if self.fields not in cpu_only.FIELD_TYPES:
            raise UsageError(f"--fields must be one of {', '.join(cpu_only.FIELD_TYPES)}, got {self.fields!r}")
        if self.validation_query_timeout <= 0:
            raise UsageError(f"--validation-query-timeout must be positive, got {self.validation_query_timeout}")
        if not os.path.isfile(self.path) or not os.access(self.path, os.R_OK):
            raise UsageError(f"cannot read ILP file {self.path!r}")


def run_replay(options: ReplayOptions, out: TextIO | None = None) -> dict:
    """Send an ILP file (ours or tsbs_generate_data's, gzip'd or not) raw over TCP, like the original
    bench_raw_ilp, then validate the count and record the run."""
    out = out or sys.stdout
    options.check()
    opener = gzip.open if options.path.endswith(".gz") else open
    try:
        with opener(options.path, "rb") as source:
            data = source.read()
    except OSError as exc:
        raise UsageError(f"cannot read ILP file {options.path!r}: {exc}") from None
    rows = data.count(b"\n")
    parameters = dataclasses.asdict(options)
    bench_options = BenchOptions(results=options.results, results_dir=options.results_dir)
    report = Report(bench_options, "replay", parameters, None, out)
    report.say(f"Replaying {options.path}: {rows} rows, {len(data) / 2**20:.2f} MiB")
    questdb = None
    try:
        rows_before = 0
        if options.target == "questdb":
            questdb = QuestDB(options.host, options.http_port)
            questdb.ping()
            report.record["server"] = {"questdb_version": questdb.server_version()}
            rows_before = _prepare_table(questdb, BenchOptions(table=options.table, keep_table=options.keep_table,
                                                               fields=options.fields), report)
        progress = PhaseProgress("send", 1)
        cpu_started = time.process_time()
        try:
            stats = raw.send_raw(data, options.host, options.ilp_port, options.write_size, progress)
        except raw.RawSendFailed as failure:
            raise RunError(f"{failure}; {failure.bytes_sent} bytes were written before the failure") from None
        report.phase("send", "Sent", PhaseStats(rows, stats.bytes, stats.seconds,
                                                cpu_seconds=time.process_time() - cpu_started))
        last_write = time.perf_counter()
        if questdb is not None:
            questdb.wait_for_count(options.table, rows_before + rows, options.validation_query_timeout)
            report.record["time_to_visible_seconds"] = round(time.perf_counter() - last_write, 3)
            report.record["validated_row_count"] = questdb.count(options.table)
            report.say(f"Validated:\n  {rows_before + rows} rows visible in table {options.table}.")
    except BaseException as exc:
        report.finish("failed", str(exc), None)
        raise
    report.finish("ok", None, None)
    return report.record
