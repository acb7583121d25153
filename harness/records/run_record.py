"""Run records: the typed, versioned record of one run, the machine it ran on, results files, comparisons.

Like ClickBench's result files, every run leaves one JSON document that names the machine, the date,
the versions and all parameters, so figures can be compared and re-run years later. The document is a
``RunRecord`` (schema ``SCHEMA_VERSION``); each number is stored once and rates are derived when read.
Records written before the schema had a version (version 1) are still read.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness import __version__
from harness.output_file import cannot_write, whole_file
from harness.errors import UsageError
from harness.measure.phase import PhaseRecord, WorkerTotals
from harness.records.system_info import system_info
from harness.measure.timeseries import TimeSeries

MIB = 1024 * 1024
# 3: read runs (``RunRecord.read``), ingest runs' ``arrival``, merged runs' ``clients``; version 2 records load.
SCHEMA_VERSION = 3


@dataclass
class TableCount:
    expected: int
    visible: int


@dataclass
class Validation:
    """What the server holds after the run, read back from it (never inferred from what was sent);
    ``tables`` splits the counts by table where the run wrote several."""

    expected_rows: int
    visible_rows: int
    time_to_visible_seconds: float
    tables: dict[str, TableCount] = field(default_factory=dict)


@dataclass
class TableArrival:
    """One table's rows as they arrived in time (``harness.ingest.arrival``)."""

    rows: int = 0
    late_rows: int = 0  # rows behind the newest timestamp sent to the table before them
    max_late_seconds: float = 0.0  # how far behind the latest of them was

    @property
    def late_share(self) -> float:
        return self.late_rows / self.rows if self.rows else 0.0


@dataclass
class ClientFigures:
    """One client of a merged scale-out run (``harness.scaleout.merge``): which group it sent, where it ran, its send."""

    client: int  # its interleaved group
    results: str  # its own record
    hostname: str | None
    status: str
    error: str | None
    rows: int | None  # of its send phase
    seconds: float | None
    client_cpu_seconds: float | None
    ended_at: float | None  # the end of its send window, seconds since 1970

    @property
    def rows_per_second(self) -> float | None:
        return self.rows / self.seconds if self.rows is not None and self.seconds else None

    @property
    def started_at(self) -> float | None:
        return self.ended_at - self.seconds if self.ended_at is not None and self.seconds is not None else None


@dataclass
class LatencyStats:
    """One query type's (or all queries') figures; times in milliseconds."""

    count: int
    min_ms: float
    median_ms: float
    mean_ms: float
    max_ms: float
    stddev_ms: float
    sum_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    p99_9_ms: float
    seconds: float  # wall time from the first start to the last end
    queries_per_second: float


ALL_QUERIES = "all queries"  # the statistics' key of every type together


@dataclass
class QueryPass:
    """One pass over the queries: per-type latencies (``ALL_QUERIES`` for every type), TSBS's labels, failed
    queries per type and kind, and a few failures' texts."""

    statistics: dict[str, LatencyStats] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    failure_samples: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, values: dict) -> QueryPass:
        values = dict(values)
        statistics = {name: LatencyStats(**figures) for name, figures in values.pop("statistics", {}).items()}
        return cls(statistics=statistics, **{key: values[key] for key in ("labels", "failures", "failure_samples")
                                             if key in values})


@dataclass
class QueryCheck:
    """``--check``: answers compared with the reference, how many differed, the first differences."""

    checked: int
    mismatches: int
    first_mismatches: list[str] = field(default_factory=list)


@dataclass
class IngestBeside:
    """``--under-load``: the ingest that ran beside the queries, and how much of the query run it overlapped."""

    results: str
    rows: int
    workers: int
    status: str
    error: str | None
    send_rows_per_second: float | None
    ingest_seconds: float
    queries_seconds: float
    overlap_of_queries: float  # below 1, some queries ran at rest


@dataclass
class QueryFigures(QueryPass):
    """A query run's figures: its pass, the ``--check`` outcome, and with ``--under-load`` the ingest beside
    it and (``--queries-only-after``) the pass at rest."""

    check: QueryCheck | None = None
    at_rest: QueryPass | None = None
    under_load: IngestBeside | None = None

    @classmethod
    def from_dict(cls, values: dict) -> QueryFigures:
        figures = QueryPass.from_dict(values)
        check, at_rest, under_load = values.get("check"), values.get("at_rest"), values.get("under_load")
        return cls(**vars(figures), check=QueryCheck(**check) if check else None,
                   at_rest=QueryPass.from_dict(at_rest) if at_rest else None,
                   under_load=IngestBeside(**under_load) if under_load else None)


