"""Queries beside an open loop (``--queries FILE --query-rate Q``): run at their rate over the whole send
(``harness.queries.paced``), their figures into the record and said."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from harness.errors import UsageError
from harness.open_loop.printing import latency_line
from harness.queries.paced import PacedQueries
from harness.records.run_record import OpenLoopFigures, PacedQueryFigures
from harness.tsbs.query_file import read_jsonl

if TYPE_CHECKING:
    from harness.open_loop.inputs import PacedQueryPlan, QueryServer
    from harness.telemetry.metrics import RunMetrics


@contextlib.contextmanager
def queries_beside(plan: PacedQueryPlan | None, server: QueryServer | None, figures: OpenLoopFigures,
                   say: Callable[[str], None], metrics: RunMetrics) -> Iterator[None]:
    """The queries of ``plan`` against ``server`` over the block (nothing without them); their figures into
    ``figures``."""
    if plan is None:
        yield
        return
    queries = read_jsonl(plan.file)
    if not queries:
        raise UsageError(f"query file {plan.file} holds no queries")
    paced = PacedQueries(queries, plan.rate, plan.protocol, server.host, server.port, server.login, server.tls,
                         plan.connections, observer=metrics.query_observer())
    paced.start()
    say(f"Queries beside: {plan.rate:g}/s over {plan.connections} {plan.protocol} connection(s), {len(queries)} "
        f"queries in turn from {plan.file}")
    try:
        yield
    finally:
        paced.stop()
        done = figures.queries = PacedQueryFigures(
            plan.file, plan.rate, plan.protocol, plan.connections, paced.done, paced.late, paced.latency.summary(),
            {query_type: latencies.summary() for query_type, latencies in sorted(paced.by_type.items())},
            _failures(paced), paced.failure_sample)
    if paced.error is not None:
        raise paced.error
    say(f"Queries beside the ingest: {done.done} done, {done.late} late; latency from the intended start: "
        f"{latency_line(done.latency).replace(' chunks)', ' queries)')}")
    if done.failures:
        say(f"  failed: {sum(sum(kinds.values()) for kinds in done.failures.values())} ({done.failure_sample})")


def _failures(paced: PacedQueries) -> dict[str, dict[str, int]]:
    failures: dict[str, dict[str, int]] = {}
    for (query_type, kind), count in paced.failures.items():
        failures.setdefault(query_type, {})[kind] = count
    return failures
