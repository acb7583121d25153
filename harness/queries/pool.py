"""The query workers: ``workers`` connections opened together (PGWire through asyncpg, HTTP ``/exec`` on threads
of a shared pool, or QWP through the questdb client on a thread each), each an asyncio task taking the next query
from one shared queue in file order, as TSBS's workers do; every answer timed, counted (the first ``burn_in`` not),
handed to the checker, and a rejected or timed-out query counted per type while the run goes on.

A protocol is one connection class and one entry of ``_CONNECTIONS`` (imported when that protocol runs: QWP's
loads the questdb client): its ``wire`` form of a query, made before the clock starts, and ``from_options``, which
opens one connection (``threads``: whether it takes the pool's threads), and what it needs of the server.
"""

from __future__ import annotations

import asyncio
import importlib
import time
import typing
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum

from harness.errors import interrupt_requested
from harness.queries.answer import Answer
from harness.questdb.credentials import HttpLogin, PgLogin
from harness.questdb.features import QWP_QUERIES
from harness.questdb.tls import HttpTls, PgTls
from harness.queries.clients import QueryFailed, WireQuery, quiet_orphaned_losses
from harness.queries.stats import QueryProgress, QueryStats
from harness.tsbs.query_types import Query

QueryWork = tuple[int, Query, WireQuery]  # a query's place in the run, the query, its wire form


class Protocol(StrEnum):
    pgwire = "pgwire"
    http = "http"
    qwp = "qwp"


@dataclass(frozen=True)
class _Entry:
    """A protocol's connection class (``"module:class"``) and what it needs of the server
    (``harness.questdb.features``)."""

    connection: str
    needs: tuple[str, ...] = ()


_CONNECTIONS = {
    Protocol.pgwire: _Entry("harness.queries.clients:PgwireConnection"),
    Protocol.http: _Entry("harness.queries.clients:HttpConnection"),
    Protocol.qwp: _Entry("harness.queries.qwp:QwpConnection", needs=(QWP_QUERIES,)),
}


class PoolOptions(typing.Protocol):
    """What the workers read of a query run's options (``QueriesRunOptions``)."""

    protocol: Protocol
    host: str
    http_port: int
    pg_port: int
    workers: int
    timeout: float
    burn_in: int
    reporting_period: float

    def http_login(self) -> HttpLogin | None: ...

    def http_tls(self) -> HttpTls: ...

    def pg_login(self) -> PgLogin: ...

    def pg_tls(self) -> PgTls: ...


def connection_class(protocol: Protocol) -> type:
    """The connection class of ``protocol``, its module imported."""
    module, _, name = _CONNECTIONS[Protocol(protocol)].connection.partition(":")
    return getattr(importlib.import_module(module), name)


def needed_features(protocol: Protocol) -> tuple[str, ...]:
    """What ``protocol`` needs of the server, asked before the queries run."""
    return _CONNECTIONS[Protocol(protocol)].needs


def wire_form(protocol: Protocol) -> Callable[[Query], WireQuery]:
    """How ``protocol``'s connections put a query on the wire."""
    return connection_class(protocol).wire


def run_queries_on_workers(options: PoolOptions, work: list[QueryWork], stats: QueryStats,
                           checker: Callable[[Query, Answer], None] | None, say: Callable[[str], None]) -> None:
    """Every query of ``work`` on ``options.workers`` connections; returns when all ran (or one connection
    was lost: its error)."""
    asyncio.run(_run_all(options, work, stats, checker, say))


async def _run_all(options: PoolOptions, work: list[QueryWork], stats: QueryStats,
                   checker: Callable[[Query, Answer], None] | None, say: Callable[[str], None]) -> None:
    quiet_orphaned_losses(asyncio.get_running_loop())
    connection = connection_class(options.protocol)
    executor = ThreadPoolExecutor(options.workers, "query") if connection.threads else None
    connections = []
    try:
        # Made together, as TSBS's workers each make theirs; the ones made are closed whatever failed.
        opened = await asyncio.gather(*(connection.from_options(options, executor) for _ in range(options.workers)),
                                      return_exceptions=True)
        connections = [one for one in opened if not isinstance(one, BaseException)]
        if len(connections) < len(opened):
            raise next(one for one in opened if isinstance(one, BaseException))
        pending = iter(work)  # each worker takes the next query from it
        progress = QueryProgress(stats, options.reporting_period, say)
        reporter = asyncio.create_task(_report(progress)) if options.reporting_period > 0 else None
        try:
            await asyncio.gather(*(_worker(connection, pending, options, stats, checker)
                                   for connection in connections))
        finally:
            if reporter is not None:
                reporter.cancel()
    finally:
        for connection in connections:
            await connection.close()
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


async def _report(progress: QueryProgress) -> None:
    while True:
        await asyncio.sleep(progress.period)
        progress.tick()


async def _worker(connection, pending: Iterator[QueryWork], options: PoolOptions, stats: QueryStats,
                  checker: Callable[[Query, Answer], None] | None) -> None:
    for index, query, wire in pending:
        if interrupt_requested():  # the signal's KeyboardInterrupt was lost inside the driver's callbacks
            raise KeyboardInterrupt
        started = time.perf_counter()
        try:
            seconds, answer = await connection.run(wire, options.timeout, checker is not None)
        except QueryFailed as failure:
            stats.fail(query.query_type, failure.kind, str(failure))
            continue
        stats.add(query.query_type, query.label, started, seconds, index >= options.burn_in)
        if checker is not None:
            checker(query, answer)
