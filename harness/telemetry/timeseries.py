"""A run's time series: what it did second by second, sampled while it runs and kept in its record.

A ``Sampler`` thread reads, every ``interval`` seconds, the phases' own live counters (``PhaseProgress``:
the same the progress lines, the metrics and the record read), the client process's CPU time and memory
(psutil), the QuestDB process's too where it runs on this machine (``harness.questdb.process`` finds it),
and, where QuestDB's ``/metrics`` answers, the server's WAL counters: rows written to the WAL,
rows applied to the tables, and the sequencer and writer transaction numbers (their difference is the
apply lag), the out-of-order commits and the rows the WAL apply wrote to disk. Counts are cumulative, so rates come from differences and the last sample equals the totals.
Past ``max_samples`` every other sample is dropped and the interval doubles: a long run keeps a bounded
series over its whole length.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import psutil

from harness.telemetry.phase import PhaseProgress

if TYPE_CHECKING:
    import ssl

DEFAULT_INTERVAL_SECONDS = 1.0
DEFAULT_MAX_SAMPLES = 3600
# QuestDB's /metrics series (9.x) the series keeps, under shorter names.
SERVER_SERIES = {
    "questdb_wal_written_rows_total": "wal_written_rows",
    "questdb_wal_apply_written_rows_total": "wal_applied_rows",
    "questdb_wal_apply_seq_txn": "sequencer_txn",
    "questdb_wal_apply_writer_txn": "writer_txn",
    # What out-of-order rows cost the server: commits that merged rows into the past, and rows it wrote
    # to disk while applying the WAL (more than were applied when merges rewrote partitions).
    "questdb_o3_commits_total": "o3_commits",
    "questdb_wal_apply_physically_written_rows_total": "wal_physically_written_rows",
}
SERVER_TIMEOUT_SECONDS = 0.5


@dataclass
class Sample:
    """One moment of a run; ``rows``/``bytes`` are cumulative per phase, one count per worker."""

    t: float  # seconds since the sampler started
    rows: dict[str, list[int]]
    bytes: dict[str, list[int]]
    client_cpu_seconds: float
    client_rss_bytes: int
    server: dict[str, float] | None = None  # SERVER_SERIES values, where /metrics answered
    server_cpu_seconds: float | None = None  # the QuestDB process's, where it is local
    server_rss_bytes: int | None = None


@dataclass
class TimeSeries:
    interval_seconds: float
    samples: list[Sample] = field(default_factory=list)
    server_metrics_url: str | None = None
    server_error: str | None = None  # why there are no server values, when /metrics never answered

    def server_increase(self, key: str) -> float | None:
        """How much a cumulative server counter (``SERVER_SERIES``) grew from the run's first sample to its
        last; None where the server was sampled fewer than twice."""
        values = [sample.server[key] for sample in self.samples if sample.server and key in sample.server]
        return values[-1] - values[0] if len(values) >= 2 else None

    def disk_rows_per_applied_row(self) -> float | None:
        """Rows the WAL apply wrote to disk per row it applied over the run: above 1 where out-of-order rows
        made it rewrite what was already in the table."""
        applied = self.server_increase("wal_applied_rows")
        disk = self.server_increase("wal_physically_written_rows")
        return disk / applied if disk is not None and applied else None

    def transactions_behind(self) -> list[tuple[float, float]]:
        """The WAL apply's lag at each sample that has it: (t, transactions committed but not yet applied)."""
        return [(sample.t, sample.server["sequencer_txn"] - sample.server["writer_txn"]) for sample in self.samples
                if sample.server and {"sequencer_txn", "writer_txn"} <= sample.server.keys()]

    def most_transactions_behind(self) -> float | None:
        """The WAL apply's largest lag over the run, in transactions."""
        lags = [lag for _, lag in self.transactions_behind()]
        return max(lags) if lags else None


def server_metrics(url: str, headers: Mapping[str, str] | None = None,
                   context: ssl.SSLContext | None = None) -> dict[str, float]:
    """The WAL counters from QuestDB's Prometheus endpoint (``headers``: its login, where it asks for one;
    ``context``: the TLS of an https:// URL); OSError when it does not answer."""
    # Imported here: a tenth of a second of every command's start-up (the parser, and urllib.request's HTTP
    # and email modules), needed only where a server is sampled.
    from http.client import HTTPException
    from urllib.request import Request, urlopen

    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urlopen(Request(url, headers=dict(headers or {})), timeout=SERVER_TIMEOUT_SECONDS,
                     context=context) as response:
            text = response.read().decode()
    except HTTPException as exc:  # not HTTP at all (a TLS port asked in plain): as a port that does not answer
        raise OSError(f"no HTTP answer ({type(exc).__name__}: {exc})") from None
    values = {}
    # Line by line, the series kept only: QuestDB (9.3.4) may answer ``null`` for a value while a table is
    # made, which fails the parser on the whole text; such a series is left out of this sample alone.
    for line in text.splitlines():
        if line.partition(" ")[0] not in SERVER_SERIES:
            continue
        try:
            samples = [sample for family in text_string_to_metric_families(line) for sample in family.samples]
        except ValueError:
            continue
        for sample in samples:
            values[SERVER_SERIES[sample.name]] = sample.value
    return values