@dataclass
class ReadFigures:
    """A read run's own figures beside its ``read`` phase (rows, bytes received, seconds, client CPU): the
    protocol, workers and chunk size, the server's count of what was read, the time to the first rows,
    the client's peak resident memory during the read, and the ``--check`` outcome (None: not checked)."""

    protocol: str
    workers: int
    chunk_rows: int
    chunks: int
    expected_rows: int | None  # the server's count before the read (None for --sql)
    first_rows_seconds: float | None  # from the read's start to its first DataFrame
    peak_rss_bytes: int
    checked_rows: int | None = None
    check_error: str | None = None


@dataclass
class RunRecord:
    """Everything one run leaves behind. ``status`` is running, ok, failed or interrupted."""

    kind: str  # bench, replay, queries or read
    mode: str  # what the run did in a few words; it also names the default results file
    parameters: dict
    seed: int | None = None
    schema_version: int = SCHEMA_VERSION
    harness_version: str = __version__
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    system: dict = field(default_factory=lambda: system_info())
    server: dict | None = None
    phases: dict[str, PhaseRecord] = field(default_factory=dict)
    validation: Validation | None = None
    # Ingest runs: per table, the rows sent behind a newer one (harness.ingest.arrival).
    arrival: dict[str, TableArrival] | None = None
    # A merged scale-out run (harness.scaleout.merge): each client's figures, client 0 first.
    clients: list[ClientFigures] | None = None
    # Chunks of the data set, counted from the first, that the server acknowledged: where --resume goes on.
    acknowledged_chunks: int | None = None
    # Second by second (harness.measure.timeseries): rows and bytes per phase and worker, client CPU, server WAL.
    timeseries: TimeSeries | None = None
    # Query runs (kind "queries"): per-type statistics, failures and the --check outcome (harness.queries).
    queries: QueryFigures | None = None
    # Read runs (kind "read"): harness.read.
    read: ReadFigures | None = None
    status: str = "running"
    error: str | None = None
    path: Path | None = field(default=None, compare=False)  # where it was read from or written to

    @property
    def shows_arrival(self) -> bool:
        """Whether the order its rows arrived in is worth showing: some came late, or it sorted them."""
        return bool(self.parameters.get("time_ordered")
                    or any(figures.late_rows for figures in (self.arrival or {}).values()))

    def to_dict(self) -> dict:
        values = dataclasses.asdict(self)
        del values["path"]
        return values

    @classmethod
    def from_dict(cls, values: dict) -> RunRecord:
        values = dict(values)
        phases = {name: PhaseRecord(**{**phase, "workers": [WorkerTotals(**w) for w in phase.get("workers", [])]})
                  for name, phase in values.pop("phases").items()}
        validation = values.pop("validation", None)
        if validation:
            tables = {name: TableCount(**count) for name, count in validation.pop("tables", {}).items()}
            validation = Validation(**validation, tables=tables)
        arrival = values.pop("arrival", None)
        arrival = {table: TableArrival(**figures) for table, figures in arrival.items()} if arrival else None
        clients = values.pop("clients", None)
        clients = [ClientFigures(**figures) for figures in clients] if clients else None
        timeseries = values.pop("timeseries", None)
        timeseries = TimeSeries.from_dict(timeseries) if timeseries else None
        queries = values.pop("queries", None)
        queries = QueryFigures.from_dict(queries) if queries else None
        read = values.pop("read", None)
        read = ReadFigures(**read) if read else None
        return cls(**values, phases=phases, validation=validation, arrival=arrival, clients=clients,
                   timeseries=timeseries, queries=queries, read=read)


def format_phase(title: str, phase: PhaseRecord) -> str:
    """The original py-tsbs-benchmark's two-line report of a phase."""
    return (
        f"{title}:\n"
        f"  {phase.rows} rows in {phase.seconds:.2f}s: {phase.rows_per_second / 1e6:.2f} mil rows/sec.\n"
        f"  ILP Buffer size: {phase.bytes / MIB:.2f} MiB: {phase.mib_per_second:.2f} MiB/sec."
    )


