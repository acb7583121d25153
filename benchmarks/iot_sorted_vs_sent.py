"""What TSBS's late iot rows cost QuestDB: the same rows sent as TSBS orders them and sorted by time
(``bench --sort``), alternated, medians and ratios (a script, not a test).

    .venv/bin/python benchmarks/iot_sorted_vs_sent.py --rounds 3 [--scale 10 --timestamp-end ...] [--json PATH]

Each round sends both orders into fresh tables (the order of the two alternates). Figures per variant: the
send rate (end to end: client and server share the cores), the time from the last flush until every row is
visible, the server's out-of-order commits over the run, the rows its WAL apply wrote to disk per row
applied, its largest apply lag in transactions, and the share of rows that arrived behind a newer one.
TSBS delays points, not time, so the late share falls with the scale (about 8% at scale 10, about 0.01% at
100, none at 4000): the default is a small fleet over a long range. One worker by default: with several,
chunks race each other and sorted rows arrive out of order too. Every run's record goes to --results-dir;
the benchmark record to --json (default results/<UTC time>-iot-sorted-vs-sent.json).
"""

from __future__ import annotations

import io
from pathlib import Path

import typer

from benchmarks.alternate import alternate, write_record
from harness.commands.bench import run_bench
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.run.bench_options import BenchOptions

ORDERS = {"as sent": False, "sorted": True}


def main(rounds: int = typer.Option(3, min=1), scale: int = typer.Option(10, min=1), seed: int = 1,
         timestamp_end: str = "2016-01-13T00:00:00Z", workers: int = typer.Option(1, min=1),
         host: str = "localhost", http_port: int = typer.Option(9000, min=1, max=65535),
         ilp_port: int = typer.Option(9009, min=1, max=65535),
         server_metrics_port: int = typer.Option(9003, min=1, max=65535),
         results_dir: Path = typer.Option(Path("results/iot-sorted-vs-sent")),
         json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    record = BenchmarkRecord("iot-sorted-vs-sent", parameters=dict(
        rounds=rounds, scale=scale, seed=seed, timestamp_end=timestamp_end, workers=workers, host=host,
        http_port=http_port, ilp_port=ilp_port, results_dir=str(results_dir)))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; iot seed {seed}, scale {scale}, to {timestamp_end}, "
          f"{workers} worker(s); client and server share the cores")

    def send(order: str):
        def measure(round_number: int) -> Measurement:
            options = BenchOptions(send=True, use_case="iot", scale=scale, seed=seed, timestamp_end=timestamp_end,
                                   time_ordered=ORDERS[order], workers=workers, host=host, http_port=http_port,
                                   ilp_port=ilp_port, server_metrics_port=server_metrics_port, reporting_period=0,
                                   results_dir=str(results_dir))
            run = run_bench(options, out=io.StringIO())
            phase, series = run.phases["send"], run.timeseries
            figures = {
                "time_to_visible_seconds": run.validation.time_to_visible_seconds,
                "late_rows": sum(table.late_rows for table in run.arrival.values()),
                "o3_commits": series.server_increase("o3_commits"),
                "disk_rows_per_applied_row": series.disk_rows_per_applied_row(),
                "most_transactions_behind": series.most_transactions_behind(),
            }
            figures = {name: value for name, value in figures.items() if value is not None}
            print(f"round {round_number} {order:<8} {phase.rows / phase.seconds / 1e6:6.3f} M rows/s  "
                  + "  ".join(f"{name} {value:g}" for name, value in figures.items()) + f"  {run.path}")
            return Measurement(seconds=phase.seconds, rows=phase.rows, client_cpu_seconds=phase.client_cpu_seconds,
                               extra=figures, run_record=str(run.path))
        return measure

    comparison = alternate({order: send(order) for order in ORDERS}, rounds, baseline="as sent")
    record.comparisons.append(comparison)
    for name in ("rows_per_second", "time_to_visible_seconds", "o3_commits", "disk_rows_per_applied_row"):
        medians = {order: comparison.summary[order].get(name) for order in ORDERS}
        if all(medians.values()):
            print(f"median {name}: " + ", ".join(f"{order} {figure.median:.4g}" for order, figure in medians.items())
                  + f"; sorted / as sent {medians['sorted'].ratio:.2f}")
    write_record(record, json_path)


if __name__ == "__main__":
    typer.run(main)
