"""TSBS's devops query types (``tsbs_generate_queries --use-case=cpu-only|devops --format=questdb``): the same
SQL, labels and parameters, draw for draw. The query module of cpu-only and devops (``use_cases``).

Per query, TSBS draws the time window (one ``Int63n``) and then the hosts (``Intn(scale)`` until enough
distinct ones). The SQL keeps TSBS's ``$1``, ``$2`` placeholders; ``params`` holds their values in order (a
host list for ``hostname IN $1``, RFC 3339 strings for timestamps), ``None`` for lastpoint, which TSBS
writes without parameters. ``harness.queries.wire_sql`` turns them into what the runner sends.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.tsbs.devops.cpu_schema import FIELD_COLUMNS
from harness.tsbs.go.rand import GoRand, random_subset
from harness.tsbs.go.times import QueryDraws, go_duration_string, window_refusal
from harness.tsbs.query_types import QUERY_TYPES, Query

CPU_METRICS = FIELD_COLUMNS  # the order TSBS takes the first N metrics in

_HOUR_NS = 3_600_000_000_000
_DOUBLE_GROUPBY_WINDOW_NS = 12 * _HOUR_NS
_HIGH_CPU_WINDOW_NS = 12 * _HOUR_NS
_MAX_ALL_WINDOW_NS = 8 * _HOUR_NS
_GROUPBY_ORDERBY_LIMIT_WINDOW_NS = _HOUR_NS


@dataclass(frozen=True)
class _QueryShape:
    """What one query type asks for: which filler, how many hosts and metrics, how wide a window."""

    kind: str
    hosts: int = 0
    metrics: int = 0
    window_ns: int = 0


_SHAPES = {
    "single-groupby-1-1-1": _QueryShape("single-groupby", hosts=1, metrics=1, window_ns=_HOUR_NS),
    "single-groupby-1-1-12": _QueryShape("single-groupby", hosts=1, metrics=1, window_ns=12 * _HOUR_NS),
    "single-groupby-1-8-1": _QueryShape("single-groupby", hosts=8, metrics=1, window_ns=_HOUR_NS),
    "single-groupby-5-1-1": _QueryShape("single-groupby", hosts=1, metrics=5, window_ns=_HOUR_NS),
    "single-groupby-5-1-12": _QueryShape("single-groupby", hosts=1, metrics=5, window_ns=12 * _HOUR_NS),
    "single-groupby-5-8-1": _QueryShape("single-groupby", hosts=8, metrics=5, window_ns=_HOUR_NS),
    "cpu-max-all-1": _QueryShape("cpu-max-all", hosts=1, metrics=len(CPU_METRICS), window_ns=_MAX_ALL_WINDOW_NS),
    "cpu-max-all-8": _QueryShape("cpu-max-all", hosts=8, metrics=len(CPU_METRICS), window_ns=_MAX_ALL_WINDOW_NS),
    "double-groupby-1": _QueryShape("double-groupby", metrics=1, window_ns=_DOUBLE_GROUPBY_WINDOW_NS),
    "double-groupby-5": _QueryShape("double-groupby", metrics=5, window_ns=_DOUBLE_GROUPBY_WINDOW_NS),
    "double-groupby-all": _QueryShape(
        "double-groupby", metrics=len(CPU_METRICS), window_ns=_DOUBLE_GROUPBY_WINDOW_NS
    ),
    "high-cpu-all": _QueryShape("high-cpu", hosts=0, window_ns=_HIGH_CPU_WINDOW_NS),
    "high-cpu-1": _QueryShape("high-cpu", hosts=1, window_ns=_HIGH_CPU_WINDOW_NS),
    "lastpoint": _QueryShape("lastpoint"),
    "groupby-orderby-limit": _QueryShape("groupby-orderby-limit", window_ns=_GROUPBY_ORDERBY_LIMIT_WINDOW_NS),
    "cpu-max-all-32-24": _QueryShape("cpu-max-all", hosts=32, metrics=len(CPU_METRICS), window_ns=24 * _HOUR_NS),
}
assert tuple(_SHAPES) == QUERY_TYPES


def _aggregates(function: str, metrics: int) -> str:
    return ", ".join(f"{function}({metric}) AS {function}_{metric}" for metric in CPU_METRICS[:metrics])


def _random_hosts(rng: GoRand, count: int, scale: int) -> tuple[str, ...]:
    """TSBS's GetRandomSubsetPerm over host numbers, in draw order."""
    return tuple(f"host_{n}" for n in random_subset(rng, count, scale))


