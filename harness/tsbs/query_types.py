"""TSBS's query types and what one generated query is: the names of the devops query types
(``tsbs_generate_queries --use-case=cpu-only|devops``) and of the iot ones (``--use-case=iot``) in TSBS's
order, which a use case's ``query_types`` lists, and ``Query``, which ``harness.tsbs.queries`` generates and query files hold. Light on purpose: a query
run that reads its queries from a file imports this, not the generator (Go's PRNG, numba)."""

from __future__ import annotations

from dataclasses import dataclass

QUERY_TYPES = (
    "single-groupby-1-1-1",
    "single-groupby-1-1-12",
    "single-groupby-1-8-1",
    "single-groupby-5-1-1",
    "single-groupby-5-1-12",
    "single-groupby-5-8-1",
    "cpu-max-all-1",
    "cpu-max-all-8",
    "double-groupby-1",
    "double-groupby-5",
    "double-groupby-all",
    "high-cpu-all",
    "high-cpu-1",
    "lastpoint",
    "groupby-orderby-limit",
    "cpu-max-all-32-24",
)

# In the order of TSBS's use-case matrix (tsbs_generate_queries/main.go).
IOT_QUERY_TYPES = (
    "last-loc",
    "single-last-loc",
    "low-fuel",
    "high-load",
    "stationary-trucks",
    "long-driving-sessions",
    "long-daily-sessions",
    "avg-vs-projected-fuel-consumption",
    "avg-daily-driving-duration",
    "avg-daily-driving-session",
    "avg-load",
    "daily-activity",
    "breakdown-frequency",
)
ALL_QUERY_TYPES = QUERY_TYPES + IOT_QUERY_TYPES


@dataclass(frozen=True)
class Query:
    """One generated query: TSBS's label and description, the placeholder SQL and its bind values."""

    query_type: str
    label: str
    description: str
    sql: str
    params: tuple | None  # host/truck lists are tuples of names; None when the query has no parameters

    def to_json_dict(self) -> dict:
        params = None if self.params is None else [list(p) if isinstance(p, tuple) else p for p in self.params]
        return {
            "query_type": self.query_type,
            "label": self.label,
            "description": self.description,
            "sql": self.sql,
            "params": params,
        }
