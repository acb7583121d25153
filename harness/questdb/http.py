"""The HTTP ``/exec`` client: QuestDB's SQL over its HTTP endpoint (``QuestDBSql``, over TLS where
``harness.questdb.tls`` says), with the catalogue's plain questions: a table's columns and layout, its row
count, the server's version.

What the harness asks beyond these lives by job beside it: table schemas (``harness.questdb.schema``), the
WAL (``harness.questdb.wal``), run claims (``harness.questdb.claims``). Uses only the standard library, so it
also serves tests and tools that run without the ingestion client. Errors become one-line ``RunError`` (the
server is down or failed) or ``UsageError`` (the user's table does not fit the run).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.parse
from collections.abc import Iterator

from harness.errors import RunError, UsageError
from harness.questdb.credentials import HttpLogin, refused_http_login
from harness.questdb.tls import HttpTls, http_failure

PING_TIMEOUT_SECONDS = 5.0
DEFAULT_TIMEOUT_SECONDS = 60.0
# A table a writer still holds (an ILP/TCP connection's, committing after its client closed; a WAL apply) answers
# "could not lock" to DROP for a moment: asked again, every DROP_RETRY_SECONDS, for at most DROP_LOCK_WAIT_SECONDS.
DROP_LOCK_WAIT_SECONDS = 30.0
DROP_RETRY_SECONDS = 0.2
# QuestDB refuses quotes and path characters in table names; refusing them here keeps the SQL we build safe.
_TABLE_NAME = re.compile(r"^[^'\"/\\\x00-\x1f]+$")


class QuestDBQueryError(RunError):
    """The server answered, and rejected the statement."""


class WriteRefused(UsageError):
    """The server refused a write for the login: it, or the whole HTTP endpoint, may only read."""


# QuestDB's words (9.3.4) for a write a read-only login or server (http.security.readonly) asks.
WRITE_REFUSED = "Write permission denied"


class QuestDBSql:
    """A QuestDB server's HTTP API at host:http_port, logged in as ``login`` says (``harness.questdb.credentials``;
    None: without credentials), over TLS where ``tls`` says (``harness.questdb.tls``; None: plain HTTP). With
    ``keep_alive``, its requests share one connection: one thread's client."""

    def __init__(self, host: str = "localhost", http_port: int = 9000, timeout: float = DEFAULT_TIMEOUT_SECONDS,
                 login: HttpLogin | None = None, tls: HttpTls | None = None, keep_alive: bool = False):
        self.host = host
        self.http_port = http_port
        self.timeout = timeout
        self.login = login
        self.tls = tls or HttpTls()
        # One connection for every request (a caller asking many times a second: the freshness probe), else
        # one each (safe from any thread).
        self.keep_alive = keep_alive
        self._connection = None
        # When set (``bounded``): the monotonic time by which every request must have answered.
        self.deadline: float | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.http_port}"

    def __repr__(self) -> str:
        return f"QuestDBSql({self.address!r})"

    def exec(self, sql: str, timeout: float | None = None) -> dict:
        """Run one statement; returns /exec's JSON as is.

        A query answers ``{"query", "columns": [{"name", "type"}], "timestamp", "dataset": [[...]], "count"}``;
        DDL answers ``{"ddl": "OK"}`` and INSERT ``{"dml": "OK"}``. A SQL error (HTTP 400,
        ``{"query", "error", "position"}``) raises QuestDBQueryError with the server's text."""
        query = "/exec?" + urllib.parse.urlencode({"query": sql})
        timeout = timeout or self.timeout
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise RunError(f"QuestDB HTTP at {self.address} did not answer in time (the run's deadline passed "
                               f"before {sql!r})")
            timeout = min(timeout, left)
        status, body = self._answered(query, timeout)
        if status in (401, 403):
            raise RunError(refused_http_login(self.address, status, self.login))
        if status >= 400 and not body.lstrip().startswith(b"{"):
            raise RunError(f"QuestDB HTTP at {self.address} answered HTTP {status} to {sql!r}")
        try:
            answer = json.loads(body)
        except ValueError:
            raise RunError(f"QuestDB HTTP at {self.address} answered {body[:200]!r} to {sql!r}") from None
        if "error" in answer:
            if WRITE_REFUSED in str(answer["error"]):
                whom = self.login.describe() if self.login is not None else "a request without credentials"
                raise WriteRefused(
                    f"QuestDB HTTP at {self.address} refused to write for {whom} ({answer['error']}: the login or "
                    f"the server is read-only, as http.security.readonly makes it): this run creates and writes "
                    f"tables and needs a login that may write (`queries run` and `read` only read)")
            raise QuestDBQueryError(f"QuestDB at {self.address} rejected {sql!r}: {answer['error']}")
        return answer

    def _get(self, path: str, timeout: float) -> tuple[int, bytes]:
        """The status and body of ``GET path``: on a connection of its own, or (``keep_alive``) on the one
        kept open between requests, made again after a failure."""
        headers = {"Authorization": self.login.header()} if self.login is not None else {}
        if not self.keep_alive:
            from urllib.error import HTTPError
            from urllib.request import Request, urlopen

            try:
                with urlopen(Request(f"{self.tls.scheme}://{self.address}{path}", headers=headers), timeout=timeout,
                             context=self.tls.context) as response:
                    return response.status, response.read()
            except HTTPError as exc:
                return exc.code, exc.read()
        import http.client

        if self._connection is None:
            self._connection = (http.client.HTTPSConnection(self.host, self.http_port, timeout=timeout,
                                                            context=self.tls.context)
                                if self.tls.context is not None else
                                http.client.HTTPConnection(self.host, self.http_port, timeout=timeout))
        connection = self._connection
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        except BaseException:
            connection.close()
            self._connection = None
            raise

    def _answered(self, path: str, timeout: float) -> tuple[int, bytes]:
        """``_get``, a server that does not answer a ``RunError`` of one line."""
        # Imported at the first request: a run that never asks QuestDB (into the sink) starts without
        # urllib.request's HTTP and email modules (a tenth of replay's start-up into the sink).
        from http.client import HTTPException
        from urllib.error import URLError

        try:
            return self._get(path, timeout)
        except (URLError, OSError, HTTPException) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise RunError(http_failure(self.host, self.http_port, self.tls, exc)
                           or f"QuestDB HTTP at {self.address} did not answer: {reason}") from None

    def get(self, path: str) -> tuple[int, bytes]:
        """The status and body of ``GET path`` (an endpoint beside /exec: /settings, /write); a server that does not
        answer is a ``RunError`` of one line."""
        return self._answered(path, self.timeout)

    def close(self) -> None:
        """Close the connection kept open (``keep_alive``), if any."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def copy(self, timeout: float | None = None, keep_alive: bool = False) -> QuestDBSql:
        """The same server and login, with its own timeout, no deadline, and (``keep_alive``) a connection of
        its own kept open."""
        return QuestDBSql(self.host, self.http_port, self.timeout if timeout is None else timeout, self.login,
                          self.tls, keep_alive)

    @contextlib.contextmanager
    def bounded(self, seconds: float) -> Iterator[None]:
        """Every request in the block shares one deadline ``seconds`` from now (an earlier one stands)."""
        before = self.deadline
        ends = time.monotonic() + seconds
        self.deadline = ends if before is None else min(before, ends)
        try:
            yield
        finally:
            self.deadline = before

    def query(self, sql: str) -> tuple[list[str], list[list]]:
        """Column names and rows (lists of JSON values) of a query."""
        answer = self.exec(sql)
        return [column["name"] for column in answer.get("columns", [])], answer.get("dataset", [])

    def ping(self) -> None:
        """Fail within seconds, naming host:port, when the server is not there."""
        self.exec("select 1", timeout=PING_TIMEOUT_SECONDS)

    def server_version(self) -> str:
        """The version (X.Y.Z), from ``build()``: 'Build Information: QuestDB <version>, JDK <version>, Commit Hash ...'.

        (``version()`` answers a PostgreSQL compatibility string, not QuestDB's version.)"""
        _, rows = self.query("select build()")
        text = str(rows[0][0])
        match = re.search(r"QuestDB ([^,\s]+)", text)
        return match.group(1) if match else text

    def show_columns(self, table: str) -> list[dict] | None:
        """``show columns``' rows as dicts (column, type, indexed, designated, ...), or None when the table
        does not exist."""
        try:
            names, rows = self.query(f"show columns from '{checked_table_name(table)}'")
        except QuestDBQueryError as exc:
            if "does not exist" in str(exc):
                return None
            raise
        return [dict(zip(names, row)) for row in rows]

    def table_columns(self, table: str) -> list[tuple[str, str]] | None:
        """(name, type) of each column in table order, or None when the table does not exist."""
        columns = self.show_columns(table)
        return None if columns is None else [(column["column"], column["type"]) for column in columns]

    def drop_table(self, table: str) -> None:
        """Drop the table if it exists, waiting (``DROP_LOCK_WAIT_SECONDS`` at most) for a writer that still
        holds it to let it go."""
        sql = f"drop table if exists '{checked_table_name(table)}'"
        gives_up = time.monotonic() + DROP_LOCK_WAIT_SECONDS
        while True:
            try:
                self.exec(sql)
                return
            except QuestDBQueryError as exc:
                if "could not lock" not in str(exc) or time.monotonic() >= gives_up:
                    raise
            time.sleep(DROP_RETRY_SECONDS)

    def table_layout(self, table: str) -> dict:
        """The table's row of ``tables()`` (designatedTimestamp, partitionBy, walEnabled, dedup, ...), or {}."""
        names, rows = self.query("select * from tables()")
        # Table names are case-insensitive: matched here rather than by SQL equality. Releases before 7.3 call
        # the column ``name``.
        layouts = (dict(zip(names, row)) for row in rows)
        return next((layout for layout in layouts
                     if str(layout.get("table_name", layout.get("name"))).lower() == table.lower()), {})

    def deduplicates(self, table: str) -> bool:
        """Whether the table has DEDUP UPSERT KEYS on."""
        return bool(self.table_layout(table).get("dedup"))

    def count(self, table: str) -> int:
        """Rows visible in the table now (for a WAL table: those the WAL apply job has committed)."""
        _, rows = self.query(f"select count() from '{checked_table_name(table)}'")
        return int(rows[0][0])

def sql_string(text: str) -> str:
    """A SQL string literal of ``text``."""
    return "'" + str(text).replace("'", "''") + "'"


def checked_table_name(table: str) -> str:
    """``table`` if it is safe to put in the SQL the harness builds; UsageError otherwise."""
    if not table or not _TABLE_NAME.match(table):
        raise UsageError(f"invalid table name {table!r}: quotes, slashes and control characters are not allowed")
    return table
