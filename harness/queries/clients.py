"""The query runner's connections: one per worker, over PGWire (asyncpg) or HTTP ``/exec`` (QWP's:
``harness.queries.qwp``), each timing its own queries and turning a failure into what the run counts.

A query's latency is what the client waits for its whole answer: from sending it (over PGWire, preparing a
statement text the connection has not seen yet included, as TSBS's Go runner pays it too) to the last row
received. Parsing the answer into an ``Answer`` is outside the timing and only done when asked (``--check``).

A query the server rejects or that exceeds ``--timeout`` raises ``QueryFailed`` (counted, the run goes
on); a connection that cannot be made or is lost raises ``RunError`` (the run stops).
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
import socket
import time
import urllib.parse
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg

from harness.errors import RunError, UsageError
from harness.queries.answer import Answer, from_exec, from_records
from harness.queries.wire_sql import http_sql, pgwire_sql
from harness.questdb.credentials import HttpLogin, PgLogin, refused_http_login
from harness.questdb.pgwire import NO_TLS, asyncpg_tls, connect_failure
from harness.questdb.tls import HttpTls, PgTls, http_failure
from harness.tsbs.params import parse_rfc3339_ns

# Statements kept prepared per connection; TSBS's host lists make most statement texts distinct, and the
# server holds every prepared statement until its connection closes. pgx v5's capacity (TSBS's Go runner):
# a statement dropped from the cache costs asyncpg a round trip (Close, Sync) before the next query.
STATEMENT_CACHE_SIZE = 512
CONNECT_TIMEOUT_SECONDS = 10.0
REPREPARE_ATTEMPTS = 5
REJECTED, TIMEOUT = "rejected", "timeout"
FAILURE_KINDS = (REJECTED, TIMEOUT)  # what QueryFailed.kind can be
_STATEMENT_NUMBERS = itertools.count(1)
_EPOCH = datetime(1970, 1, 1)  # naive: QuestDB's TIMESTAMP is timestamp without time zone, in UTC


def quiet_orphaned_losses(loop: asyncio.AbstractEventLoop) -> None:
    """Keep asyncpg's orphaned "Future exception was never retrieved" of a closed connection off stderr.

    When a signal ends a run mid-query, asyncpg may set the loss of a connection on a future whose query was
    already abandoned; it is logged when collected, after the run's one line. A loss the run did wait for
    ends it through ``RunError``; every other exception goes to the loop's default handler."""
    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if (context.get("message") == "Future exception was never retrieved"
                and isinstance(context.get("exception"), asyncpg.ConnectionDoesNotExistError)):
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


