"""The query workers: ``workers`` connections opened together (PGWire through asyncpg, or HTTP ``/exec`` on
threads of their own), each an asyncio task taking the next query from one shared queue in file order, as
TSBS's workers do; every answer timed, counted (the first ``burn_in`` not), handed to the checker, and a
rejected or timed-out query counted per type while the run goes on."""

from __future__ import annotations

import asyncio
import time
import typing
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum

from harness.errors import interrupt_requested
from harness.queries.answer import Answer
from harness.questdb.credentials import HttpLogin, PgLogin
from harness.questdb.tls import HttpTls, PgTls
from harness.queries.clients import HttpConnection, PgwireConnection, QueryFailed, WireQuery, quiet_orphaned_losses
from harness.queries.stats import QueryProgress, QueryStats
from harness.tsbs.query_types import Query

QueryWork = tuple[int, Query, WireQuery]  # a query's place in the run, the query, its wire form


class Protocol(StrEnum):
    pgwire = "pgwire"
    http = "http"


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


def wire_form(protocol: Protocol) -> Callable[[Query], WireQuery]:
    """How ``protocol``'s connections put a query on the wire."""
    return (PgwireConnection if protocol == Protocol.pgwire else HttpConnection).wire


def run_queries_on_workers(options: PoolOptions, work: list[QueryWork], stats: QueryStats,
                           checker: Callable[[Query, Answer], None] | None, say: Callable[[str], None]) -> None:
    """Every query of ``work`` on ``options.workers`` connections; returns when all ran (or one connection
    was lost: its error)."""
    asyncio.run(_run_all(options, work, stats, checker, say))


async def _open(options: PoolOptions, executor: ThreadPoolExecutor | None):
    if options.protocol == Protocol.pgwire:
        return await PgwireConnection.open(options.host, options.pg_port, options.pg_login(), options.pg_tls())
    return await HttpConnection.open(options.host, options.http_port, executor, options.http_login(),
                                     options.http_tls())


async def _run_all(options: PoolOptions, work: list[QueryWork], stats: QueryStats,
                   checker: Callable[[Query, Answer], None] | None, say: Callable[[str], None]) -> None:
    quiet_orphaned_losses(asyncio.get_running_loop())
    executor = ThreadPoolExecutor(options.workers, "query") if options.protocol == Protocol.http else None
    connections = []
    try:
        # Made together, as TSBS's workers each make theirs; the ones made are closed whatever failed.
        opened = await asyncio.gather(*(_open(options, executor) for _ in range(options.workers)),
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
