"""What the run's time series costs: the same send with the sampler on (one sample a second: the client's
and server's CPU and RSS, and /metrics over HTTP) and off (--sample-interval 0), alternated, medians of
the serialize and send rates and their ratios (a script, not a test).

    .venv/bin/python benchmarks/sampler_overhead.py --rounds 3 --row-count 1000000 [--workers 2] [--json PATH]

Each round runs both back to back, the order alternating, each into a fresh table. A round's seconds and
rows are its send phase's; its serialize rate is an extra figure. The benchmark record goes to --json
(default results/<UTC time>-sampler-overhead.json).
"""

from __future__ import annotations

import io
from pathlib import Path

import typer

from benchmarks.alternate import alternate, write_record
from harness.commands.bench import run_bench
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.run.bench_options import BenchOptions

MODES = {"sampler on": 1.0, "sampler off": 0.0}


def main(rounds: int = typer.Option(3, min=1), row_count: int = typer.Option(1_000_000, min=1),
         workers: int | None = typer.Option(None, min=1), scale: int = typer.Option(4000, min=1),
         chunk: int = typer.Option(10_000, min=1), seed: int = 1, host: str = "localhost",
         http_port: int = typer.Option(9000, min=1, max=65535), ilp_port: int = typer.Option(9009, min=1, max=65535),
         server_metrics_port: int = typer.Option(9003, min=1, max=65535),
         results_dir: Path = typer.Option(Path("results/sampler-overhead")),
         json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    record = BenchmarkRecord("sampler-overhead", parameters=dict(
        rounds=rounds, row_count=row_count, workers=workers, scale=scale, chunk=chunk, seed=seed, host=host,
        http_port=http_port, ilp_port=ilp_port, server_metrics_port=server_metrics_port,
        results_dir=str(results_dir)))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {row_count} rows, scale {scale}, "
          f"chunk {chunk}, workers {workers or 1}; client and server share the cores")

    def send(mode: str):
        def measure(round_number: int) -> Measurement:
            options = BenchOptions(send=True, host=host, http_port=http_port, ilp_port=ilp_port,
                                   server_metrics_port=server_metrics_port,
                                   row_count=row_count, scale=scale, seed=seed, workers=workers,
                                   worker_chunk_row_count=chunk, reporting_period=0, sample_interval=MODES[mode],
                                   results_dir=str(results_dir))
            run = run_bench(options, out=io.StringIO())
            serialize, sent = run.phases["serialize"], run.phases["send"]
            samples = len(run.timeseries.samples) if run.timeseries else 0
            print(f"round {round_number} {mode:<12} serialize {serialize.rows_per_second / 1e6:6.3f}  "
                  f"send {sent.rows_per_second / 1e6:6.3f} M rows/s  ({samples} samples)  {run.path}")
            return Measurement(seconds=sent.seconds, rows=sent.rows, client_cpu_seconds=sent.client_cpu_seconds,
                               extra={"serialize_rows_per_second": serialize.rows_per_second, "samples": samples},
                               run_record=str(run.path))
        return measure

    comparison = alternate({mode: send(mode) for mode in MODES}, rounds, baseline="sampler off")
    record.comparisons.append(comparison)
    for phase, figure in (("serialize", "serialize_rows_per_second"), ("send", "rows_per_second")):
        on, off = (comparison.summary[mode][figure].median for mode in MODES)
        print(f"median {phase}: sampler on {on / 1e6:.3f}, off {off / 1e6:.3f} M rows/s: on/off {on / off:.3f}")
    write_record(record, json_path)


if __name__ == "__main__":
    typer.run(main)
