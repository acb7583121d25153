"""The query runner's QWP connection: one ``questdb.connect()`` handle per worker (``harness.questdb.qwp_client``:
logged in and over TLS as the harness's own HTTP requests are) and its lease of one reader connection
(``QuestDB.reader()``), which runs the worker's queries one after another on a thread of the connection's own (a
lease is used on the thread that made it).

A query is TSBS's text with every parameter substituted, as the HTTP runner sends it
(``wire_sql.http_sql``); its latency is ``query()`` and ``to_arrow()``: from sending it to the whole answer decoded
into Arrow columns, the client's cheapest complete read. Arrow turns into an ``Answer`` outside the timing, and
only with ``--check``.

``--timeout``: the pinned QWP server takes no per-query timeout (it lacks ``CAP_QUERY_TIMEOUT``) and the client
cannot cancel a query it is waiting for (``cancel()`` waits for the answer), so a query still unanswered after the
timeout is counted as one and its connection left to finish it on its own (daemon) thread, then closed; the worker
goes on over a new connection, made outside the timing, as over PGWire.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from concurrent.futures import Future

from questdb import QuestDBError, QuestDBErrorCode

from harness.errors import RunError, one_line
from harness.queries.answer import Answer, from_arrow
from harness.queries.clients import REJECTED, TIMEOUT, QueryFailed, WireQuery
from harness.queries.wire_sql import http_sql
from harness.questdb.credentials import HttpLogin
from harness.questdb.qwp_client import connect
from harness.questdb.tls import HttpTls

# The client's errors that reject one query and leave its connection usable (it reached its terminal): the run
# counts them and goes on. Any other error loses the connection and ends the run.
REJECTIONS = frozenset({QuestDBErrorCode.ServerParseError, QuestDBErrorCode.ServerSchemaMismatch,
                        QuestDBErrorCode.ServerInternalError, QuestDBErrorCode.ServerSecurityError,
                        QuestDBErrorCode.ServerLimitExceeded, QuestDBErrorCode.LimitExceeded,
                        QuestDBErrorCode.InvalidBind})


class _Thread:
    """A daemon thread that runs what it is given, in order: a connection's lease lives on it, and a query the run
    no longer waits for never holds the process's exit."""

    def __init__(self, name: str):
        self._calls: queue.Queue = queue.Queue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, call, *args) -> Future:
        future: Future = Future()
        self._calls.put((future, call, args))
        return future

    def stop(self) -> None:
        """End once what was submitted has run."""
        self._calls.put(None)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            future, call, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call(*args))
            except BaseException as exc:  # handed to the waiting coroutine
                future.set_exception(exc)


class _Lease:
    """A handle and its lease of one reader connection, made, used and closed on one ``_Thread``."""

    def __init__(self, host: str, port: int, login: HttpLogin | None, tls: HttpTls):
        self.db = connect(host, port, login, tls)
        try:
            self.reader = self.db.reader()
        except BaseException:
            self.db.close()
            raise

    def query(self, sql: str):
        """(seconds, the answer as a pyarrow Table): the query's latency, the whole answer read."""
        started = time.perf_counter()
        table = self.reader.query(sql).to_arrow()
        return time.perf_counter() - started, table

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.db.close()


class QwpConnection:
    """One worker's QWP connection."""

    threads = False  # a thread of its own, not the pool's

    def __init__(self, host: str, port: int, login: HttpLogin | None = None, tls: HttpTls | None = None):
        self.host, self.port, self.login, self.tls = host, port, login, tls or HttpTls()
        self._thread: _Thread | None = None
        self._lease: _Lease | None = None

    @staticmethod
    def wire(query) -> WireQuery:
        return WireQuery(http_sql(query))

    @classmethod
    async def from_options(cls, options, executor=None) -> QwpConnection:
        """A connection to the server of a query run's options (``pool.PoolOptions``), its lease open."""
        connection = cls(options.host, options.http_port, options.http_login(), options.http_tls())
        await connection._open()
        return connection

    async def _open(self) -> None:
        self._thread = _Thread(f"qwp-query-{self.host}:{self.port}")
        try:
            self._lease = await asyncio.wrap_future(self._thread.submit(_Lease, self.host, self.port, self.login,
                                                                        self.tls))
        except BaseException:
            self._thread.stop()
            self._thread = None
            raise

    async def run(self, wire: WireQuery, timeout: float, want_answer: bool) -> tuple[float, Answer | None]:
        if self._lease is None:
            await self._open()  # the last query timed out: this connection is new, and untimed
        try:
            # On the timeout the wait is cancelled: whatever the query ends with later is dropped unseen.
            seconds, table = await asyncio.wait_for(
                asyncio.wrap_future(self._thread.submit(self._lease.query, wire.sql)), timeout)
        except asyncio.TimeoutError:
            self._abandon()
            raise QueryFailed(TIMEOUT, f"no answer within {timeout:g}s") from None
        except QuestDBError as exc:
            if exc.code in REJECTIONS:
                raise QueryFailed(REJECTED, one_line(exc)) from None
            raise RunError(f"the QWP connection to {self.host}:{self.port} was lost: {one_line(exc)}") from None
        return seconds, from_arrow(table) if want_answer else None

    def _abandon(self) -> None:
        """Leave the lease to its thread: it finishes the query it waits for, then closes, then the thread ends."""
        self._thread.submit(self._lease.close)
        self._thread.stop()
        self._thread = self._lease = None

    async def close(self) -> None:
        if self._lease is None:
            return
        try:
            await asyncio.wrap_future(self._thread.submit(self._lease.close))
        except QuestDBError:
            pass  # a connection the server already dropped
        finally:
            self._thread.stop()
            self._thread = self._lease = None
