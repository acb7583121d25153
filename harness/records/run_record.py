"""The run record: the typed record of one run (``RunRecord``) and its parts, the machine it ran on among them.

Like ClickBench's result files, every run leaves one JSON document that names the machine, the date,
the versions and all parameters, so figures can be compared and re-run years later. The document is a
``RunRecord`` of schema version ``SCHEMA_VERSION``; each number is stored once and rates are derived when
read. The store (``harness.records.store``) writes and reads it, older versions included.
"""

from __future__ import annotations

import statistics
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness.records.codec import always_stored, not_stored, to_dict
from harness.records.system_info import system_info
from harness.telemetry.latency import LatencySummary
from harness.telemetry.phase import PhaseRecord
from harness.telemetry.timeseries import TimeSeries
from harness.versions import HARNESS_VERSION

# 3: read runs (``RunRecord.read``), ingest runs' ``arrival``, merged runs' ``clients``; 4: open-loop runs
# (``RunRecord.open_loop``); 5: profiled runs (``RunRecord.profile``); 6: an ingest run's resolved plan
# (``RunRecord.plan``). Records of every earlier version load.
SCHEMA_VERSION = 6


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

@dataclass
class ReadFigures:
    """A read run's own figures beside its ``read`` phase (rows, bytes received, seconds, client CPU): the
    protocol and the kind of frame, workers and chunk size, the server's count of what was read, the time to the
    first rows, the client's peak resident memory during the read, the ``--check`` outcome (None: not
    checked) and, with ``--check-against``, the file's cross-check."""

    protocol: str
    workers: int
    chunk_rows: int
    chunks: int
    expected_rows: int | None  # the server's count before the read (None for --sql)
    first_rows_seconds: float | None  # from the read's start to its first frame
    peak_rss_bytes: int
    checked_rows: int | None = None
    check_error: str | None = None
    frame: str = "pandas"  # the kind of frame the read handed over (``harness.frames.kinds``; older records: pandas)
    # --check-against: DuckDB's reading of the file held against the run's (harness.own_data.cross_check; None:
    # not made, older records).
    cross_check: dict | None = None

    def path(self) -> str:
        """The protocol, and the kind of frame where it is not pandas: ``qwp (arrow)``."""
        return self.protocol if self.frame == "pandas" else f"{self.protocol} ({self.frame})"


@dataclass
class RateStep:
    """One rate of an open-loop run (``bench --rate``): whether its schedule was kept, and the latencies of
    its chunks, each from the chunk's intended time (``harness.open_loop.schedule``)."""

    target_rows_per_second: float
    achieved_rows_per_second: float | None  # the rows over the longer of the schedule and the last send's end
    sustained: bool  # achieved within 1 % of the target
    rows: int
    chunks: int
    late_chunks: int  # went out a chunk interval or more after their time
    max_backlog_rows: int
    schedule_delay: LatencySummary  # intended time to the send's start: the client's own lateness
    acknowledged: LatencySummary | None = None  # intended time to the server's answer (ILP over HTTP)
    # The send's start to the server's answer: what a closed-loop tool reports (coordinated omission).
    acknowledged_from_send: LatencySummary | None = None
    freshness: LatencySummary | None = None  # intended time to visible to a count (into QuestDB)
    # How far after its intended time a chunk came from the source, for those it had not made in time (their
    # other latencies count from when they came): the client's generator or file reader, not the server.
    source_behind: LatencySummary | None = None
    unseen_chunks: int = 0  # sent, and not yet seen by the probe when it stopped
    unsent_rows: int = 0  # never went out: their chunk had not started when the schedule ended
    backlog: list[list[float]] = field(default_factory=list)  # [seconds since start, rows behind schedule]
    # Each chunk's latency by its intended time ([seconds since start, seconds]), at most 2,000 points each.
    acknowledged_series: list[list[float]] = field(default_factory=list)
    acknowledged_from_send_series: list[list[float]] = field(default_factory=list)
    freshness_series: list[list[float]] = field(default_factory=list)
    search: int | None = None  # the --search repetition (1, 2 ...) this rate was a probe of