def default_results_path(mode: str, results_dir: str | Path = "results") -> Path:
    """``results/<UTC time>-<mode>.json``, e.g. ``results/20261122T110501Z-bench.json``; a second run in the
    same second gets ``-2``, ``-3`` ... rather than overwriting the first."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe_mode = "".join(char if char.isalnum() or char in "-_." else "_" for char in mode) or "run"
    candidate = Path(results_dir) / f"{stamp}-{safe_mode}.json"
    serial = 2
    while candidate.exists():
        candidate = Path(results_dir) / f"{stamp}-{safe_mode}-{serial}.json"
        serial += 1
    return candidate


def reserve_results_path(record: RunRecord, path: str | Path | None = None,
                         results_dir: str | Path = "results") -> Path:
    """Decide where the record goes and check, before the run touches anything, that it can be written
    there (the folder is created); UsageError names the path otherwise."""
    target = Path(path) if path else default_results_path(record.mode, results_dir)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            raise UsageError(f"results path {target} is a directory")
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=True):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write results to {target}: {exc.strerror or exc}") from None
    record.path = target
    return target


def write_results(record: RunRecord, path: str | Path | None = None, results_dir: str | Path = "results") -> Path:
    """Write one run record as indented JSON; returns where it went (creating the folder). The file
    appears whole or not at all: written beside its place, then renamed."""
    target = Path(path) if path else record.path or default_results_path(record.mode, results_dir)
    record.path = write_json_whole(record.to_dict(), target)
    return target


def write_json_whole(document: dict, target: Path) -> Path:
    """``document`` as indented JSON in ``target`` (creating the folder). The file appears whole or not at
    all (``harness.output_file``); a write that fails is one RunError line."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write("the results file", target, exc) from None
    with whole_file(target, "the results file", "w") as out:
        out.write(json.dumps(document, indent=2, default=str) + "\n")
    return target


def _from_version_1(values: dict) -> RunRecord:
    """A record from before schema versions: rates stored beside the counts, per-worker splits apart,
    the validation as two top-level keys, and a copy of the counters under ``metrics``."""
    workers = values.get("workers") or {}
    phases = {}
    for name, phase in values["phases"].items():
        phases[name] = PhaseRecord(
            rows=phase["rows"], bytes=phase["bytes"], seconds=phase["seconds"],
            client_cpu_seconds=phase.get("client_cpu_seconds"), flushes=phase.get("flushes", 0),
            workers=[WorkerTotals(w["rows"], w["bytes"]) for w in workers.get(name, [])])
    validation = None
    if values.get("validated_row_count") is not None:
        validation = Validation(values["validated_row_count"], values["validated_row_count"],
                                values.get("time_to_visible_seconds"))
    mode = values.get("mode") or "-"
    return RunRecord(kind="replay" if mode == "replay" else "bench", mode=mode,
                     parameters=values.get("parameters") or {}, seed=values.get("seed"), schema_version=1,
                     harness_version=values.get("harness_version", "-"), run_id=values.get("run_id", "-"),
                     started_at=values.get("started_at", "-"), system=values.get("system") or {},
                     server=values.get("server"), phases=phases, validation=validation,
                     status=values.get("status", "-"), error=values.get("error"))


def load_results(paths: list[str | Path]) -> list[RunRecord]:
    """Read results files of this schema or version 1; UsageError names a file it cannot read."""
    records = []
    for path in paths:
        try:
            values = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read results file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        version = values.get("schema_version", 1) if isinstance(values, dict) else None
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise UsageError(f"{path} is a results file of schema version {version}; this harness reads "
                             f"versions 1 to {SCHEMA_VERSION}")
        if not isinstance(values, dict) or not isinstance(values.get("phases"), dict):
            raise UsageError(f"{path} is not a harness results file (no phases)")
        try:
            if version in (2, SCHEMA_VERSION):
                record = RunRecord.from_dict(values)
                record.schema_version = version
            elif version == 1:
                record = _from_version_1(values)
            else:
                raise UsageError(f"{path} is a results file of schema version {version}; this harness reads "
                                 f"versions 1 to {SCHEMA_VERSION}")
        except (TypeError, KeyError, AttributeError) as exc:
            raise UsageError(f"{path} is not a well-formed results file (schema version {version}): {exc}") from None
        record.path = Path(path)
        records.append(record)
    return records
