"""Live metrics of one run, for Prometheus: rows and bytes per phase and worker, flushes, errors, phase.

Owns the names the Grafana dashboard queries. Every series carries ``run_id`` so the dashboard's run
selector can pick one run among many. Rows, bytes and flushes are not counted here: at each scrape they
are read from the phases' own ``PhaseProgress`` counters, the same ones the progress lines and the
results record read, so the three can never disagree.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, ProcessCollector, start_http_server
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from harness.errors import UsageError
from harness.telemetry.phase import PhaseProgress

PHASES = ("generate", "serialize", "send", "validate", "done", "failed")
# The phases that count rows and bytes per worker (the others only time).
COUNTED_PHASES = ("serialize", "send")
# From a sub-millisecond flush of a small chunk to a server that stalls for seconds.
FLUSH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
METRICS_HOST_ENV = "HARNESS_METRICS_HOST"
# An open loop's latencies: from a sub-millisecond schedule delay to a backlog of a minute.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
OPEN_LOOP_FIGURES = ("schedule_delay", "acknowledged", "freshness")


def metrics_host(host: str | None = None) -> str:
    """Where /metrics listens: ``host`` if given, else $HARNESS_METRICS_HOST, else loopback only. Inside a
    container Prometheus scrapes over the Compose network, so compose.yaml sets 0.0.0.0 there."""
    return host or os.environ.get(METRICS_HOST_ENV) or "127.0.0.1"


class RunMetrics:
    """The metrics of one run, in a registry of its own (so several runs can live in one process).

    ``parameters`` become the info metric's labels; ``workers`` is how many worker series exist from the
    start (at 0), so that every worker's first chunk already shows as a rate."""

    phase_names: tuple[str, ...] = PHASES  # the harness_phase series, one of them 1 at a time
    counted_phases: tuple[str, ...] = COUNTED_PHASES  # the phases whose rows and bytes are exported
    # Whether the run flushes senders (an ingest run): only then are flush series exported, so a query or
    # read run draws no flat zero lines in the ingest panels.
    flushes: bool = True

    def __init__(self, run_id: str, parameters: dict, port: int | None = None, linger_seconds: float = 0.0,
                 registry: CollectorRegistry | None = None, workers: int = 1, host: str | None = None):
        self.run_id = run_id
        self.port = port
        self.host = metrics_host(host)
        self.linger_seconds = linger_seconds
        self.workers = workers
        if registry is None:
            registry = CollectorRegistry(auto_describe=True)
            # The client process's CPU seconds and memory (process_cpu_seconds_total, ...; read from /proc
            # at scrape time only): CPU near workers x 1 core is what a client-bound run looks like.
            ProcessCollector(registry=registry)
        self.registry = registry
        self._server = None
        self._progress: dict[str, PhaseProgress] = {}
        self._open_loop: tuple | None = None  # its series, made by ``open_loop``
        self._paced_queries: Histogram | None = None  # made by ``query_observer``
        registry.register(_PhaseCounters(self))

        self.flush_seconds = Histogram("harness_flush_duration_seconds", "Time of one sender flush.",
                                       ("run_id",), buckets=FLUSH_BUCKETS, registry=self.registry)
        self.errors_total = Counter("harness_errors", "Errors that stopped or hurt a run, by kind.",
                                    ("run_id", "kind"), registry=self.registry)
        self.phase = Gauge("harness_phase", "1 for the phase the run is in, 0 for the others.",
                           ("run_id", "phase"), registry=self.registry)
        self.start_time = Gauge("harness_run_start_time_seconds", "Unix time the run started.", ("run_id",),
                                registry=self.registry)
        self.info = Info("harness_run", "Parameters of the run.", registry=self.registry)
        self.info.info({"run_id": run_id, **{key: str(value) for key, value in parameters.items()}})
        self.start_time.labels(run_id).set(time.time())
        for phase in self.phase_names:
            self.phase.labels(run_id, phase).set(0)
        # Zero-valued series exist from the start, so rate() has a baseline and panels show 0, not "no data".
        self.errors_total.labels(run_id, "none")
        if self.flushes:
            self.flush_seconds.labels(run_id)

    def start(self) -> None:
        """Serve /metrics on ``host``:``port`` (nothing to do when ``port`` is None)."""
        if self.port is None:
            return
        try:
            self._server, _ = start_http_server(self.port, addr=self.host, registry=self.registry)
        except OSError as exc:
            raise UsageError(f"--metrics-port {self.port} on {self.host} (--metrics-host): cannot serve metrics: "
                             f"{exc.strerror or exc}") from None

    def set_phase(self, phase: str) -> None:
        for name in self.phase_names:
            self.phase.labels(self.run_id, name).set(1 if name == phase else 0)

    @property
    def phases(self) -> dict[str, PhaseProgress]:
        """The tracked phases' counters by phase name (live: phases are added as they start)."""
        return self._progress

    def track(self, progress: PhaseProgress) -> PhaseProgress:
        """Export this phase's counters from now on; returns it, for chaining."""
        self._progress[progress.phase] = progress
        return progress

    def new_phase(self, phase: str, workers: int, first_chunk: int = 0) -> PhaseProgress:
        """A tracked counter for a phase whose flushes go to the flush-time histogram."""
        return self.track(PhaseProgress(phase, workers, on_flush=self.observe_flush, first_chunk=first_chunk))

    def observe_flush(self, worker: int, seconds: float) -> None:
        self.flush_seconds.labels(self.run_id).observe(seconds)

    def error(self, kind: str) -> None:
        self.errors_total.labels(self.run_id, kind).inc()

    def query_observer(self) -> Callable[[float], None]:
        """Observes one latency of the queries beside an open loop (from each query's intended start)."""
        if self._paced_queries is None:
            self._paced_queries = Histogram("harness_open_loop_query_latency_seconds", "A query beside an open "
                                            "loop: its latency from its intended start.", ("run_id",),
                                            buckets=LATENCY_BUCKETS, registry=self.registry)
        return self._paced_queries.labels(self.run_id).observe

    def open_loop(self, rate: float, behind: Callable[[], int]) -> Callable[[str], Callable[[float], None]]:
        """Export an open loop's rate and backlog (``behind``: rows due that have not gone out, read at each
        scrape) from now on; returns, for a latency figure's name, the function that observes one sample. The
        series are made at the first rate held: a closed-loop run draws no flat lines in the open-loop panels."""
        if self._open_loop is None:
            self._open_loop = (
                Histogram("harness_open_loop_latency_seconds", "An open-loop chunk's latency from its intended time: "
                          "schedule_delay (to its send's start), acknowledged (to the server's answer), freshness "
                          "(to visible to a query).", ("run_id", "figure"), buckets=LATENCY_BUCKETS,
                          registry=self.registry),
                Gauge("harness_open_loop_backlog_rows", "Rows of the chunks due that have not gone out.",
                      ("run_id",), registry=self.registry),
                Gauge("harness_open_loop_target_rows_per_second", "The rate the open loop holds.", ("run_id",),
                      registry=self.registry))
            for figure in OPEN_LOOP_FIGURES:
                self._open_loop[0].labels(self.run_id, figure)
        latency, backlog, target = self._open_loop
        backlog.labels(self.run_id).set_function(behind)
        target.labels(self.run_id).set(rate)
        return lambda figure: latency.labels(self.run_id, figure).observe

    def close(self, linger: bool = True) -> None:
        """Keep serving for the linger time (unless ``linger`` is false) so Prometheus gets a final scrape,
        then stop."""
        if self._server is None:
            return
        if linger and self.linger_seconds > 0:
            time.sleep(self.linger_seconds)
        self._server.shutdown()
        self._server.server_close()
        self._server = None


