"""What exactly-once costs: plain ILP/HTTP vs ``--exactly-once`` (a deduplicating table, a transaction per
chunk, re-sends on failure) on the same data, alternated, medians and their ratio (a script, not a test).

    .venv/bin/python benchmarks/exactly_once_cost.py --rounds 3 --row-count 1000000 [--workers 2] [--json PATH]

Each round runs both modes back to back (the order alternates), each into a fresh table. The send rate
is end to end: with client and server on the same cores, the server's work (dedup included) and the
client's share the CPU, so the ratio is the cost of dedup on this machine, not a server-only figure.
Every run's results JSON goes to --results-dir; the benchmark record (every round, medians, ratio) to
--json (default results/<UTC time>-exactly-once-cost.json).
"""

from __future__ import annotations

import io
from pathlib import Path

import typer

from benchmarks.alternate import alternate, write_record
from harness.commands.bench import run_bench
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.run.bench_options import BenchOptions

MODES = {"http": {}, "http --exactly-once": {"exactly_once": True}}


def main(rounds: int = typer.Option(3, min=1), row_count: int = typer.Option(1_000_000, min=1),
         workers: int | None = typer.Option(None, min=1), scale: int = typer.Option(4000, min=1),
         chunk: int = typer.Option(10_000, min=1), seed: int = 1, host: str = "localhost",
         http_port: int = typer.Option(9000, min=1, max=65535),
         results_dir: Path = typer.Option(Path("results/exactly-once-cost")),
         json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    record = BenchmarkRecord("exactly-once-cost", parameters=dict(
        rounds=rounds, row_count=row_count, workers=workers, scale=scale, chunk=chunk, seed=seed, host=host,
        http_port=http_port, results_dir=str(results_dir)))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {row_count} rows, scale {scale}, "
          f"chunk {chunk}, workers {workers or 1}; client and server share the cores")

    def send(mode: str):
        def measure(round_number: int) -> Measurement:
            options = BenchOptions(send=True, transport="http", host=host, http_port=http_port, row_count=row_count,
                                   scale=scale, seed=seed, workers=workers, worker_chunk_row_count=chunk,
                                   reporting_period=0, results_dir=str(results_dir), **MODES[mode])
            run = run_bench(options, out=io.StringIO())
            phase = run.phases["send"]
            print(f"round {round_number} {mode:<20} {phase.rows / phase.seconds / 1e6:6.3f} M rows/s  "
                  f"({phase.rows} rows in {phase.seconds:.2f}s; {run.validation.visible_rows} visible)  {run.path}")
            return Measurement(seconds=phase.seconds, rows=phase.rows, client_cpu_seconds=phase.client_cpu_seconds,
                               extra={"visible_rows": run.validation.visible_rows}, run_record=str(run.path))
        return measure

    comparison = alternate({mode: send(mode) for mode in MODES}, rounds, baseline="http")
    record.comparisons.append(comparison)
    plain, exact = (comparison.summary[mode]["rows_per_second"] for mode in MODES)
    print(f"median: http {plain.median / 1e6:.3f} M rows/s, --exactly-once {exact.median / 1e6:.3f} M rows/s: "
          f"ratio {exact.ratio:.2f}")
    write_record(record, json_path)


if __name__ == "__main__":
    typer.run(main)
