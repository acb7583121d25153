"""Live metrics of one run, for Prometheus: rows and bytes per phase and worker, flushes, errors, phase.

Owns the names the Grafana dashboard queries. Every series carries ``run_id`` so the dashboard's run
selector can pick one run among many. Counting happens whether or not the HTTP endpoint is served
(``port=None``), because the final values also go into the results JSON.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, ProcessCollector, start_http_server

from harness.errors import UsageError

PHASES = ("generate", "serialize", "send", "validate", "done", "failed")
# The phases that count rows and bytes per worker (the others only time).
COUNTED_PHASES = ("serialize", "send")
# From a sub-millisecond flush of a small chunk to a server that stalls for seconds.
FLUSH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class RunMetrics:
    """The metrics of one run, in a registry of its own (so several runs can live in one process).

    ``parameters`` become the info metric's labels; ``workers`` is how many worker series to create up
    front (at 0), so that every worker's first chunk already shows as a rate."""

    def __init__(self, run_id: str, parameters: dict, port: int | None = None, linger_seconds: float = 0.0,
                 registry: CollectorRegistry | None = None, workers: int = 1):
        self.run_id = run_id
        self.port = port
        self.linger_seconds = linger_seconds
        if registry is None:
            registry = CollectorRegistry(auto_describe=True)
            # The client process's CPU seconds and memory (process_cpu_seconds_total, ...; read from /proc
            # at scrape time only): CPU near workers x 1 core is what a client-bound run looks like.
            ProcessCollector(registry=registry)
        self.registry = registry
        self._server = None
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, int], int] = defaultdict(int)
        self._bytes: dict[tuple[str, int], int] = defaultdict(int)
        self._flushes = 0
        self._errors: dict[str, int] = defaultdict(int)
        self._children: dict[tuple[str, int], tuple] = {}

        labels = ("run_id", "phase", "worker")
        self.rows_total = Counter("harness_rows", "Rows processed, by phase and worker.", labels,
                                  registry=self.registry)
        self.bytes_total = Counter("harness_ilp_bytes", "ILP bytes produced (serialize) or sent (send).", labels,
                                   registry=self.registry)
        self.flushes_total = Counter("harness_flushes", "Sender flushes.", ("run_id", "worker"),
                                     registry=self.registry)
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
        for phase in PHASES:
            self.phase.labels(run_id, phase).set(0)
        # Zero-valued series exist from the start, so rate() has a baseline and panels show 0, not "no data".
        # That includes every (phase, worker) series of rows, bytes and flushes: a series born at its first
        # chunk would be first scraped already at N, and rate() never counts the increase before a series'
        # first sample (a phase shorter than the scrape interval would show no throughput at all).
        self.errors_total.labels(run_id, "none")
        self.flush_seconds.labels(run_id)
        for worker in range(workers):
            for phase in COUNTED_PHASES:
                self._child(phase, worker)
            self.flushes_total.labels(run_id, str(worker))

    def start(self) -> None:
        """Serve /metrics on all interfaces at ``port`` (nothing to do when ``port`` is None)."""
        if self.port is None:
            return
        try:
            self._server, _ = start_http_server(self.port, addr="0.0.0.0", registry=self.registry)
        except OSError as exc:
            raise UsageError(f"--metrics-port {self.port}: cannot serve metrics: {exc.strerror or exc}") from None

    def set_phase(self, phase: str) -> None:
        for name in PHASES:
            self.phase.labels(self.run_id, name).set(1 if name == phase else 0)

    def _child(self, phase: str, worker: int) -> tuple:
        key = (phase, worker)
        children = self._children.get(key)
        if children is None:
            children = (self.rows_total.labels(self.run_id, phase, str(worker)),
                        self.bytes_total.labels(self.run_id, phase, str(worker)))
            self._children[key] = children
        return children

    def add(self, phase: str, worker: int, rows: int, nbytes: int) -> None:
        key = (phase, worker)
        children = self._child(phase, worker)
        children[0].inc(rows)
        children[1].inc(nbytes)
        with self._lock:
            self._rows[key] += rows
            self._bytes[key] += nbytes

    def observe_flush(self, worker: int, seconds: float) -> None:
        self.flushes_total.labels(self.run_id, str(worker)).inc()
        self.flush_seconds.labels(self.run_id).observe(seconds)
        with self._lock:
            self._flushes += 1

    def error(self, kind: str) -> None:
        self.errors_total.labels(self.run_id, kind).inc()
        with self._lock:
            self._errors[kind] += 1

    def snapshot(self) -> dict:
        """The final counter values, as they were exported, for the results JSON."""
        with self._lock:
            phases: dict[str, dict] = {}
            for (phase, worker), rows in sorted(self._rows.items()):
                entry = phases.setdefault(phase, {"rows": 0, "bytes": 0, "workers": {}})
                nbytes = self._bytes[(phase, worker)]
                entry["rows"] += rows
                entry["bytes"] += nbytes
                entry["workers"][str(worker)] = {"rows": rows, "bytes": nbytes}
            return {"run_id": self.run_id, "phases": phases, "flushes": self._flushes, "errors": dict(self._errors),
                    "port": self.port}

    def close(self) -> None:
        """Keep serving for the linger time so Prometheus gets a final scrape, then stop."""
        if self._server is None:
            return
        if self.linger_seconds > 0:
            time.sleep(self.linger_seconds)
        self._server.shutdown()
        self._server.server_close()
        self._server = None

