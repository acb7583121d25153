"""Reproduce the original py-tsbs-benchmark's results table on this machine (a script, not a test).

For each field type (double, long) and ILP protocol version (1 text, 2 binary doubles) it runs, in one
go against one QuestDB: serialize single-threaded, serialize with N workers, send single, send with N
workers, and the iterrows row-by-row baseline (measured on --iterrows-rows rows and extrapolated to
--row-count, as its rate does not depend on the size). Prints the table, writes every run's results JSON
under --results-dir and the benchmark record (each case's figures as measured, and its MiB/s as a ratio
to iterrows') to --json (default results/<UTC time>-original-table.json).

    .venv/bin/python benchmarks/original_table.py --workers 2 --row-count 10000000 [--host ... --ilp-port ...]

On a host where client and server share the cores, the send figures are bounded by the server.
"""

from __future__ import annotations

import argparse
import io
import sys

from benchmarks.alternate import alternate, write_record
from harness.commands.bench import run_bench
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.run.bench_options import BenchOptions

ITERROWS = "iterrows send (extrapolated)"


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
    parser.add_argument("--json", help="the benchmark record's path")
    options = parser.parse_args()
    record = BenchmarkRecord("original-table", parameters={
        name: value for name, value in vars(options).items() if name not in ("json", "verbose")})

    system = record.system
    print(f"host: {system.get('cpu_model')}, {system.get('cpu_count')} cores; {options.row_count} rows, "
          f"scale {options.scale}, seed {options.seed}, {options.workers} workers")
    cases = {
        "serialize, 1 thread": (dict(send=False), "serialize"),
        f"serialize, {options.workers} workers": (dict(send=False, workers=options.workers), "serialize"),
        "send, 1 sender": (dict(send=True), "send"),
        f"send, {options.workers} senders": (dict(send=True, workers=options.workers), "send"),
        ITERROWS: (dict(send=True, op="iterrows", row_count=options.iterrows_rows), "send"),
    }
    header = f"{'fields':7} {'ILP':4} {'case':32} {'rows':>10} {'seconds':>9} {'M rows/s':>9} {'MiB/s':>9}"
    print(header, flush=True)
    # The summary adds the original's "NNx faster": each case's MiB/s over iterrows' for the same fields
    # and protocol (known only once iterrows, run last, has run).
    lines = [f"{header} {'x iterrows':>10}", "-" * (len(header) + 11)]

    def line(fields: str, protocol: str, label: str, measurement: Measurement) -> str:
        """A case's line, at --row-count rows: the row-by-row baseline extrapolated at its measured rate."""
        rows, seconds = options.row_count, measurement.seconds * options.row_count / measurement.rows
        return (f"{fields:7} v{protocol:3} {label:32} {rows:>10} {seconds:>9.2f} "
                f"{rows / seconds / 1e6:>9.2f} {measurement.extra['mib_per_second']:>9.1f}")

    for fields in options.fields:
        for protocol in options.protocols:
            def case(label: str):
                def measure(_: int) -> Measurement:
                    overrides, phase = cases[label]
                    values = dict(scale=options.scale, seed=options.seed, row_count=options.row_count, fields=fields,
                                  protocol_version=protocol, host=options.host, ilp_port=options.ilp_port,
                                  http_port=options.http_port, results_dir=options.results_dir, reporting_period=0)
                    values.update(overrides)
                    out = sys.stdout if options.verbose else io.StringIO()
                    run = run_bench(BenchOptions(**values), out=out)
                    result = run.phases[phase]
                    measurement = Measurement(seconds=result.seconds, rows=result.rows,
                                              client_cpu_seconds=result.client_cpu_seconds,
                                              extra={"mib_per_second": result.mib_per_second}, run_record=str(run.path))
                    print(line(fields, protocol, label, measurement), flush=True)
                    return measurement
                return measure

            # One run of each case, in the table's order: the table reproduces the original's, not a comparison
            # of noisy medians.
            comparison = alternate({label: case(label) for label in cases}, 1, name=f"{fields} ILP v{protocol}",
                                   baseline=ITERROWS, parameters={"fields": fields, "protocol_version": protocol})
            record.comparisons.append(comparison)
            (counted,) = comparison.counted_rounds()
            lines.extend(f"{line(fields, protocol, label, counted.measurements[label])} "
                         f"{comparison.summary[label]['mib_per_second'].ratio:>10.1f}" for label in cases)
    print()
    print("\n".join(lines))
    write_record(record, options.json)


if __name__ == "__main__":
    main()
