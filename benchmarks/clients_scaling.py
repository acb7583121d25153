"""How a run scales with its clients: the same data set sent by 1, 2 and 4 client processes (``bench
--clients N``: client i sends TSBS's interleaved group i of N on its own share of the CPUs), into the socat
no-op sink (the clients alone) and into QuestDB, alternated, medians and their ratios to one client (a
script, not a test).

    .venv/bin/python benchmarks/clients_scaling.py --rounds 3 --row-count 10000000 [--clients 1 --clients 2
        --clients 4] [--workers 1] [--json PATH]

Each round runs every client count against the sink, then every one against QuestDB (the order of the
counts rotating from round to round), each QuestDB run into a fresh table. A variant's rows and seconds are
its merged record's send phase: the whole data set over the union of the clients' send windows (earliest
start to latest end), so a client that starts or ends late costs the run its time; its client CPU seconds are
the clients' sum. QuestDB's runs are validated (every row counted back); the sink's have nothing to count.
On a machine with fewer cores than clients plus the server the clients share cores: the figures then show
the machine, not the harness's scaling. Every run's results JSON (and each client's, in the folder beside it)
goes to --results-dir; the benchmark record (every round, medians, ratios) to --json (default
results/<UTC time>-clients-scaling.json).
"""

from __future__ import annotations

import io
from pathlib import Path

import typer

from benchmarks.alternate import alternate_groups, write_record
from harness.commands.bench import run_bench
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.run.bench_options import BenchOptions

TARGETS = ("sink", "questdb")


def variant(clients: int) -> str:
    return f"{clients} client{'s' if clients > 1 else ''}"


def main(rounds: int = typer.Option(3, min=1), clients: list[int] = typer.Option([1, 2, 4], "--clients", min=1),
         row_count: int = typer.Option(10_000_000, min=1), workers: int | None = typer.Option(None, min=1),
         scale: int = typer.Option(4000, min=1), chunk: int = typer.Option(10_000, min=1), seed: int = 1,
         host: str = "localhost", http_port: int = typer.Option(9000, min=1, max=65535),
         ilp_port: int = typer.Option(9009, min=1, max=65535), sink_port: int = typer.Option(9010, min=1, max=65535),
         server_metrics_port: int = typer.Option(9003, min=1, max=65535),
         results_dir: Path = typer.Option(Path("results/clients-scaling")),
         json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    counts = sorted(set(clients))
    record = BenchmarkRecord("clients-scaling", parameters=dict(
        rounds=rounds, clients=counts, row_count=row_count, workers=workers, scale=scale, chunk=chunk, seed=seed,
        host=host, http_port=http_port, ilp_port=ilp_port, sink_port=sink_port,
        server_metrics_port=server_metrics_port, results_dir=str(results_dir)))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {row_count} rows, scale {scale}, chunk {chunk}, "
          f"workers {workers or 1} per client; clients {', '.join(map(str, counts))}; into the sink and QuestDB")

    def send(target: str, count: int):
        def measure(round_number: int) -> Measurement:
            options = BenchOptions(send=True, target=target, host=host, http_port=http_port,
                                   ilp_port=sink_port if target == "sink" else ilp_port,
                                   server_metrics_port=server_metrics_port, clients=count, row_count=row_count,
                                   scale=scale, seed=seed, workers=workers, worker_chunk_row_count=chunk,
                                   reporting_period=0, results_dir=str(results_dir))
            run = run_bench(options, out=io.StringIO())
            phase = run.phases["send"]
            visible = run.validation.visible_rows if run.validation is not None else None
            print(f"round {round_number} {target:<7} {variant(count):<10} {phase.rows / phase.seconds / 1e6:6.3f} "
                  f"M rows/s  ({phase.rows} rows in {phase.seconds:.2f}s"
                  f"{'' if visible is None else f'; {visible} visible'})  {run.path}")
            return Measurement(seconds=phase.seconds, rows=phase.rows, client_cpu_seconds=phase.client_cpu_seconds,
                               extra={} if visible is None else {"visible_rows": visible}, run_record=str(run.path))
        return measure

    comparisons = alternate_groups(
        {target: {variant(count): send(target, count) for count in counts} for target in TARGETS}, rounds,
        parameters={target: {"target": target} for target in TARGETS})
    record.comparisons.extend(comparisons)
    for comparison in comparisons:
        figures = "; ".join(f"{name} {summary['rows_per_second'].median / 1e6:.3f} M rows/s"
                            f" ({summary['rows_per_second'].ratio:.2f}x)"
                            for name, summary in comparison.summary.items())
        print(f"median, {comparison.name} (vs {comparison.baseline}): {figures}")
    write_record(record, json_path)


if __name__ == "__main__":
    typer.run(main)
