"""What a read reads (``ReadSlices``): the columns of the answer and its queries, one per worker, in the table's order.

A table (whole, or ``[start, end)`` of its designated timestamp) is asked for its count and its first and
last timestamps over HTTP ``/exec`` first: an empty or missing table ends there in one line, and ``--workers
N`` splits ``[first, last]`` into N time slices of equal length, read in parallel and put back in order.
``--sql`` is asked for its columns only (``limit 0``): a statement the server rejects ends there too.

Every query a read sends starts with a comment naming the read (``/* harness read <id> */``): QuestDB 9.3.4
keeps compiled statements by their text across connections, and one compiled before its table was
dropped and made again with other column types reads the new columns as the old types (a DOUBLE's bits
as a LONG), once. A text of its own is compiled anew.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from harness.errors import RunError, UsageError
from harness.questdb.http import QuestDBQueryError, QuestDBSql
from harness.questdb.schema import column_name
from harness.read.frames import Column
from harness.tsbs.params import parse_rfc3339_ns


@dataclass(frozen=True)
class ReadSlices:
    what: str  # for messages: "table cpu", "table cpu in [a, b)", "--sql"
    columns: list[Column]
    queries: list[str]  # one per worker, in the answer's order
    expected_rows: int | None  # the server's count of what the queries read (None: --sql)
    table: str | None = None
    timestamp: str | None = None  # the table's designated timestamp


def _fresh(queries: list[str]) -> list[str]:
    """The queries, each a text the server has not compiled before."""
    read = uuid.uuid4().hex[:12]
    return [f"/* harness read {read} */ {sql}" for sql in queries]


def _iso_us(ns: int) -> str:
    """A timestamp literal QuestDB reads, at its precision (microseconds)."""
    import datetime

    seconds, micros = divmod(ns // 1000, 1_000_000)
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{micros:06d}Z"


def read_slices(questdb: QuestDBSql, sql: str | None, table: str, start_ns: int | None, end_ns: int | None,
                workers: int) -> ReadSlices:
    """What a read reads, asked of the server: the answer to ``sql``, or ``table`` (``[start_ns, end_ns)`` of it)
    in ``workers`` time slices."""
    if sql is not None:
        return sql_slices(questdb, sql)
    return table_slices(questdb, table, start_ns, end_ns, workers)


def sql_slices(questdb: QuestDBSql, sql: str) -> ReadSlices:
    statement = sql.strip().rstrip(";")
    try:
        answer = questdb.exec(f"select * from ({statement}) limit 0")
    except QuestDBQueryError as exc:
        raise UsageError(f"--sql: {str(exc).rpartition(': ')[2]} (QuestDB rejected {statement!r})") from None
    columns = [Column(column["name"], column["type"]) for column in answer.get("columns", [])]
    return ReadSlices("--sql", columns, _fresh([statement]), None)


def table_slices(questdb: QuestDBSql, table: str, start_ns: int | None, end_ns: int | None, workers: int) -> ReadSlices:
    described = questdb.show_columns(table)
    if described is None:
        raise UsageError(f"table {table} does not exist on {questdb.address}")
    columns = [Column(str(column["column"]), str(column["type"])) for column in described]
    timestamp = next((str(column["column"]) for column in described if column.get("designated")), None)
    quoted = column_name(timestamp) if timestamp is not None else None  # a user's name may hold a space
    bounds = []
    if start_ns is not None:
        bounds.append(f"{quoted} >= '{_iso_us(start_ns)}'")
    if end_ns is not None:
        bounds.append(f"{quoted} < '{_iso_us(end_ns)}'")
    if bounds and timestamp is None:
        raise UsageError(f"table {table} has no designated timestamp: it cannot be read by a time range")
    what = f"table {table}" + (f" in [{_iso_us(start_ns) if start_ns is not None else '...'}, "
                               f"{_iso_us(end_ns) if end_ns is not None else '...'})" if bounds else "")
    where = f" where {' and '.join(bounds)}" if bounds else ""
    if timestamp is None:
        count = questdb.count(table)
        first = last = None
    else:
        _, rows = questdb.query(f"select count(), min({quoted}), max({quoted}) from '{table}'{where}")
        count, first, last = rows[0]
    if not count:
        raise RunError(f"{what} holds no rows: nothing to read")
    if workers == 1 or timestamp is None:
        if workers > 1:
            raise UsageError(f"--workers {workers} splits a table by its designated timestamp; {table} has none")
        return ReadSlices(what, columns, _fresh([f"select * from '{table}'{where}"]), int(count), table, timestamp)
    low = parse_rfc3339_ns(first, "min(timestamp)") // 1000
    high = parse_rfc3339_ns(last, "max(timestamp)") // 1000 + 1
    edges = [low + (high - low) * index // workers for index in range(workers + 1)]
    queries = [f"select * from '{table}' where {quoted} >= '{_iso_us(begin * 1000)}' and "
               f"{quoted} < '{_iso_us(end * 1000)}'" for begin, end in zip(edges, edges[1:])]
    return ReadSlices(what, columns, _fresh(queries), int(count), table, timestamp)
