"""Reproduce the original py-tsbs-benchmark's results table on this machine (a script, not a test).

For each field type (double, long) and ILP protocol version (1 text, 2 binary doubles) it runs, in one
go against one QuestDB: serialize single-threaded, serialize with N workers, send single, send with N
workers, and the iterrows row-by-row baseline (measured on --iterrows-rows rows and extrapolated to
--row-count, as its rate does not depend on the size). Prints the table and writes every run's
results JSON under --results-dir.

    .venv/bin/python benchmarks/original_table.py --workers 2 --row-count 10000000 [--host ... --ilp-port ...]

On a host where client and server share the cores, the send figures are bounded by the server.
"""

from __future__ import annotations

import argparse
import io
import sys

from harness.run import BenchOptions, run_bench
from harness.results import system_info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--row-count", type=int, default=10_000_000)
    parser.add_argument("--iterrows-rows", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scale", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--ilp-port", type=int, default=9009)
    parser.add_argument("--http-port", type=int, default=9000)
    parser.add_argument("--fields", nargs="+", default=["double", "long"])
    parser.add_argument("--protocols", nargs="+", default=["1", "2"])
    parser.add_argument("--results-dir", default="results/original-table")
    parser.add_argument("--verbose", action="store_true", help="show each run's own report")
    options = parser.parse_args()

    system = system_info()
    print(f"host: {system.get('cpu_model')}, {system.get('cpu_count')} cores; {options.row_count} rows, "
          f"scale {options.scale}, seed {options.seed}, {options.workers} workers")
    cases = [
        ("serialize, 1 thread", dict(send=False), "serialize"),
        (f"serialize, {options.workers} workers", dict(send=False, workers=options.workers), "serialize"),
        ("send, 1 sender", dict(send=True), "send"),
        (f"send, {options.workers} senders", dict(send=True, workers=options.workers), "send"),
        ("iterrows send (extrapolated)", dict(send=True, op="iterrows", row_count=options.iterrows_rows), "send"),
    ]
    header = f"{'fields':7} {'ILP':4} {'case':32} {'rows':>10} {'seconds':>9} {'M rows/s':>9} {'MiB/s':>9}"
    print(header, flush=True)
    # The summary adds the original's "NNx faster": each case's MiB/s over iterrows' for the same fields
    # and protocol (known only once iterrows, run last, has run).
    lines = [f"{header} {'x iterrows':>10}", "-" * (len(header) + 11)]
    for fields in options.fields:
        for protocol in options.protocols:
            group = []
            for label, overrides, phase in cases:
                values = dict(scale=options.scale, seed=options.seed, row_count=options.row_count, fields=fields,
                              protocol_version=protocol, host=options.host, ilp_port=options.ilp_port,
                              http_port=options.http_port, results_dir=options.results_dir, reporting_period=0)
                values.update(overrides)
                out = sys.stdout if options.verbose else io.StringIO()
                record = run_bench(BenchOptions(**values), out=out)
                result = record.phases[phase]
                rows, seconds = result.rows, result.seconds
                if rows != options.row_count:  # extrapolate the row-by-row baseline at its measured rate
                    seconds = seconds * options.row_count / rows
                    rows = options.row_count
                mib = result.bytes / 2**20 * rows / result.rows
                line = (f"{fields:7} v{protocol:3} {label:32} {rows:>10} {seconds:>9.2f} "
                        f"{rows / seconds / 1e6:>9.2f} {mib / seconds:>9.1f}")
                group.append((line, mib / seconds))
                print(line, flush=True)
            baseline = group[-1][1]
            lines.extend(f"{line} {speed / baseline:>10.1f}" for line, speed in group)
    print()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
