"""A benchmark record's summary printed again as the script that wrote it prints it (a script, not a test):
query parity's, loader parity's whole commands, serializer parity's or an A/B's (``benchmarks/ab.py``), with
the paired intervals and standings of harness.records.benchmark_record (a version-1 record gets them from its rounds).

    .venv/bin/python benchmarks/reprint.py RECORD.json [...]

``python -m harness compare RECORD.json ...`` puts any benchmark record in one table. A file that is not a
benchmark record, or one of a benchmark without such a summary, ends in one line and exit 2.
"""

from __future__ import annotations

import sys

from benchmarks import ab
from harness.errors import UsageError
from harness.records.benchmark_record import BenchmarkRecord
from harness.records.store import load_benchmark_record

SUMMARIZED = ("query-parity", "loader-parity", "serialize-parity", "ab")


def print_summary(record: BenchmarkRecord) -> None:
    """The closing summary of the script named by the record's ``benchmark`` (one of ``SUMMARIZED``), printed
    from the record."""
    # Each parity script imported where its record is met: serialize_parity's imports pandas.
    comparisons, parameters = record.comparisons, record.parameters
    if record.benchmark == "query-parity":
        from benchmarks import query_parity
        query_parity.print_summary(comparisons, parameters["queries"])
    elif record.benchmark == "loader-parity":
        from benchmarks import loader_parity
        loader_parity.print_whole_command(comparisons, comparisons[0].variants)
    elif record.benchmark == "serialize-parity":
        from benchmarks import serialize_parity
        serialize_parity.print_summary(comparisons, comparisons[0].variants, parameters["row_count"])
    elif record.benchmark == "ab":
        ab.print_summary(comparisons[0], parameters["less_is_better"])
    else:
        raise UsageError(f"{record.path}: a {record.benchmark!r} record has no summary to print again (only "
                         f"{', '.join(SUMMARIZED)}); python -m harness compare puts any record in a table")


def main(paths: list[str]) -> None:
    if not paths:
        raise UsageError("usage: benchmarks/reprint.py RECORD.json [...]")
    for path in paths:
        record = load_benchmark_record(path)
        print(f"== {path}")
        print_summary(record)


if __name__ == "__main__":
    ab.exit_in_one_line(lambda: main(sys.argv[1:]))