@dataclass
class SideProfile:
    """One side of a profiled run (``--profile``): who sampled it and how, its samples in named buckets
    (``harness.telemetry.stack_buckets``), overall and per phase, its top frames, the CPUs it used while sampled, the
    files beside the record (collapsed stacks a phase, a speedscope file), or why (part of) it is missing."""

    profiler: str  # "py-spy 0.4.3", "async-profiler 4.6"
    mode: str  # what was sampled: "cpu", "itimer", "wall"; the client's "wall, native frames"
    rate_hz: int
    samples: int = 0
    buckets: dict[str, int] = field(default_factory=dict)
    phases: dict[str, dict[str, int]] = field(default_factory=dict)  # phase -> bucket -> samples
    top_frames: list[list] = field(default_factory=list)  # [frame, samples of its own]
    cpus: float | None = None  # CPU-s over the profiled seconds
    profiler_cpus: float | None = None  # the profiler's own, likewise (py-spy's process; async-profiler's is the JVM's)
    seconds: float | None = None  # how long it was sampled (samples / seconds: the rate reached, all threads)
    files: dict[str, str] = field(default_factory=dict)  # what -> file name in the record's profile folder
    missing: str | None = None  # why (a part of) this side's profile is missing

    def shares(self) -> dict[str, float]:
        total = sum(self.buckets.values())
        return {name: (count / total if total else 0.0) for name, count in self.buckets.items()}


@dataclass
class ProfileFigures:
    """Both sides' profiles of a run and the verdict drawn from them (``harness.profiling.verdict``)."""

    client: SideProfile
    server: SideProfile | None  # None: not profiled (the sink; a server not on this machine)
    verdict: str
    bound: str  # "client", "server" or "neither"
    folder: str | None = None  # the profile's folder, beside the record
    server_not_profiled: str | None = None  # why the server side was not profiled


@dataclass
class ChunksAheadFigures:
    """Who made an open loop's chunks ahead of their time (``--chunks-ahead``), the most they could hold made and
    not yet sent, and the most they held (a process's, as pickled bytes)."""

    maker: str  # "process" (of their own) or "thread" (of the scheduling process)
    max_chunks: int
    max_rows: int
    max_mib: float | None = None  # a thread's are bounded in chunks only
    peak_chunks: int | None = None
    peak_mib: float | None = None
    cpu_seconds: float | None = None  # a process's own CPU time: in no figure of the scheduling process

    def text(self) -> str:
        maker = "a process of their own" if self.maker == "process" else "a thread of the scheduling process"
        bound = f"{self.max_chunks} chunks ({self.max_rows:,} rows)"
        bound += f" or {self.max_mib:g} MiB" if self.max_mib is not None else ""
        peak = (f"; it held at most {self.peak_chunks} ({self.peak_mib:g} MiB)" if self.peak_chunks is not None
                else "")
        cpu = (f" and used {self.cpu_seconds:.2f} CPU-s, in no client CPU figure of the run"
               if self.cpu_seconds is not None else "")
        return f"made ahead by {maker}, up to {bound}{peak}{cpu}"


@dataclass
class KneeSearch:
    """One search for the knee (``bench --rate LOW:HIGH --search``): its closed-loop step and its knee."""

    repetition: int
    closed_loop_rows_per_second: float | None
    closed_loop_visible_seconds: float | None
    knee_rows_per_second: float | None  # the highest rate held; None: not even LOW

    @property
    def knee_over_closed_loop(self) -> float | None:
        if self.knee_rows_per_second is None or not self.closed_loop_rows_per_second:
            return None
        return self.knee_rows_per_second / self.closed_loop_rows_per_second


@dataclass
class ProbeFigures:
    """What the freshness probe asked of the server (``harness.open_loop.freshness``)."""

    interval_seconds: float
    queries: int
    queries_per_second: float
    tables: int  # one count() per table per query
    failures: int = 0
    last_error: str | None = None

    def plus(self, other: ProbeFigures) -> ProbeFigures:
        """Two probes' figures as one (a ramp's rates); the rate of queries is the later one's."""
        return ProbeFigures(self.interval_seconds, self.queries + other.queries, other.queries_per_second,
                            self.tables, self.failures + other.failures, other.last_error or self.last_error)


@dataclass
class ThresholdOutcome:
    """One ``--threshold``: the expression, the figure's value (None: the run has no such figure) and whether
    it held."""

    expression: str
    value: float | None
    passed: bool


@dataclass
class PacedQueryFigures:
    """Queries run beside an open loop at a fixed rate (``harness.queries.paced``), each timed from its
    intended start."""

    file: str
    rate: float
    protocol: str
    connections: int
    done: int
    late: int  # started a query interval or more after their time
    latency: LatencySummary
    by_type: dict[str, LatencySummary] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)  # query type -> kind -> count
    failure_sample: str | None = None