@dataclass(frozen=True)
class Sampling:
    """How a run's time series is sampled: every ``interval`` seconds (0: never), QuestDB's ``/metrics`` at
    ``metrics_url`` (None: not sampled, as into the sink) with its login's headers and its TLS, and the server's
    process where it runs on this machine (``find_server_process`` finds it; None: elsewhere)."""

    interval: float
    metrics_url: str | None = None
    metrics_headers: Mapping[str, str] | None = None
    metrics_tls: ssl.SSLContext | None = None
    find_server_process: Callable[[], psutil.Process | None] | None = None


class Sampler:
    """Samples ``phases`` (a mapping the run fills as its phases start) on a daemon thread; use as a context
    manager, or ``start()`` and ``stop()``. ``series`` holds the samples, a last one taken at stop.

    The first sample, the series' baseline, is taken on the thread too (QuestDB's /metrics answers after up
    to ~50 ms, and finding the server's process by its port takes ~15 ms): ``start`` returns at once, so the
    caller may do work the series need not see (checks, DDL) and then ``wait_first``; entering the ``with``
    block waits for it. ``find_server_process``, where given, is asked on the thread before that sample."""

    def __init__(self, phases: Mapping[str, PhaseProgress], interval: float = DEFAULT_INTERVAL_SECONDS,
                 server_metrics_url: str | None = None, max_samples: int = DEFAULT_MAX_SAMPLES,
                 find_server_process: Callable[[], psutil.Process | None] | None = None,
                 server_metrics_headers: Mapping[str, str] | None = None,
                 server_metrics_context: ssl.SSLContext | None = None):
        self.phases = phases
        # The login of a protected /metrics: kept here, never in the series (which the record holds); the TLS
        # of an https:// one.
        self._server_metrics_headers = server_metrics_headers
        self._server_metrics_context = server_metrics_context
        self.server_process: psutil.Process | None = None  # found by ``find_server_process`` on the thread
        self.series = TimeSeries(interval, server_metrics_url=server_metrics_url)
        self.max_samples = max_samples
        self._find_server_process = find_server_process
        self._process = psutil.Process()
        self._started = time.perf_counter()
        self._stop = threading.Event()
        self._first = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._server_failures = 0

    def __enter__(self) -> Sampler:
        self.start()
        self.wait_first()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._started = time.perf_counter()
        self._thread.start()

    def wait_first(self) -> None:
        """Return once the first sample is in the series (at once if the thread has ended without it)."""
        while not self._first.wait(0.1) and self._thread.is_alive():
            pass

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sample()

    def _run(self) -> None:
        try:
            if self._find_server_process is not None:
                self.server_process = self._find_server_process()
            self.sample()
        finally:
            self._first.set()
        while not self._stop.wait(self.series.interval_seconds):
            self.sample()

    def sample(self) -> None:
        rows, nbytes = {}, {}
        for name, progress in list(self.phases.items()):
            rows[name], nbytes[name] = list(progress.worker_rows), list(progress.worker_bytes)
        cpu = self._process.cpu_times()
        server_cpu = server_rss = None
        if self.server_process is not None:
            try:
                with self.server_process.oneshot():
                    times = self.server_process.cpu_times()
                    server_cpu = round(times.user + times.system, 3)
                    server_rss = self.server_process.memory_info().rss
            except psutil.Error:
                self.server_process = None  # it stopped: the run will say so; the series just ends here
        sample = Sample(round(time.perf_counter() - self._started, 3), rows, nbytes,
                        round(cpu.user + cpu.system, 3), self._process.memory_info().rss, self._server(),
                        server_cpu, server_rss)
        samples = self.series.samples
        samples.append(sample)
        if len(samples) > self.max_samples:
            # Keep the first and the newest; cumulative counts lose nothing but resolution.
            self.series.samples = samples[:-1:2] + [samples[-1]]
            self.series.interval_seconds *= 2

    def _server(self) -> dict[str, float] | None:
        url = self.series.server_metrics_url
        # A server that never answered is asked again only now and then: a sample must stay cheap.
        if url is None or (self._server_failures >= 3 and len(self.series.samples) % 10):
            return None
        try:
            values = server_metrics(url, self._server_metrics_headers, self._server_metrics_context)
        except (OSError, ValueError) as exc:
            self._server_failures += 1
            self.series.server_error = f"{url}: {getattr(exc, 'reason', None) or exc}"
            return None
        self._server_failures = 0
        self.series.server_error = None
        return values


class KeepsSeries(Protocol):
    """What keeps a run's time series (a run record): it is set once sampling starts, and grows as it goes."""

    timeseries: TimeSeries | None


@contextlib.contextmanager
def sampled(sampling: Sampling, phases: Mapping[str, PhaseProgress], keeper: KeepsSeries, overlap: bool = False):
    """The run's time series (``sampling``: how often, and the server's metrics) over the block, in ``keeper``
    however it ends.

    The first sample is the series' baseline. By default the block starts once it is taken; with ``overlap``
    the block starts at once and calls the yielded function before its first work the series must see
    whole (the send), so that checks and DDL before it overlap with the sample's ~50-65 ms."""
    if sampling.interval <= 0:
        yield lambda: None
        return
    sampler = Sampler(phases, sampling.interval, sampling.metrics_url,
                      find_server_process=sampling.find_server_process, server_metrics_headers=sampling.metrics_headers,
                      server_metrics_context=sampling.metrics_tls)
    keeper.timeseries = sampler.series
    sampler.start()
    try:
        if not overlap:
            sampler.wait_first()
        yield sampler.wait_first
    finally:
        sampler.stop()
