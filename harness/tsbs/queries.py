"""TSBS's queries for QuestDB, for every use case: ``generate_queries`` checks the flags as
``tsbs_generate_queries`` does and makes the queries with the generator of the use case's ``query_module``
(devops and cpu-only: ``devops_queries``, TSBS's ``--format=questdb`` draw for draw; iot: ``iot_queries``).

Each query type is a separate TSBS run: it seeds Go's math/rand with ``--seed``, so ``query_type="all"``
re-seeds at the start of every type's block.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

from harness.errors import ParameterError
from harness.tsbs.params import parse_rfc3339_ns
from harness.tsbs.query_types import QUERY_TYPES, Query
from harness.tsbs.use_cases import DEFAULT, NAMES
from harness.tsbs.use_cases import get as use_case_named

__all__ = ["QUERY_TYPES", "Query", "generate_queries", "query_type_refusal", "query_use_cases"]


def query_type_refusal(query_type: str, scale: int, start_ns: int, end_ns: int,
                       use_case: str = DEFAULT) -> str | None:
    """Why TSBS would refuse (panic on) this query type of ``use_case`` for these flags, in its words; None if
    it would not."""
    return _query_module(use_case).refusal(query_type, scale, start_ns, end_ns)


def _query_module(use_case: str):
    return importlib.import_module(use_case_named(use_case).query_module)


def query_use_cases() -> tuple[str, ...]:
    """The use cases TSBS has QuestDB queries for (it maps cpu-only onto the devops query matrix)."""
    return tuple(name for name in NAMES if use_case_named(name).query_types)


def _check_flags(use_case: str, seed: int, scale: int, queries: int, query_type: str) -> tuple[str, ...]:
    supported = query_use_cases()
    if use_case not in supported:
        raise ParameterError("use_case", f"invalid use case specified: {use_case!r} (supported: {', '.join(supported)})")
    known = use_case_named(use_case).query_types
    if query_type == "all":
        types = known
    elif query_type in known:
        types = (query_type,)
    else:
        raise ParameterError("query_type", f"invalid query type for use case '{use_case}': '{query_type}' "
                                           f"(choices: all, {', '.join(known)})")
    if scale <= 0:
        raise ParameterError("scale", f"scale cannot be 0 or negative, got {scale}")
    if queries < 0:
        raise ParameterError("queries", f"must be zero or more, got {queries}")
    if not -(2**63) <= seed < 2**63:
        raise ParameterError("seed", f"must fit a 64-bit signed integer, got {seed}")
    if seed == 0:
        # TSBS reads 0 as "seed from the clock"; a run must be repeatable, so the caller picks and prints one.
        raise ParameterError("seed", "0 means a clock seed in TSBS: give a non-zero seed")
    return types


def generate_queries(
    use_case: str,
    seed: int,
    scale: int,
    timestamp_start: str,
    timestamp_end: str,
    queries: int,
    query_type: str,
) -> Iterator[Query]:
    """``queries`` queries of ``query_type`` (or of every type, each block freshly seeded, for "all").

    A single type that TSBS would refuse for these flags raises ``ParameterError`` with TSBS's reason.
    With "all", such types are left out, as a TSBS run per type would have produced nothing for them;
    ``query_type_refusal`` tells which and why. All flags are checked before the first query is made.
    """
    types = _check_flags(use_case, seed, scale, queries, query_type)
    start_ns = parse_rfc3339_ns(timestamp_start, "timestamp_start")
    end_ns = parse_rfc3339_ns(timestamp_end, "timestamp_end")
    if end_ns < start_ns:
        raise ParameterError("timestamp_end", f"{timestamp_end} is before the start ({timestamp_start}): "
                                              "end time before start time")
    runnable = []
    for one_type in types:
        refusal = query_type_refusal(one_type, scale, start_ns, end_ns, use_case) if queries else None
        if refusal is None:
            runnable.append(one_type)
        elif query_type != "all":
            raise ParameterError("query_type", refusal)
    return _generate(_query_module(use_case).Generator, runnable, seed, scale, start_ns, end_ns, queries)


def _generate(generator_class, types: list[str], seed: int, scale: int, start_ns: int, end_ns: int,
              queries: int) -> Iterator[Query]:
    for one_type in types:
        generator = generator_class(seed, scale, start_ns, end_ns)
        for _ in range(queries):
            yield generator.make(one_type)