@dataclass
class OpenLoopFigures:
    """An open-loop run: each rate it held (one; a ramp's every step), its probe, and the thresholds judged; a
    ramp's SLO, the closed-loop rate it measured first and its knee (the highest rate held)."""

    steps: list[RateStep]
    probe: ProbeFigures | None = None
    thresholds: list[ThresholdOutcome] = field(default_factory=list)
    slo_seconds: float | None = None
    closed_loop_rows_per_second: float | None = None  # its rows over its send and the time until visible
    closed_loop_visible_seconds: float | None = None  # from its last flush until its rows were visible
    knee_rows_per_second: float | None = None  # a search's: the median of its repetitions'
    queries: PacedQueryFigures | None = None
    # --search: each repetition, and the resolution it stopped at (a share of the rate held).
    searches: list[KneeSearch] = field(default_factory=list)
    search_resolution: float | None = None
    chunks_ahead: ChunksAheadFigures | None = None

    def knees(self) -> list[float]:
        """The knee each search found (those that found none left out)."""
        return [search.knee_rows_per_second for search in self.searches if search.knee_rows_per_second]

    def knee_spread(self) -> tuple[float, float] | None:
        """The lowest and highest knee of the searches (None: fewer than one found a knee)."""
        knees = self.knees()
        return (min(knees), max(knees)) if knees else None

    def ratio_spread(self) -> tuple[float, float, float] | None:
        """The knee over the same search's closed-loop rate: median, lowest and highest."""
        ratios = sorted(ratio for search in self.searches if (ratio := search.knee_over_closed_loop) is not None)
        return (statistics.median(ratios), ratios[0], ratios[-1]) if ratios else None

    def knee_spread_text(self) -> str:
        """``lowest L, highest H, spread H/Lx`` of the searches' knees (the summary and the report say it)."""
        low, high = self.knee_spread()
        return f"lowest {low:,.0f}, highest {high:,.0f}, spread {high / low:.2f}x"

    def ratio_text(self) -> str:
        """``Mx (lowest Lx, highest Hx)``: the knee over the same search's closed loop."""
        median, low, high = self.ratio_spread()
        return f"{median:.2f}x (lowest {low:.2f}x, highest {high:.2f}x)"


@dataclass
class RunRecord:
    """Everything one run leaves behind. ``status`` is running, ok, failed or interrupted."""

    kind: str  # bench, replay, queries or read
    mode: str  # what the run did in a few words; it also names the default results file
    parameters: dict
    seed: int | None = None
    schema_version: int = SCHEMA_VERSION
    harness_version: str = HARNESS_VERSION
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    system: dict = field(default_factory=lambda: system_info())
    server: dict | None = None
    phases: dict[str, PhaseRecord] = always_stored(dict)
    validation: Validation | None = None
    # Ingest runs: per table, the rows sent behind a newer one (harness.ingest.arrival).
    arrival: dict[str, TableArrival] | None = None
    # A merged scale-out run (harness.scaleout.merge): each client's figures, client 0 first.
    clients: list[ClientFigures] | None = None
    # Chunks of the data set, counted from the first, that the server acknowledged: where --resume goes on.
    acknowledged_chunks: int | None = None
    # Second by second (harness.telemetry.timeseries): rows and bytes per phase and worker, client CPU, server WAL.
    timeseries: TimeSeries | None = None
    # Query runs (kind "queries"): per-type statistics, failures and the --check outcome (harness.queries).
    queries: QueryFigures | None = None
    # Read runs (kind "read"): harness.read.
    read: ReadFigures | None = None
    # Open-loop bench runs (--rate): harness.open_loop.
    open_loop: OpenLoopFigures | None = None
    profile: ProfileFigures | None = None
    # Ingest runs: what the run was resolved to (harness.run.plan): its source, tables and rows, the wire and where
    # it sent, what it did to the tables, its chunks and workers: exactly what ran.
    plan: dict | None = None
    status: str = "running"
    error: str | None = None
    path: Path | None = not_stored()  # where it was read from or written to

    @property
    def shows_arrival(self) -> bool:
        """Whether the order its rows arrived in is worth showing: some came late, or it sorted them."""
        return bool(self.parameters.get("time_ordered")
                    or any(figures.late_rows for figures in (self.arrival or {}).values()))

    def to_dict(self) -> dict:
        """The document the store writes (``harness.records.codec``)."""
        return to_dict(self)

    def to_frame(self):
        """The run's figures as a pandas DataFrame, a row per phase: rows, seconds, rows/s, MiB/s, client CPU
        seconds and per million rows; the validation's rows and time to visible as their own row."""
        import pandas as pd  # only for a caller that asks: reading records stays light

        rows = [{"phase": name, "rows": phase.rows, "seconds": phase.seconds, "rows_per_second": phase.rows_per_second,
                 "mib_per_second": phase.mib_per_second, "client_cpu_seconds": phase.client_cpu_seconds,
                 "client_cpu_seconds_per_million_rows": (phase.client_cpu_seconds / phase.rows * 1e6
                                                         if phase.client_cpu_seconds is not None and phase.rows
                                                         else None)}
                for name, phase in self.phases.items()]
        if self.validation is not None:
            rows.append({"phase": "validate", "rows": self.validation.visible_rows,
                         "seconds": self.validation.time_to_visible_seconds})
        return pd.DataFrame(rows).set_index("phase")