class _PhaseCounters(Collector):
    """Rows, bytes and flushes per phase and worker, read from the phases' counters at scrape time.

    Every (phase, worker) series exists from the start at 0: a series born at its first chunk would be
    first scraped already at N, and rate() never counts the increase before a series' first sample (a
    phase shorter than the scrape interval would show no throughput at all)."""

    def __init__(self, metrics: RunMetrics):
        self.metrics = metrics

    def collect(self):
        run_id = self.metrics.run_id
        rows = CounterMetricFamily("harness_rows", "Rows processed, by phase and worker.",
                                   labels=("run_id", "phase", "worker"))
        nbytes = CounterMetricFamily("harness_ilp_bytes", "ILP bytes produced (serialize) or sent (send).",
                                     labels=("run_id", "phase", "worker"))
        flushes = CounterMetricFamily("harness_flushes", "Sender flushes.", labels=("run_id", "worker"))
        # Rows per table, where a chunk holds several tables (devops: one per measurement).
        tables = CounterMetricFamily("harness_table_rows", "Rows processed, by phase and table.",
                                     labels=("run_id", "phase", "table"))
        flush_counts = [0] * self.metrics.workers
        for phase in self.metrics.counted_phases:
            progress = self.metrics._progress.get(phase)
            worker_rows = progress.worker_rows if progress else [0] * self.metrics.workers
            worker_bytes = progress.worker_bytes if progress else [0] * self.metrics.workers
            for worker, (count, size) in enumerate(zip(worker_rows, worker_bytes)):
                rows.add_metric((run_id, phase, str(worker)), count)
                nbytes.add_metric((run_id, phase, str(worker)), size)
            if progress:
                for worker, count in enumerate(progress.worker_flushes):
                    flush_counts[worker] += count
                for table, count in dict(progress.table_rows).items():
                    tables.add_metric((run_id, phase, table), count)
        for worker, count in enumerate(flush_counts):
            flushes.add_metric((run_id, str(worker)), count)
        yield from (rows, nbytes, tables)
        if self.metrics.flushes:
            yield flushes


