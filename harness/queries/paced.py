"""Queries at a fixed rate beside an ingest (``bench --rate --queries FILE --query-rate Q``): query ``i`` is
due ``i / Q`` seconds after the start, its latency measured from then (a query that waited for a busy
connection counts its wait, as the open loop's chunks do), the file's queries taken in turn and again from
the first when they run out.

Runs on a thread of its own with an event loop and ``connections`` connections (PGWire or HTTP, as
``queries run`` makes them); each connection takes the next due query. Latencies go to an HdrHistogram, overall
and per query type; failures are counted by type and kind.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from harness.queries.clients import HttpConnection, PgwireConnection, QueryFailed, quiet_orphaned_losses
from harness.questdb.credentials import HttpLogin, PgLogin
from harness.questdb.tls import HttpTls, PgTls
from harness.telemetry.latency import Latencies
from harness.tsbs.query_file import Query

# A query slower than this fails as timed out (and its connection is made again).
QUERY_TIMEOUT_SECONDS = 60.0


class PacedQueries:
    """``queries`` at ``rate`` per second over ``connections`` connections, from ``start()`` to ``stop()``."""

    def __init__(self, queries: list[Query], rate: float, protocol: str, host: str, port: int,
                 login: PgLogin | HttpLogin | None, tls: PgTls | HttpTls | None, connections: int = 2,
                 timeout: float = QUERY_TIMEOUT_SECONDS, observer: Callable[[float], None] | None = None):
        self.queries = queries
        self.rate = rate
        self.protocol = protocol
        self.host, self.port, self.login, self.tls = host, port, login, tls
        self.connections = connections
        self.timeout = timeout
        self.latency = Latencies(observer)
        self.by_type: dict[str, Latencies] = {}
        self.failures: Counter[tuple[str, str]] = Counter()
        self.failure_sample: str | None = None
        self.late = 0  # queries that started a query interval or more after their time
        self.error: BaseException | None = None  # what stopped them (a connection refused)
        self._next = itertools.count()
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="paced-queries", daemon=True)
        self.start_time: float | None = None

    @property
    def done(self) -> int:
        return self.latency.count

    def start(self) -> None:
        """Connect, then start the schedule; a connection refused raises here (one line)."""
        self._thread.start()
        self._started.wait()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.timeout + 5)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # handed to the caller, who reports it
            self.error = exc
        finally:
            self._started.set()

    async def _main(self) -> None:
        quiet_orphaned_losses(asyncio.get_running_loop())
        executor = ThreadPoolExecutor(self.connections, "paced-query") if self.protocol == "http" else None
        connections = []
        try:
            for _ in range(self.connections):
                connections.append(await self._open(executor))
            self.start_time = time.perf_counter()
            self._started.set()
            await asyncio.gather(*(self._worker(connection) for connection in connections))
        finally:
            for connection in connections:
                await connection.close()
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)

    async def _open(self, executor):
        if self.protocol == "pgwire":
            return await PgwireConnection.open(self.host, self.port, self.login, self.tls)
        return await HttpConnection.open(self.host, self.port, executor, self.login, self.tls)

    async def _worker(self, connection) -> None:
        wire_form = connection.wire
        interval = 1.0 / self.rate
        while not self._stop.is_set():
            index = next(self._next)
            intended = self.start_time + index * interval
            wait = intended - time.perf_counter()
            while wait > 0 and not self._stop.is_set():
                await asyncio.sleep(min(wait, 0.1))
                wait = intended - time.perf_counter()
            if self._stop.is_set():
                return
            if -wait >= interval:
                self.late += 1
            query = self.queries[index % len(self.queries)]
            try:
                await connection.run(wire_form(query), self.timeout, False)
            except QueryFailed as failure:
                self.failures[(query.query_type, failure.kind)] += 1
                self.failure_sample = self.failure_sample or f"{query.query_type}: {failure}"
                continue
            seconds = time.perf_counter() - intended
            self.latency.record(seconds)
            self.by_type.setdefault(query.query_type, Latencies()).record(seconds)
