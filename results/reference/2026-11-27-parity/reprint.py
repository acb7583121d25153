"""A parity script's closing summary printed again from the record it wrote, with the paired intervals and
standings of harness.benchmark_record (version 1 records get theirs from their rounds).

    .venv/bin/python results/reference/2026-11-27-parity/reprint.py RECORD.json [...]
"""

import sys

from benchmarks import loader_parity, query_parity, serialize_parity
from harness.benchmark_record import load_benchmark_record

for path in sys.argv[1:]:
    record = load_benchmark_record(path)
    print(f"== {path}")
    if record.benchmark == "query-parity":
        query_parity.print_summary(record.comparisons, record.parameters["queries"])
    elif record.benchmark == "loader-parity":
        loader_parity.print_whole_command(record.comparisons, record.comparisons[0].variants)
    else:
        serialize_parity.print_summary(record.comparisons, record.comparisons[0].variants, record.parameters["row_count"])
