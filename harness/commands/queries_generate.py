"""``queries generate``: TSBS's queries as JSON lines, exactly as ``tsbs_generate_queries --format=questdb``
writes them for the same flags (the flags keep TSBS's names); iot's, which TSBS has only for other
databases, with the parameters ``--format=timescaledb`` draws (``harness.tsbs.iot.queries``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

from harness.errors import UsageError
from harness.options.declare import CommandOptions, command, option
from harness.options.groups import DataSetRangeOptions
from harness.output_file import check_writable
from harness.tsbs import params, use_cases
from harness.tsbs.query_file import write_jsonl
from harness.tsbs.query_types import IOT_QUERY_TYPES, QUERY_TYPES, Query


@dataclass
class QuerySetOptions(DataSetRangeOptions):
    """Which queries: tsbs_generate_queries's flags (``queries run --generate`` takes them too)."""

    queries: int = option(1000, "Queries per query type.", min=0)
    query_type: str | None = option(None, "cpu-only and devops: one of " + ", ".join(QUERY_TYPES) + ". iot: one "
                                           "of " + ", ".join(IOT_QUERY_TYPES) + " (TSBS's TimescaleDB iot "
                                           "queries in QuestDB SQL, its draws exactly; each row carries its own "
                                           "tags, so a row whose tag TSBS cleared fails a filter on that tag and "
                                           "groups under NULL, where TimescaleDB takes the truck's tags row; "
                                           "docs/iot.md). Or all (each type TSBS can make for this range, in "
                                           "that order). Required by `queries generate`; `queries run "
                                           "--generate` runs all by default.")

    def generated(self, seed: int) -> Iterator[Query]:
        """The queries these flags name, drawn from ``seed``."""
        from harness.tsbs.queries import generate_queries  # Go's PRNG (numba): only to generate

        return generate_queries(self.use_case, seed, self.scale, self.timestamp_start, self.range_end(),
                                self.queries, self.query_type or "all")


@dataclass
class QueriesGenerateOptions(QuerySetOptions, CommandOptions):
    file: str = option("-", "Output path (.gz compresses); - for stdout.")


@command
def run_queries_generate(options: QueriesGenerateOptions) -> None:
    if options.query_type is None:
        raise UsageError("--query-type is required: a query type, or all")
    if options.file != "-":
        check_writable(options.file, "the query file")
    seed = options.seed or params.random_seed()
    queries = options.generated(seed)
    if options.seed is None:
        print(f"seed: {seed}", file=sys.stderr, flush=True)
    for refusal in skipped_types(options):
        print(f"skipped (as TSBS refuses it): {refusal}", file=sys.stderr, flush=True)
    write_jsonl(queries, sys.stdout if options.file == "-" else options.file)


def skipped_types(options: QuerySetOptions) -> list[str]:
    """With ``--query-type all``: why TSBS would refuse each type it leaves out for these flags."""
    if options.query_type != "all":
        return []
    from harness.tsbs.queries import query_type_refusal

    start = params.parse_rfc3339_ns(options.timestamp_start, "timestamp_start")
    end = params.parse_rfc3339_ns(options.range_end(), "timestamp_end")
    return [refusal for query_type in use_cases.get(options.use_case).query_types
            if (refusal := query_type_refusal(query_type, options.scale, start, end, options.use_case))]
