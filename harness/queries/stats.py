"""Query latencies and failures as the run collects them, and the summary they become: TSBS's per-type
lines (min, median, mean, max, stddev, sum, count; milliseconds) plus percentiles and queries/s.

Every latency is kept (8 bytes a query), so the percentiles are exact: numpy's linear interpolation
between the closest ranks. The standard deviation is the population one (TSBS's online statistics are
too). The overall rate is the counted queries over the wall time to the last one's end from the run's start,
before its connections were made, as TSBS's ``Overall query rate`` counts from its runner's start (with
burn-in queries, from the first counted query's start: the burn-in has taken the set-up). A type's rate is
its own count over its own span, from its first query's start to its last one's end (TSBS's query files,
and ours, hold each type's queries in one block, so that span is the time the run spent on that type).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import numpy as np

from harness.records.run_record import ALL_QUERIES, LatencyStats, QueryPass

PERCENTILES = (90.0, 95.0, 99.0, 99.9)
ERROR_SAMPLES = 5


def latency_stats(latencies_seconds: list[float], first_start: float, last_end: float) -> LatencyStats:
    """The figures of queries that took ``latencies_seconds``, run from ``first_start`` to ``last_end``."""
    ms = np.asarray(latencies_seconds, dtype=np.float64) * 1000.0
    p90, p95, p99, p999 = np.percentile(ms, PERCENTILES)
    seconds = max(last_end - first_start, 0.0)
    return LatencyStats(len(ms), float(ms.min()), float(np.median(ms)), float(ms.mean()), float(ms.max()),
                        float(ms.std()), float(ms.sum()), float(p90), float(p95), float(p99), float(p999),
                        round(seconds, 6), len(ms) / seconds if seconds > 0 else 0.0)


class QueryStats:
    """Latencies per query type and failures per type and kind; safe to add to from several threads."""

    def __init__(self, metrics=None):
        self.metrics = metrics  # a QueryRunMetrics fed the same events, or None
        self._lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self._spans: dict[str, list[float]] = {}
        self.labels: dict[str, str] = {}
        self.failures: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.failure_samples: list[str] = []
        self.done = 0  # every finished query, burn-in and failures included
        self.counted = 0
        # When the run began, before its connections (perf_counter); None: the overall rate starts at the first
        # counted query (burn-in).
        self.started: float | None = None

    def add(self, query_type: str, label: str, started: float, seconds: float, counted: bool) -> None:
        with self._lock:
            self.done += 1
            if not counted:
                return
            self.counted += 1
            self.labels.setdefault(query_type, label)
            self.latencies[query_type].append(seconds)
            end = started + seconds
            span = self._spans.setdefault(query_type, [started, end])
            span[0], span[1] = min(span[0], started), max(span[1], end)
        if self.metrics is not None:
            self.metrics.observe_query(query_type, seconds)

    def fail(self, query_type: str, kind: str, message: str) -> None:
        with self._lock:
            self.done += 1
            self.failures[query_type][kind] += 1
            if len(self.failure_samples) < ERROR_SAMPLES:
                self.failure_samples.append(f"{query_type}: {kind}: {message}")
        if self.metrics is not None:
            self.metrics.query_failed(query_type, kind)

    @property
    def failed(self) -> int:
        return sum(sum(kinds.values()) for kinds in self.failures.values())

    def summary(self) -> dict[str, LatencyStats]:
        """Per type in the order first seen, then ``ALL_QUERIES``; empty when nothing was counted."""
        with self._lock:
            result = {query_type: latency_stats(latencies, *self._spans[query_type])
                      for query_type, latencies in self.latencies.items()}
            if result:
                everything = [latency for latencies in self.latencies.values() for latency in latencies]
                first = min(span[0] for span in self._spans.values())
                if self.started is not None:
                    first = min(first, self.started)
                last = max(span[1] for span in self._spans.values())
                result[ALL_QUERIES] = latency_stats(everything, first, last)
            return result

    def failures_dict(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {query_type: dict(kinds) for query_type, kinds in self.failures.items()}

    def figures(self) -> QueryPass:
        """The pass as its record holds it."""
        return QueryPass(self.summary(), dict(self.labels), self.failures_dict(), list(self.failure_samples))


def format_summary(summary: dict[str, LatencyStats], labels: dict[str, str], workers: int) -> str:
    """TSBS's end-of-run report, each type's line followed by ours (percentiles, queries/s)."""
    if ALL_QUERIES not in summary:
        return "No query was counted."
    overall = summary[ALL_QUERIES]
    lines = [f"Run complete after {overall.count} queries with {workers} workers "
             f"(Overall query rate {overall.queries_per_second:.2f} queries/sec):"]
    for name, stats in summary.items():
        title = f"{name}: {labels[name]}" if name in labels else name
        lines.append(f"{title}:")
        lines.append(f"min: {stats.min_ms:8.2f}ms, med: {stats.median_ms:8.2f}ms, mean: {stats.mean_ms:8.2f}ms, "
                     f"max: {stats.max_ms:7.2f}ms, stddev: {stats.stddev_ms:8.2f}ms, "
                     f"sum: {stats.sum_ms / 1000:5.1f}sec, count: {stats.count}")
        lines.append(f"p90: {stats.p90_ms:8.2f}ms, p95: {stats.p95_ms:8.2f}ms, p99: {stats.p99_ms:8.2f}ms, "
                     f"p99.9: {stats.p99_9_ms:7.2f}ms, rate: {stats.queries_per_second:.2f} queries/sec")
    return "\n".join(lines)


def format_slowdown(under_load: dict[str, LatencyStats], at_rest: dict[str, LatencyStats]) -> str:
    """Each type's median latency and rate under load against at rest, as ratios from one run."""
    lines = ["Slowdown under load (same queries; ratios under load / at rest):",
             f"{'query type':24} {'med. load':>10} {'med. rest':>10} {'ratio':>6} {'q/s load':>9} {'q/s rest':>9} {'ratio':>6}"]
    for name, loaded in under_load.items():
        rest = at_rest.get(name)
        if rest is None:
            continue
        median_ratio = loaded.median_ms / rest.median_ms if rest.median_ms else float("nan")
        rate_ratio = loaded.queries_per_second / rest.queries_per_second if rest.queries_per_second else float("nan")
        lines.append(f"{name:24} {loaded.median_ms:8.2f}ms {rest.median_ms:8.2f}ms {median_ratio:5.2f}x "
                     f"{loaded.queries_per_second:9.2f} {rest.queries_per_second:9.2f} {rate_ratio:5.2f}x")
    return "\n".join(lines)


class QueryProgress:
    """Periodic lines while queries run: ``time,queries,failed,per. queries/s,overall queries/s``."""

    HEADER = "time,queries,failed,per. queries/s,overall queries/s"

    def __init__(self, stats: QueryStats, period: float, say):
        self.stats, self.period, self.say = stats, period, say
        self.started = self.last_time = time.perf_counter()
        self.last_done = 0
        self.header_printed = False

    def tick(self) -> None:
        now = time.perf_counter()
        done, failed = self.stats.done, self.stats.failed
        if not self.header_printed:
            self.say(self.HEADER)
            self.header_printed = True
        period_rate = (done - self.last_done) / (now - self.last_time) if now > self.last_time else 0.0
        overall = done / (now - self.started) if now > self.started else 0.0
        self.say(f"{int(time.time())},{done},{failed},{period_rate:.2f},{overall:.2f}")
        self.last_time, self.last_done = now, done