class Generator(QueryDraws):
    """One TSBS run's draws for the devops queries (``scale``: hosts)."""

    def make(self, query_type: str) -> Query:
        shape = _SHAPES[query_type]
        if shape.kind in ("single-groupby", "cpu-max-all"):
            window = self.window(shape.window_ns)
            hosts = _random_hosts(self.rng, shape.hosts, self.scale)
            if shape.kind == "single-groupby":
                label = (f"QuestDB {shape.metrics} cpu metric(s), random {shape.hosts:4d} hosts, "
                         f"random {go_duration_string(shape.window_ns)} by 1m")
                step = "1m"
            else:
                # TSBS's label names the 8h default window even for the 24h type.
                label = (f"QuestDB max of all CPU metrics, random {shape.hosts:4d} hosts, "
                         f"random {go_duration_string(_MAX_ALL_WINDOW_NS)} by 1h")
                step = "1h"
            sql = (
                "\n\t\tSELECT\n\t\t\t" + _aggregates("max", shape.metrics) + "\n\t\tFROM cpu"
                "\n\t\tWHERE hostname IN $1\n\t\t  AND timestamp >= $2\n\t\t  AND timestamp < $3\n\t\tSAMPLE BY "
                + step
            )
            return Query(query_type, label, f"{label}: {window.start_string}", sql,
                         (hosts, window.start_string, window.end_string))
        if shape.kind == "double-groupby":
            window = self.window(shape.window_ns)
            label = (
                f"QuestDB mean of {shape.metrics} metrics, all hosts, "
                f"random {go_duration_string(shape.window_ns)} by 1h"
            )
            sql = (
                "\n\t\tSELECT hostname,\n\t\t\t" + _aggregates("avg", shape.metrics) + "\n\t\tFROM cpu"
                "\n\t\tWHERE timestamp >= $1\n\t\t  AND timestamp < $2\n\t\tSAMPLE BY 1h"
            )
            return Query(query_type, label, f"{label}: {window.start_string}", sql,
                         (window.start_string, window.end_string))
        if shape.kind == "high-cpu":
            window = self.window(shape.window_ns)
            head = "\n\t\t      SELECT *\n\t\t      FROM cpu\n\t\t      WHERE usage_user > 90.0"
            if shape.hosts > 0:
                hosts = _random_hosts(self.rng, shape.hosts, self.scale)
                label = f"QuestDB CPU over threshold, {shape.hosts} host(s)"
                sql = (
                    head + "\n\t\t       AND hostname IN $1"
                    "\n\t\t       AND timestamp >= $2\n\t\t       AND timestamp < $3"
                )
                params = (hosts, window.start_string, window.end_string)
            else:
                label = "QuestDB CPU over threshold, all hosts"
                sql = head + "\n\t\t       AND timestamp >= $1\n\t\t       AND timestamp < $2"
                params = (window.start_string, window.end_string)
            return Query(query_type, label, f"{label}: {window.start_string}", sql, params)
        if shape.kind == "groupby-orderby-limit":
            window = self.window(shape.window_ns)
            label = "QuestDB max cpu over last 5 min-intervals (random end)"
            sql = (
                "\n\t\tSELECT max(usage_user)\n\t\tFROM cpu\n\t\tWHERE timestamp < $1"
                "\n\t\tSAMPLE BY 1m\n\t\tORDER BY timestamp DESC\n\t\tLIMIT 5"
            )
            return Query(query_type, label, f"{label}: {window.end_string}", sql, (window.end_string,))
        label = "QuestDB last row per host"
        return Query(query_type, label, label, "SELECT * FROM cpu latest by hostname", None)


def refusal(query_type: str, scale: int, start_ns: int, end_ns: int) -> str | None:
    """The devops query types' ``query_type_refusal``: the window is drawn before the hosts, so a too-wide
    window is what TSBS reports first."""
    shape = _SHAPES[query_type]
    if shape.kind == "lastpoint":
        return None
    if too_wide := window_refusal(query_type, start_ns, end_ns, shape.window_ns):
        return too_wide
    if shape.hosts > scale:
        # TSBS's own words, which name its flag (ours has the same name).
        return f"{query_type}: number of hosts ({shape.hosts}) larger than total hosts. See --scale ({scale})"
    return None
