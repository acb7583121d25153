"""TSBS's QuestDB query SQL: what it becomes on the wire, and its shape.

On the wire, as QuestDB's TSBS fork sends it: over HTTP ``/exec`` every parameter is substituted into the
text (a string as ``'value'``, a host list as ``('host_1', 'host_2')``); over PGWire the runner inlines
only the host lists, as ``('host_1','host_2')``, because QuestDB takes no array bind for ``IN``, binds the
remaining values and renumbers their placeholders from ``$1``.

The shape (what to select, filter, sample and order) is what the reference computes and what the checker
uses to know which row order the server guarantees.

A query is the golden-file JSON object or the generator's ``Query``: ``query_type, label, description,
sql, params`` as keys or attributes. Only the statement forms TSBS's ``cpu-only`` use case writes for
QuestDB are understood; anything else raises ``UsageError`` naming the query type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import UsageError
from harness.tsbs.params import parse_rfc3339_ns
from harness.tsbs.query_types import Query

AGGREGATES = ("max", "avg")
_PLACEHOLDER = re.compile(r"\$(\d+)")
_SELECT_ITEM = re.compile(r"^(?:(max|avg)\((\w+)\)(?:\s+AS\s+(\w+))?|(\w+))$", re.IGNORECASE)
_STATEMENT = re.compile(
    r"^SELECT\s+(?P<select>.+?)\s+FROM\s+(?P<table>\w+)"
    r"(?:\s+(?P<latest>latest\s+by\s+\w+))?"
    r"(?:\s+WHERE\s+(?P<where>.+?))?"
    r"(?:\s+SAMPLE\s+BY\s+(?P<sample>\d+[smhd]))?"
    r"(?:\s+ORDER\s+BY\s+(?P<order>\w+(?:\s+(?:ASC|DESC))?))?"
    r"(?:\s+LIMIT\s+(?P<limit>\d+))?$",
    re.IGNORECASE | re.DOTALL,
)
_UNIT_MICROS = {"s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000, "d": 86_400_000_000}


def _sql_literal(value) -> str:
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_sql_literal(item) for item in value) + ")"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def inline_params(sql: str, params: list | None) -> str:
    """The SQL with ``$n`` replaced by its parameter as TSBS's HTTP runner does: strings single-quoted, a
    host list as ``('host_0', 'host_3')``."""
    params = params or []

    def replace(match: re.Match) -> str:
        index = int(match.group(1)) - 1
        if not 0 <= index < len(params):
            raise UsageError(f"query SQL uses ${index + 1} but has {len(params)} parameter(s)")
        return _sql_literal(params[index])

    return _PLACEHOLDER.sub(replace, sql)


def http_sql(query: Query) -> str:
    """The fully substituted SQL TSBS puts in the ``/exec?query=`` of an HTTP query."""
    return inline_params(query.sql, query.params)


def pgwire_sql(query: Query) -> tuple[str, list]:
    """(SQL with the host lists inlined and the other placeholders renumbered, the values to bind)."""
    sql, params = query.sql, query.params or []
    numbers: dict[int, str] = {}
    bound: list = []
    for number, value in enumerate(params, start=1):
        if isinstance(value, (list, tuple)):
            numbers[number] = "(" + ",".join(_sql_literal(host) for host in value) + ")"
        else:
            bound.append(value)
            numbers[number] = f"${len(bound)}"

    def replace(match: re.Match) -> str:
        number = int(match.group(1))
        if number not in numbers:
            raise UsageError(f"query SQL uses ${number} but has {len(params)} parameter(s)")
        return numbers[number]

    return _PLACEHOLDER.sub(replace, sql), bound


def one_line(sql: str) -> str:
    """The SQL on one line, runs of whitespace (TSBS's tabs and newlines) collapsed to one space."""
    return " ".join(sql.split())


@dataclass(frozen=True)
class Aggregate:
    function: str  # max | avg
    field: str
    name: str  # the result column's name


@dataclass(frozen=True)
class QueryShape:
    """What a TSBS query asks for. Times are microseconds since the Unix epoch, UTC."""

    select_all: bool
    key_columns: tuple[str, ...]  # plain columns selected beside aggregates (SAMPLE BY keys)
    aggregates: tuple[Aggregate, ...]
    latest_by: str | None
    hosts: tuple[str, ...] | None  # hostname IN (...); None: every host
    time_from: int | None  # timestamp >= time_from
    time_to: int | None  # timestamp < time_to
    thresholds: tuple[tuple[str, float], ...]  # (field, value): field > value
    sample_by_micros: int | None
    order_by_timestamp: str | None  # ASC | DESC
    limit: int | None

    @property
    def columns(self) -> list[str]:
        return [*self.key_columns, *(aggregate.name for aggregate in self.aggregates)]


def _timestamp_micros(value, query_type: str) -> int:
    if not isinstance(value, str):
        raise UsageError(f"query type {query_type}: expected an RFC 3339 timestamp parameter, got {value!r}")
    return parse_rfc3339_ns(value, "query timestamp") // 1000


def shape_of(query: Query) -> QueryShape:
    """Parse the query's SQL and bind its parameters."""
    sql = one_line(query.sql)
    unsupported = UsageError(f"query type {query.query_type}: the reference cannot answer {sql!r}")
    match = _STATEMENT.match(sql)
    if not match or match.group("table").lower() != "cpu":
        raise unsupported
    select_all, keys, aggregates = _selected(match.group("select"), unsupported)
    hosts, time_from, time_to, thresholds = _filters(match.group("where"), query, unsupported)
    latest = match.group("latest")
    latest_by = latest.split()[-1] if latest else None
    sample = match.group("sample")
    sample_by = int(sample[:-1]) * _UNIT_MICROS[sample[-1].lower()] if sample else None
    order_by = _order_by(match.group("order"), unsupported)
    limit = int(match.group("limit")) if match.group("limit") else None
    if (aggregates and sample_by is None) or (sample_by is not None and (select_all or not aggregates)):
        raise unsupported
    if latest_by is not None and (not select_all or latest_by != "hostname" or match.group("where")):
        raise unsupported
    if keys and any(key != "hostname" for key in keys):
        raise unsupported
    return QueryShape(select_all, tuple(keys), tuple(aggregates), latest_by, hosts, time_from, time_to,
                      tuple(thresholds), sample_by, order_by, limit)


def _selected(select: str, unsupported: UsageError) -> tuple[bool, list[str], list[Aggregate]]:
    """What the SELECT list asks for: everything (``*``), or plain key columns and aggregates."""
    if select.strip() == "*":
        return True, [], []
    keys, aggregates = [], []
    for item in select.split(","):
        item_match = _SELECT_ITEM.match(item.strip())
        if not item_match:
            raise unsupported
        function, field, alias, plain = item_match.groups()
        if plain:
            keys.append(plain)
        else:
            # QuestDB names an unaliased aggregate after its expression text, e.g. max(usage_user).
            aggregates.append(Aggregate(function.lower(), field, alias or f"{function}({field})"))
    return False, keys, aggregates


def _filters(where: str | None, query: Query, unsupported: UsageError
             ) -> tuple[tuple[str, ...] | None, int | None, int | None, list[tuple[str, float]]]:
    """The WHERE clause's conditions, their parameters bound: (hosts, time from, time to, thresholds)."""
    params = query.params or []

    def param(token: str):
        placeholder = _PLACEHOLDER.fullmatch(token.strip())
        if not placeholder or not 0 < int(placeholder.group(1)) <= len(params):
            raise unsupported
        return params[int(placeholder.group(1)) - 1]

    hosts, time_from, time_to, thresholds = None, None, None, []
    for condition in re.split(r"\s+AND\s+", where or "", flags=re.IGNORECASE):
        condition = condition.strip()
        if not condition:
            continue
        if m := re.fullmatch(r"hostname\s+IN\s+(\$\d+)", condition, re.IGNORECASE):
            hosts = tuple(param(m.group(1)))
        elif m := re.fullmatch(r"timestamp\s*>=\s*(\$\d+)", condition, re.IGNORECASE):
            time_from = _timestamp_micros(param(m.group(1)), query.query_type)
        elif m := re.fullmatch(r"timestamp\s*<\s*(\$\d+)", condition, re.IGNORECASE):
            time_to = _timestamp_micros(param(m.group(1)), query.query_type)
        elif m := re.fullmatch(r"(\w+)\s*>\s*(-?\d+(?:\.\d*)?)", condition):
            thresholds.append((m.group(1), float(m.group(2))))
        else:
            raise unsupported
    return hosts, time_from, time_to, thresholds


def _order_by(order: str | None, unsupported: UsageError) -> str | None:
    """ORDER BY's direction (``ASC`` or ``DESC``); only the timestamp is an order TSBS asks for."""
    if not order:
        return None
    column, *direction = order.split()
    if column.lower() != "timestamp":
        raise unsupported
    return (direction[0] if direction else "ASC").upper()
