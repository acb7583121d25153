"""What the run's time series costs: the same send with the sampler on (one sample a second: the client's
and server's CPU and RSS, and /metrics over HTTP) and off (--sample-interval 0), alternated, medians of
the serialize and send rates and their ratios (a script, not a test).

    .venv/bin/python benchmarks/sampler_overhead.py --rounds 3 --row-count 1000000 [--workers 2]

Each round runs both back to back, the order alternating, each into a fresh table.
"""

from __future__ import annotations

import io
import statistics
from pathlib import Path

import typer

from harness.results import system_info
from harness.run import BenchOptions, run_bench

MODES = {"sampler on": 1.0, "sampler off": 0.0}


def main(rounds: int = typer.Option(3, min=1), row_count: int = typer.Option(1_000_000, min=1),
         workers: int | None = typer.Option(None, min=1), scale: int = typer.Option(4000, min=1),
         chunk: int = typer.Option(10_000, min=1), seed: int = 1, host: str = "localhost",
         http_port: int = typer.Option(9000, min=1, max=65535), ilp_port: int = typer.Option(9009, min=1, max=65535),
         server_metrics_port: int = typer.Option(9003, min=1, max=65535),
         results_dir: Path = typer.Option(Path("results/sampler-overhead"))) -> None:
    system = system_info()
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {row_count} rows, scale {scale}, "
          f"chunk {chunk}, workers {workers or 1}; client and server share the cores")
    rates: dict[str, dict[str, list[float]]] = {mode: {"serialize": [], "send": []} for mode in MODES}
    for round_number in range(rounds):
        order = list(MODES) if round_number % 2 == 0 else list(reversed(MODES))
        for mode in order:
            options = BenchOptions(send=True, host=host, http_port=http_port, ilp_port=ilp_port,
                                   server_metrics_port=server_metrics_port,
                                   row_count=row_count, scale=scale, seed=seed, workers=workers,
                                   worker_chunk_row_count=chunk, reporting_period=0, sample_interval=MODES[mode],
                                   results_dir=str(results_dir))
            record = run_bench(options, out=io.StringIO())
            for phase in ("serialize", "send"):
                rates[mode][phase].append(record.phases[phase].rows_per_second)
            samples = len(record.timeseries.samples) if record.timeseries else 0
            print(f"round {round_number + 1} {mode:<12} serialize {rates[mode]['serialize'][-1] / 1e6:6.3f}  "
                  f"send {rates[mode]['send'][-1] / 1e6:6.3f} M rows/s  ({samples} samples)  {record.path}")
    for phase in ("serialize", "send"):
        on, off = (statistics.median(rates[mode][phase]) for mode in MODES)
        print(f"median {phase}: sampler on {on / 1e6:.3f}, off {off / 1e6:.3f} M rows/s: on/off {on / off:.3f}")


if __name__ == "__main__":
    typer.run(main)
