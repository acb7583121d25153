"""How much faster the second runner of a pair ran than the first, whichever runner it was: for each query
parity output named on the command line, the median over its counted rounds of (second run's queries/s) /
(first run's), over all pairs and per query type."""
import collections
import re
import statistics
import sys

RUN = re.compile(r"round (\d+) (\S+)\s+W=(\d) (\w+)\s+([0-9.]+) queries/s")
for path in sys.argv[1:]:
    pairs = collections.defaultdict(list)  # (round, type, workers): the rates in the order they ran
    for line in open(path):
        if match := RUN.match(line):
            pairs[match[1], match[2], match[3]].append(float(match[5]))
    by_type = collections.defaultdict(list)
    for (_, query_type, _), rates in pairs.items():
        if len(rates) == 2:
            by_type[query_type].append(rates[1] / rates[0])
    every = [ratio for ratios in by_type.values() for ratio in ratios]
    print(f"{path}: second over first, median of {len(every)} pairs {statistics.median(every):.2f}")
    print("   " + ", ".join(f"{query_type} {statistics.median(ratios):.2f}" for query_type, ratios in by_type.items()))