class QueryFailed(Exception):
    """One query failed without harming its connection: ``kind`` is rejected or timeout."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class WireQuery:
    """A query as its protocol sends it, prepared before the timed part: the SQL and values to bind
    (PGWire), or the fully substituted SQL (HTTP)."""

    sql: str
    values: tuple = ()
    # Each value as a datetime where it is an RFC 3339 time (else None): QuestDB types TSBS's time bounds
    # as TIMESTAMP, and asyncpg binds those from datetimes only. Parsed here, outside the timed part.
    times: tuple = ()


def _as_datetime(value) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return _EPOCH + timedelta(microseconds=parse_rfc3339_ns(value, "query timestamp") // 1000)
    except UsageError:
        return None


def _bind_values(wire: WireQuery, parameters) -> list:
    return [time_value if parameter.name in ("timestamp", "timestamptz") and time_value is not None else value
            for value, time_value, parameter in zip(wire.values, wire.times, parameters)]


class PgwireConnection:
    """One asyncpg connection; each distinct SQL text is prepared once and then only bound."""

    threads = False  # a coroutine of the run's loop

    def __init__(self, connection: asyncpg.Connection, host: str, port: int, login: PgLogin, tls: PgTls = NO_TLS):
        self.connection = connection
        self.host, self.port, self.login, self.tls = host, port, login, tls
        self._statements: OrderedDict[str, asyncpg.prepared_stmt.PreparedStatement] = OrderedDict()

    @staticmethod
    def wire(query) -> WireQuery:
        sql, values = pgwire_sql(query)
        return WireQuery(sql, tuple(values), tuple(_as_datetime(value) for value in values))

    @classmethod
    async def open(cls, host: str, port: int, login: PgLogin, tls: PgTls = NO_TLS) -> PgwireConnection:
        return cls(await cls._connect(host, port, login, tls), host, port, login, tls)

    @classmethod
    async def from_options(cls, options, executor: ThreadPoolExecutor | None) -> PgwireConnection:
        """A connection to the server of a query run's options (``pool.PoolOptions``)."""
        return await cls.open(options.host, options.pg_port, options.pg_login(), options.pg_tls())

    @staticmethod
    async def _connect(host: str, port: int, login: PgLogin, tls: PgTls) -> asyncpg.Connection:
        try:
            return await asyncpg.connect(host=host, port=port, user=login.user, password=login.password,
                                         database=login.database, timeout=CONNECT_TIMEOUT_SECONDS,
                                         statement_cache_size=0, **asyncpg_tls(tls))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
            # The probes of connect_failure block: they run on a thread, the other workers' loop going on.
            line = await asyncio.to_thread(connect_failure, host, port, login, tls, exc)
            raise RunError(line) from None

    async def run(self, wire: WireQuery, timeout: float, want_answer: bool) -> tuple[float, Answer | None]:
        if self.connection is None:
            # The last query timed out: its connection was dropped (below), this one is new and untimed.
            self.connection = await self._connect(self.host, self.port, self.login, self.tls)
        started = time.perf_counter()
        try:
            for attempt in range(1, REPREPARE_ATTEMPTS + 1):
                try:
                    statement, records = await self._execute(wire, timeout, started, want_answer)
                    break
                except asyncpg.InvalidCachedStatementError:
                    # The table changed its column types since the server planned this text (dropped and
                    # created again, LONG for DOUBLE). asyncpg's own cache prepares again once; QuestDB
                    # 9.3.4 keeps stale plans in more than one place, so a few new statements may be needed.
                    self._statements.pop(wire.sql, None)
                    if attempt == REPREPARE_ATTEMPTS:
                        raise
        except asyncio.TimeoutError:
            # asyncpg asks the server to cancel, but QuestDB's connection stays busy until the query ends;
            # a new connection lets the worker go on at once, as an HTTP client that gave up would.
            self.connection.terminate()
            self.connection = None
            self._statements.clear()
            raise QueryFailed(TIMEOUT, f"no answer within {timeout:g}s") from None
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            if self.connection.is_closed():
                raise self._lost(exc) from None
            raise QueryFailed(REJECTED, _one_line(exc)) from None
        except (OSError, ConnectionError) as exc:
            raise self._lost(exc) from None
        seconds = time.perf_counter() - started
        if not want_answer:
            return seconds, None
        return seconds, from_records([attribute.name for attribute in statement.get_attributes()], records)

    def _lost(self, exc: BaseException) -> RunError:
        """A lost connection ends the run, naming the server that went away."""
        return RunError(f"the PGWire connection to {self.host}:{self.port} was lost: {_one_line(exc)}")

    async def _execute(self, wire: WireQuery, timeout: float, started: float, want_answer: bool):
        """(the statement, its rows): prepared now if this connection has not seen the text, then bound.

        Without ``want_answer`` every row still crosses the wire and is read, but none is decoded into
        Python objects (asyncpg's ``executemany`` discards rows): the same work as TSBS's runner, whose
        pgx loop calls only ``rows.Next()``, so the latency is the server's and the wire's, not decoding."""
        statement = self._statements.get(wire.sql)
        if statement is None:
            # No timeout here: asyncpg drops the connection when a prepare times out, and a prepare only
            # parses; the time limit applies to the execution below. Named uniquely in the process: QuestDB
            # (9.3.4) may hand a new connection the statement names of one it just dropped, and asyncpg
            # restarts its names on every connection.
            statement = await self.connection.prepare(wire.sql, name=f"harness_{next(_STATEMENT_NUMBERS)}")
            self._statements[wire.sql] = statement
            if len(self._statements) > STATEMENT_CACHE_SIZE:
                # asyncpg closes a statement's server side once nothing refers to it.
                self._statements.popitem(last=False)
        else:
            self._statements.move_to_end(wire.sql)
        values = _bind_values(wire, statement.get_parameters())
        remaining = max(timeout - (time.perf_counter() - started), 0.001)
        if not want_answer:
            await statement.executemany([values], timeout=remaining)
            return statement, None
        return statement, await statement.fetch(*values, timeout=remaining)

    async def close(self) -> None:
        if self.connection is None:
            return
        try:
            await asyncio.wait_for(self.connection.close(), CONNECT_TIMEOUT_SECONDS)
        except (OSError, asyncio.TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
            self.connection.terminate()


class HttpConnection:
    """One keep-alive HTTP connection to ``/exec`` (HTTPS where ``tls`` says), used from its own thread
    (http.client blocks)."""

    threads = True  # blocks: runs on the pool's threads

    def __init__(self, host: str, port: int, executor: ThreadPoolExecutor, login: HttpLogin | None = None,
                 tls: HttpTls | None = None):
        self.host, self.port = host, port
        self.executor = executor
        self.headers = {"Authorization": login.header()} if login is not None else {}
        self.login = login
        self.tls = tls or HttpTls()
        self._connection: http.client.HTTPConnection | None = None

    @staticmethod
    def wire(query) -> WireQuery:
        return WireQuery("/exec?" + urllib.parse.urlencode({"query": http_sql(query)}))

    @classmethod
    async def open(cls, host: str, port: int, executor: ThreadPoolExecutor, login: HttpLogin | None = None,
                   tls: HttpTls | None = None) -> HttpConnection:
        connection = cls(host, port, executor, login, tls)
        await asyncio.get_running_loop().run_in_executor(executor, connection._connect, CONNECT_TIMEOUT_SECONDS)
        return connection

    @classmethod
    async def from_options(cls, options, executor: ThreadPoolExecutor | None) -> HttpConnection:
        """A connection to the server of a query run's options (``pool.PoolOptions``)."""
        return await cls.open(options.host, options.http_port, executor, options.http_login(), options.http_tls())

    def _connect(self, timeout: float) -> None:
        self._connection = self.tls.connection(self.host, self.port, timeout)
        try:
            self._connection.connect()
        except OSError as exc:
            raise RunError(http_failure(self.host, self.port, self.tls, exc) or f"cannot connect to QuestDB over HTTP "
                           f"at {self.host}:{self.port}: {_one_line(exc)}") from None
        self._connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _get(self, path: str, timeout: float) -> tuple[float, int, bytes]:
        if self._connection is None:
            self._connect(timeout)
        self._connection.sock.settimeout(timeout)
        started = time.perf_counter()
        try:
            self._connection.request("GET", path, headers=self.headers)
            response = self._connection.getresponse()
            body = response.read()
        except (TimeoutError, socket.timeout):
            self._drop()
            raise QueryFailed(TIMEOUT, f"no answer within {timeout:g}s") from None
        except (OSError, http.client.HTTPException) as exc:
            self._drop()
            raise RunError(http_failure(self.host, self.port, self.tls, exc) or
                           f"the HTTP connection to {self.host}:{self.port} was lost: {_one_line(exc)}") from None
        seconds = time.perf_counter() - started
        if response.will_close:
            self._drop()
        return seconds, response.status, body

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def run(self, wire: WireQuery, timeout: float, want_answer: bool) -> tuple[float, Answer | None]:
        seconds, status, body = await asyncio.get_running_loop().run_in_executor(
            self.executor, self._get, wire.sql, timeout)
        if status in (401, 403):  # every query would be refused alike: the run ends, naming whom
            raise RunError(refused_http_login(f"{self.host}:{self.port}", status, self.login))
        if status != 200:
            try:
                message = json.loads(body).get("error") or body[:200].decode(errors="replace")
            except ValueError:
                message = body[:200].decode(errors="replace")
            raise QueryFailed(REJECTED, f"HTTP {status}: {_one_line(message)}")
        if not want_answer:
            return seconds, None
        return seconds, from_exec(json.loads(body))

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self.executor, self._drop)


def _one_line(error) -> str:
    text = str(error) or type(error).__name__
    return " ".join(text.split())
