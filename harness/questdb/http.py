"""The HTTP ``/exec`` client: QuestDB's SQL over its HTTP endpoint: DDL, schema checks, counts, server version.

Owns every SQL statement the harness sends. Uses only the standard library, so it also serves tests
and tools that run without the ingestion client. Errors become one-line ``RunError`` (the server is
down or failed) or ``UsageError`` (the user's table does not fit the run).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.parse
from collections.abc import Iterator

from harness.errors import RunError, UsageError
from harness.tsbs.schema import TableSchema

PING_TIMEOUT_SECONDS = 5.0
DEFAULT_TIMEOUT_SECONDS = 60.0
# How often a wait for rows to become visible also asks whether the table's WAL apply was suspended.
SUSPENSION_CHECK_SECONDS = 0.5
# QuestDB refuses quotes and path characters in table names; refusing them here keeps the SQL we build safe.
_TABLE_NAME = re.compile(r"^[^'\"/\\\x00-\x1f]+$")


class QuestDBQueryError(RunError):
    """The server answered, and rejected the statement."""


class QuestDBSql:
    """A QuestDB server's HTTP API at host:http_port."""

    def __init__(self, host: str = "localhost", http_port: int = 9000, timeout: float = DEFAULT_TIMEOUT_SECONDS):
        self.host = host
        self.http_port = http_port
        self.timeout = timeout
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
        url = f"http://{self.address}/exec?" + urllib.parse.urlencode({"query": sql})
        timeout = timeout or self.timeout
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise RunError(f"QuestDB HTTP at {self.address} did not answer in time (the run's deadline passed "
                               f"before {sql!r})")
            timeout = min(timeout, left)
        # Imported at the first statement: a run that never asks QuestDB (into the sink) starts without
        # urllib.request's HTTP and email modules (a tenth of replay's start-up into the sink).
        from urllib.error import HTTPError, URLError
        from urllib.request import urlopen

        try:
            with urlopen(url, timeout=timeout) as response:
                body = response.read()
        except HTTPError as exc:
            body = exc.read()
            if exc.code in (401, 403):
                raise RunError(f"QuestDB HTTP at {self.address} refused the login (HTTP {exc.code}): the harness "
                               f"asks /exec without credentials") from None
            if not body.lstrip().startswith(b"{"):
                raise RunError(f"QuestDB HTTP at {self.address} answered HTTP {exc.code} to {sql!r}") from None
        except (URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RunError(f"QuestDB HTTP at {self.address} did not answer: {reason}") from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise RunError(f"QuestDB HTTP at {self.address} answered {body[:200]!r} to {sql!r}") from None
        if "error" in answer:
            raise QuestDBQueryError(f"QuestDB at {self.address} rejected {sql!r}: {answer['error']}")
        return answer

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
            names, rows = self.query(f"show columns from '{_checked(table)}'")
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
        """Drop the table if it exists."""
        self.exec(f"drop table if exists '{_checked(table)}'")

    def create_table(self, schema: TableSchema, dedup: bool = False) -> None:
        """A table exactly as the schema says: SYMBOL tags, typed fields, designated timestamp, WAL; with
        ``dedup``, a row that arrives again (same timestamp and series) replaces itself.

        Created explicitly so that ILP never picks the types (a nanosecond ``at`` under protocol 2 would
        otherwise create a TIMESTAMP_NS column, integers sent as doubles a DOUBLE one)."""
        columns = ", ".join(f"{name} {sql_type}" for name, sql_type in schema.columns)
        keys = f" DEDUP UPSERT KEYS({', '.join(schema.dedup_keys)})" if dedup else ""
        self.exec(f"create table '{_checked(schema.table)}' ({columns}) "
                  f"timestamp({schema.timestamp}) partition by {schema.partition_by} WAL{keys}")

    def check_schema(self, schema: TableSchema, dedup: bool = False) -> None:
        """Raise UsageError unless the table exists and can take rows of ``schema`` as they are: every
        column of the schema there with its type, the timestamp designated, and (``dedup``) deduplication
        on. Extra columns are allowed (they stay null)."""
        columns = self.show_columns(schema.table)
        if columns is None:
            raise UsageError(f"table {schema.table} does not exist")
        # QuestDB column names are case-insensitive.
        actual = {str(column["column"]).lower(): column for column in columns}
        clashes = []
        for name, wanted in schema.columns:
            column = actual.get(name)
            if column is None:
                clashes.append(f"{name} is missing")
            elif column["type"] != wanted:
                clashes.append(f"{name} is {column['type']}, needs {wanted}")
        timestamp = actual.get(schema.timestamp)
        if timestamp is not None and not timestamp.get("designated"):
            clashes.append(f"{schema.timestamp} is not the designated timestamp")
        if dedup and not self.deduplicates(schema.table):
            clashes.append("deduplication is off (--exactly-once needs DEDUP UPSERT KEYS)")
        if clashes:
            shown = "; ".join(clashes[:3]) + (f"; and {len(clashes) - 3} more" if len(clashes) > 3 else "")
            raise UsageError(
                f"table {schema.table} exists with a schema incompatible with this run ({shown}); "
                f"drop it or run without --keep-table"
            )

    def schema_difference(self, schema: TableSchema) -> str | None:
        """The first way the existing table differs from ``schema`` as ``create_table`` makes it (a column
        missing, of another type or extra, the designated timestamp, the partitioning, WAL), or None when
        it is the same. Deduplication is not compared: a run sets it either way on the tables it makes."""
        columns = self.table_columns(schema.table)
        if columns is None:
            return None
        actual = {name.lower(): sql_type for name, sql_type in columns}
        for name, wanted in schema.columns:
            if name not in actual:
                return f"it has no column {name} ({wanted})"
            if actual[name] != wanted:
                return f"its column {name} is {actual[name]}, the benchmark's is {wanted}"
        extra = [name for name, _ in columns if name.lower() not in dict(schema.columns)]
        if extra:
            return f"it has a column {extra[0]} ({actual[extra[0].lower()]}) the benchmark's has not"
        layout = self.table_layout(schema.table)
        if str(layout.get("designatedTimestamp") or "").lower() != schema.timestamp:
            return (f"its designated timestamp is {layout.get('designatedTimestamp') or 'none'}, the benchmark's "
                    f"is {schema.timestamp}")
        if layout.get("partitionBy") != schema.partition_by:
            return f"it is partitioned by {layout.get('partitionBy')}, the benchmark's by {schema.partition_by}"
        if not layout.get("walEnabled"):
            return "it is not a WAL table, the benchmark's is"
        return None

    def table_layout(self, table: str) -> dict:
        """The table's row of ``tables()`` (designatedTimestamp, partitionBy, walEnabled, dedup, ...), or {}."""
        names, rows = self.query("select * from tables()")
        # Table names are case-insensitive: matched here rather than by SQL equality.
        layouts = (dict(zip(names, row)) for row in rows)
        return next((layout for layout in layouts if str(layout.get("table_name")).lower() == table.lower()), {})

    def deduplicates(self, table: str) -> bool:
        """Whether the table has DEDUP UPSERT KEYS on."""
        return bool(self.table_layout(table).get("dedup"))

    def count(self, table: str) -> int:
        """Rows visible in the table now (for a WAL table: those the WAL apply job has committed)."""
        _, rows = self.query(f"select count() from '{_checked(table)}'")
        return int(rows[0][0])

    def wal_tables(self) -> list[dict]:
        """``wal_tables()``: per WAL table name, suspended, writerTxn, bufferedTxnSize, sequencerTxn,
        errorTag, errorMessage, memoryPressure."""
        names, rows = self.query("select * from wal_tables()")
        return [dict(zip(names, row)) for row in rows]

    def wal_state(self, table: str) -> dict | None:
        """The table's row of wal_tables(), or None (no such table, or not a WAL table)."""
        for entry in self.wal_tables():
            if str(entry.get("name")).lower() == table.lower():
                return entry
        return None

    def suspension(self, table: str) -> str | None:
        """Why the server suspended the table's WAL apply, in its own words (``DISK FULL: commit failed...``,
        an out-of-memory or a schema clash), or None while it applies."""
        wal = self.wal_state(table)
        if wal is None or not wal.get("suspended"):
            return None
        tag, message = wal.get("errorTag") or "", wal.get("errorMessage") or ""
        return ": ".join(part for part in (tag, message) if part) or "no reason given"

    def add_claim(self, registry: str, run_id: str, tables: list[str], state: str, claimed: str | None,
                  owner: str) -> None:
        """One row of the harness's registry of running runs (``harness.questdb.claims``), stamped with the
        server's clock. A write the table's lock refuses for a moment (another run's row) is tried again."""
        values = ", ".join(sql_string(value) for value in (run_id, "," + ",".join(tables) + ",", state, owner))
        since = "now()" if claimed is None else f"'{claimed}'::timestamp"
        for attempt in range(40):
            try:
                self.exec(f"insert into '{registry}' (ts, claimed, run_id, tables, state, owner) "
                          f"values (now(), {since}, {values})")
                return
            except QuestDBQueryError as exc:
                if "busy" not in str(exc) or attempt == 39:
                    raise
                time.sleep(0.05)

    def create_claims(self, registry: str) -> None:
        """The registry of running runs, if it is not there: a table without WAL, so that a row is visible
        to every reader as soon as its insert answers."""
        self.exec(f"create table if not exists '{_checked(registry)}' (ts TIMESTAMP, claimed TIMESTAMP, "
                  "run_id SYMBOL, tables STRING, state SYMBOL, owner STRING) timestamp(ts) partition by DAY BYPASS WAL")

    def recent_claims(self, registry: str, seconds: float) -> list[dict]:
        """The registry's rows of the last ``seconds`` by the server's clock (none if it does not exist)."""
        try:
            names, rows = self.query(f"select ts, claimed, run_id, tables, state, owner from '{_checked(registry)}' "
                                     f"where ts > dateadd('s', -{int(seconds)}, now())")
        except QuestDBQueryError as exc:
            if "does not exist" in str(exc):
                return []
            raise
        return [dict(zip(names, row)) for row in rows]

    def wait_for_count(self, table: str, expected: int, timeout: float, poll_interval: float = 0.01) -> float:
        """Poll until ``count()`` equals ``expected``; returns the seconds waited.

        Rows sent to a WAL table become visible only after the server applies the WAL, so the count
        rises in steps after the last flush; a count answers in well under a millisecond, so the wait is
        timed to ``poll_interval``. Fails (RunError, stating expected and visible counts) on timeout, as
        soon as the count exceeds ``expected``, and within ``SUSPENSION_CHECK_SECONDS`` of the table's WAL
        apply being suspended (its rows would never arrive)."""
        started = time.perf_counter()
        deadline = started + timeout
        suspension_checked = float("-inf")
        while True:
            visible = self.count(table)
            now = time.perf_counter()
            if visible == expected:
                return now - started
            if visible > expected:
                raise RunError(
                    f"table {table} holds more rows than expected: expected {expected} rows, {visible} visible"
                )
            if now - suspension_checked >= SUSPENSION_CHECK_SECONDS:
                reason = self.suspension(table)
                if reason is not None:
                    raise RunError(f"table {table}: WAL apply is suspended ({reason}); expected {expected} rows, "
                                   f"{visible} visible")
                suspension_checked = now
            if now >= deadline:
                raise RunError(
                    f"validation timed out after {timeout:g}s: expected {expected} rows in table {table}, "
                    f"{visible} visible"
                )
            time.sleep(poll_interval)


def sql_string(text: str) -> str:
    """A SQL string literal of ``text``."""
    return "'" + str(text).replace("'", "''") + "'"


def _checked(table: str) -> str:
    if not table or not _TABLE_NAME.match(table):
        raise UsageError(f"invalid table name {table!r}: quotes, slashes and control characters are not allowed")
    return table
