"""The WAL pairs of a matrix record: per release, each figure of WAL on against WAL off, paired per round (the
record's own summary is against its first cell only). Run: .venv/bin/python benchmarks/matrix_pairs.py RECORD.json ..."""

import dataclasses
import sys

from harness.records.benchmark_record import Comparison
from harness.records.intervals import summarize
from harness.records.store import load_benchmark_record

FIGURES = ("rows_per_second", "send_seconds", "time_to_visible_seconds", "server_cpu_seconds_per_million_rows")

for path in sys.argv[1:]:
    record = load_benchmark_record(path)
    (comparison,) = record.comparisons
    print(f"{path}: {record.parameters['workers']} worker(s), {record.parameters['row_count']} rows, "
          f"{len(comparison.counted_rounds())} rounds")
    for release in record.parameters["versions"]:
        on, off = f"{release} wal=true", f"{release} wal=false"
        pair = Comparison(name=release, baseline=off, variants=[off, on],
                          rounds=[dataclasses.replace(one, measurements={name: one.measurements[name]
                                                                         for name in (off, on)})
                                  for one in comparison.rounds])
        summary = summarize(pair)[on]
        shown = ", ".join(f"{figure} {summary[figure].paired_text(not figure.endswith('seconds') and 'cpu' not in figure)}"
                          for figure in FIGURES if figure in summary)
        print(f"  {release}: WAL on / WAL off: {shown}")