# From a sub-millisecond lastpoint to a query near a minute-long --timeout.
QUERY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class QueryRunMetrics(RunMetrics):
    """A query run's metrics: the run's info, phase (``queries`` until ``done`` or ``failed``) and errors as
    for an ingest run, plus each counted query's latency by type (the histogram's ``_count`` is the queries
    done, so ``rate()`` of it is queries/s) and failed queries by type and kind (``failure_kinds``: rejected,
    timeout). Every type's series, and every (type, kind) failure series, exists from the start at 0: a
    panel shows 0 rather than no data, and a type's first query or failure already shows as a rate."""

    phase_names = ("queries", "done", "failed")
    counted_phases = ()  # no rows or bytes of its own: the ingest panels show nothing for it
    flushes = False

    def __init__(self, run_id: str, parameters: dict, port: int | None = None, linger_seconds: float = 0.0,
                 registry: CollectorRegistry | None = None, query_types: tuple[str, ...] = (),
                 failure_kinds: tuple[str, ...] = (), host: str | None = None):
        super().__init__(run_id, parameters, port, linger_seconds, registry, host=host)
        self.query_seconds = Histogram("harness_query_duration_seconds", "Latency of one counted query, by type.",
                                       ("run_id", "query_type"), buckets=QUERY_BUCKETS, registry=self.registry)
        self.query_failures = Counter("harness_query_failures", "Queries that failed, by type and kind.",
                                      ("run_id", "query_type", "kind"), registry=self.registry)
        for query_type in query_types:
            self.query_seconds.labels(run_id, query_type)
            for kind in failure_kinds:
                self.query_failures.labels(run_id, query_type, kind)
        self.set_phase("queries")

    def observe_query(self, query_type: str, seconds: float) -> None:
        self.query_seconds.labels(self.run_id, query_type).observe(seconds)

    def query_failed(self, query_type: str, kind: str) -> None:
        self.query_failures.labels(self.run_id, query_type, kind).inc()


class ReadRunMetrics(RunMetrics):
    """A read run's metrics: the run's info, phase (``read`` until ``done`` or ``failed``) and errors, rows
    and bytes received per worker as ``harness_rows``/``harness_ilp_bytes`` with ``phase="read"`` (the bytes
    are the answer's on the wire, not ILP), and the seconds to the first rows once they came."""

    phase_names = ("read", "done", "failed")
    counted_phases = ("read",)
    flushes = False

    def __init__(self, run_id: str, parameters: dict, port: int | None = None, linger_seconds: float = 0.0,
                 workers: int = 1, host: str | None = None):
        super().__init__(run_id, parameters, port, linger_seconds, workers=workers, host=host)
        self.first_rows_seconds = Gauge("harness_read_first_rows_seconds", "Seconds from a read's start to its "
                                        "first DataFrame (0 until then).", ("run_id",), registry=self.registry)
        self.first_rows_seconds.labels(run_id).set(0)
        self.set_phase("read")
