"""``queries generate``: TSBS's queries as JSON lines, exactly as ``tsbs_generate_queries --format=questdb``
writes them for the same flags (the flags keep TSBS's names)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from harness.options import check_options, option
from harness.tsbs import params
from harness.tsbs.queries import QUERY_TYPES, QUERY_USE_CASES, generate_queries, query_type_refusal
from harness.tsbs.query_file import write_jsonl


@dataclass
class QuerySetOptions:
    """Which queries: tsbs_generate_queries's flags (``queries run --generate`` takes them too)."""

    use_case: str = option("cpu-only", "TSBS use case: " + ", ".join(QUERY_USE_CASES) + ".")
    seed: int | None = option(None, "PRNG seed, as tsbs_generate_queries --seed. Default: random, printed.")
    scale: int = option(4000, "Hosts in the data set the queries run on (bench's default; TSBS's is 1).", min=1)
    timestamp_start: str = option(params.DEFAULT_TIMESTAMP_START, "Start of the data set's time range (RFC 3339).")
    timestamp_end: str = option(params.DEFAULT_TIMESTAMP_END, "End of the data set's time range (RFC 3339).")
    queries: int = option(1000, "Queries per query type.", min=0)
    query_type: str | None = option(None, "One of " + ", ".join(QUERY_TYPES) + "; or all (each type TSBS can "
                                           "make for this range, in that order).")


@dataclass
class QueriesGenerateOptions(QuerySetOptions):
    file: str = option("-", "Output path (.gz compresses); - for stdout.")


def run_queries_generate(options: QueriesGenerateOptions) -> None:
    check_options(options)
    if options.query_type is None:
        from harness.errors import UsageError

        raise UsageError("--query-type is required: a query type, or all")
    seed = options.seed or params.random_seed()
    queries = generate_queries(options.use_case, seed, options.scale, options.timestamp_start,
                               options.timestamp_end, options.queries, options.query_type)
    if options.seed is None:
        print(f"seed: {seed}", file=sys.stderr, flush=True)
    for refusal in skipped_types(options):
        print(f"skipped (as TSBS refuses it): {refusal}", file=sys.stderr, flush=True)
    write_jsonl(queries, sys.stdout if options.file == "-" else options.file)


def skipped_types(options: QuerySetOptions) -> list[str]:
    """With ``--query-type all``: why TSBS would refuse each type it leaves out for these flags."""
    if options.query_type != "all":
        return []
    start = params.parse_rfc3339_ns(options.timestamp_start, "timestamp-start")
    end = params.parse_rfc3339_ns(options.timestamp_end, "timestamp-end")
    return [refusal for query_type in QUERY_TYPES
            if (refusal := query_type_refusal(query_type, options.scale, start, end))]
