"""Talking to QuestDB over its HTTP ``/exec`` endpoint: DDL, schema checks, counts, server version.

Owns every SQL statement the harness sends. Uses only the standard library, so it also serves tests
and tools that run without the ingestion client. Errors become one-line ``RunError`` (the server is
down or failed) or ``UsageError`` (the user's table does not fit the run).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request

from harness.errors import RunError, UsageError
from harness.tsbs.cpu_only import FIELD_COLUMNS, TAG_COLUMNS, TIMESTAMP_COLUMN

PING_TIMEOUT_SECONDS = 5.0
FIELD_SQL_TYPES = {"double": "DOUBLE", "long": "LONG"}


class QuestDB:
    """A QuestDB server's HTTP API at host:http_port."""

    def __init__(self, host: str = "localhost", http_port: int = 9000, timeout: float = 60.0):
        self.host = host
        self.http_port = http_port
        self.timeout = timeout

    @property
    def address(self) -> str:
        return f"{self.host}:{self.http_port}"

    def exec(self, sql: str, timeout: float | None = None) -> dict:
        """Run one statement; returns /exec's JSON. A SQL error raises RunError with the server's text."""
        url = f"http://{self.address}/exec?" + urllib.parse.urlencode({"query": sql})
        try:
            with urllib.request.urlopen(url, timeout=timeout or self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RunError(f"QuestDB HTTP at {self.address} did not answer: {reason}") from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise RunError(f"QuestDB HTTP at {self.address} answered {body[:200]!r} to {sql!r}") from None
        if "error" in answer:
            raise QuestDBQueryError(f"QuestDB rejected {sql!r}: {answer['error']}")
        return answer

    def query(self, sql: str) -> tuple[list[str], list[list]]:
        answer = self.exec(sql)
        return [column["name"] for column in answer.get("columns", [])], answer.get("dataset", [])

    def ping(self) -> None:
        """Fail within seconds, naming host:port, when the server is not there."""
        self.exec("select 1", timeout=PING_TIMEOUT_SECONDS)

    def server_version(self) -> str:
        """E.g. ``9.3.4``, as the server reports it in ``build()``."""
        _, rows = self.query("select build()")
        text = rows[0][0]
        marker = "QuestDB "
        if marker in text:
            return text.split(marker, 1)[1].split(",", 1)[0].strip()
        return text

    def table_columns(self, table: str) -> list[tuple[str, str]] | None:
        """(name, type) of each column in table order, or None when the table does not exist."""
        try:
            _, rows = self.query(f"show columns from '{table}'")
        except QuestDBQueryError as exc:
            if "does not exist" in str(exc):
                return None
            raise
        return [(row[0], row[1]) for row in rows]

    def drop_table(self, table: str) -> None:
        self.exec(f"drop table if exists '{table}'")

    def create_cpu_table(self, table: str, fields: str) -> None:
        """The TSBS cpu table: 10 SYMBOL tags, 10 DOUBLE or LONG fields, designated timestamp, WAL.

        Created explicitly so that ILP never picks the types (a nanosecond ``at`` under protocol 2 would
        otherwise create a TIMESTAMP_NS column)."""
        field_type = FIELD_SQL_TYPES[fields]
        columns = [f"{tag} SYMBOL" for tag in TAG_COLUMNS]
        columns += [f"{field} {field_type}" for field in FIELD_COLUMNS]
        columns.append(f"{TIMESTAMP_COLUMN} TIMESTAMP")
        self.exec(
            f"create table '{table}' ({', '.join(columns)}) timestamp({TIMESTAMP_COLUMN}) partition by DAY WAL"
        )

    def check_cpu_schema(self, table: str, fields: str) -> None:
        """Raise UsageError unless ``table`` can take this run's rows as they are."""
        columns = self.table_columns(table)
        if columns is None:
            raise UsageError(f"table {table} does not exist")
        actual = dict(columns)
        expected = {tag: "SYMBOL" for tag in TAG_COLUMNS}
        expected.update({field: FIELD_SQL_TYPES[fields] for field in FIELD_COLUMNS})
        expected[TIMESTAMP_COLUMN] = "TIMESTAMP"
        clashes = [
            f"{name} is {actual.get(name, 'missing')}, needs {wanted}"
            for name, wanted in expected.items()
            if actual.get(name) != wanted
        ]
        if clashes:
            raise UsageError(
                f"table {table} exists with an incompatible schema for --fields {fields} "
                f"({'; '.join(clashes[:3])}{'; ...' if len(clashes) > 3 else ''}); drop it or run without --keep-table"
            )

    def count(self, table: str) -> int:
        _, rows = self.query(f"select count() from '{table}'")
        return int(rows[0][0])

    def wal_state(self, table: str) -> dict | None:
        """The table's row of wal_tables(): suspended, writerTxn, sequencerTxn, errorMessage."""
        columns, rows = self.query("select * from wal_tables()")
        for row in rows:
            entry = dict(zip(columns, row))
            if entry.get("name") == table:
                return entry
        return None

    def wait_for_count(self, table: str, expected: int, timeout: float, poll_interval: float = 0.05) -> float:
        """Poll until ``count()`` equals ``expected``; returns the seconds waited.

        Fails (RunError, stating expected and visible) on timeout, on a count above ``expected``, and
        as soon as the table's WAL apply is suspended (its rows would never arrive)."""
        started = time.perf_counter()
        deadline = started + timeout
        while True:
            visible = self.count(table)
            if visible == expected:
                return time.perf_counter() - started
            if visible > expected:
                raise RunError(f"table {table} holds {visible} rows, more than the {expected} expected")
            wal = self.wal_state(table)
            if wal is not None and wal.get("suspended"):
                raise RunError(
                    f"table {table}: WAL apply is suspended ({wal.get('errorMessage') or 'no reason given'}); "
                    f"expected {expected} rows, {visible} visible"
                )
            if time.perf_counter() >= deadline:
                raise RunError(
                    f"validation timed out after {timeout:g}s: expected {expected} rows in table {table}, "
                    f"{visible} visible"
                )
            time.sleep(poll_interval)


class QuestDBQueryError(RunError):
    """The server answered, and rejected the statement."""
