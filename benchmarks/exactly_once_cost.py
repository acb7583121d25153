"""What exactly-once costs: plain ILP/HTTP vs ``--exactly-once`` (a deduplicating table, a transaction per
chunk, re-sends on failure) on the same data, alternated, medians and their ratio (a script, not a test).

    .venv/bin/python benchmarks/exactly_once_cost.py --rounds 3 --row-count 1000000 [--workers 2]

Each round runs both modes back to back (the order alternates), each into a fresh table. The send rate
is end to end: with client and server on the same cores, the server's work (dedup included) and the
client's share the CPU, so the ratio is the cost of dedup on this machine, not a server-only figure.
Every run's results JSON goes to --results-dir.
"""

from __future__ import annotations

import io
import statistics
from pathlib import Path

import typer

from harness.results import system_info
from harness.run import BenchOptions, run_bench

MODES = {"http": {}, "http --exactly-once": {"exactly_once": True}}


def main(rounds: int = typer.Option(3, min=1), row_count: int = typer.Option(1_000_000, min=1),
         workers: int | None = typer.Option(None, min=1), scale: int = typer.Option(4000, min=1),
         chunk: int = typer.Option(10_000, min=1), seed: int = 1, host: str = "localhost",
         http_port: int = typer.Option(9000, min=1, max=65535),
         results_dir: Path = typer.Option(Path("results/exactly-once-cost"))) -> None:
    system = system_info()
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {row_count} rows, scale {scale}, "
          f"chunk {chunk}, workers {workers or 1}; client and server share the cores")
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for round_number in range(rounds):
        order = list(MODES) if round_number % 2 == 0 else list(reversed(MODES))
        for mode in order:
            options = BenchOptions(send=True, transport="http", host=host, http_port=http_port, row_count=row_count,
                                   scale=scale, seed=seed, workers=workers, worker_chunk_row_count=chunk,
                                   reporting_period=0, results_dir=str(results_dir), **MODES[mode])
            record = run_bench(options, out=io.StringIO())
            send = record.phases["send"]
            rate = send.rows / send.seconds
            rates[mode].append(rate)
            print(f"round {round_number + 1} {mode:<20} {rate / 1e6:6.3f} M rows/s  "
                  f"({send.rows} rows in {send.seconds:.2f}s; {record.validation.visible_rows} visible)  "
                  f"{record.path}")
    plain, exact = (statistics.median(rates[mode]) for mode in MODES)
    print(f"median: http {plain / 1e6:.3f} M rows/s, --exactly-once {exact / 1e6:.3f} M rows/s: "
          f"ratio {exact / plain:.2f}")


if __name__ == "__main__":
    typer.run(main)
