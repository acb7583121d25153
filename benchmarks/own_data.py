"""The user's own data, measured (a script, not a test): a Parquet file streamed into the socat sink against
the same rows sent from a DataFrame already in memory (same settings, alternated: rows/s and client CPU per
million rows, paired intervals), and the peak RSS of ``bench --data`` on a file and on one 20 times larger.

    .venv/bin/python benchmarks/own_data.py rate --rows 2000000 --rounds 5 [--workers 2] [--json PATH]
    .venv/bin/python benchmarks/own_data.py rss --rows 500000 --factor 20 [--json PATH]
    .venv/bin/python benchmarks/own_data.py tune --rows 2000000 [--budget 600]

The data is TSBS's cpu-only data set (its generator, seed 1) written as Parquet in row groups of 100,000 rows:
ten DOUBLE fields, ten categorical tags (symbols), a ``datetime64[ns]`` timestamp. ``rate`` runs both variants
in this process through the notebook API (``harness.measure``), each round both back to back, the order
rotating; its figure is the send phase (the Parquet variant reads and converts its pieces inside it, on the
run's chunk thread). ``rss`` runs each ``bench --data`` as a process of its own and reads its peak RSS
(``ru_maxrss`` of the child). ``tune`` runs ``harness tune`` with its default grid on two files of ``--rows``
rows, each a process of its own, timed whole: the cpu-only file as is, and a file of trades whose four string
columns are read as Python objects (``--object-strings``, pandas 2's reading) with 2 workers. Into the sink only:
the client's own cost, no server sharing the cores.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import typer

from benchmarks.alternate import alternate, write_record
from harness import api
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.cpu_only.generator import USE_CASE
from harness.tsbs.use_cases import make_spec

app = typer.Typer(add_completion=False)
ROW_GROUP_ROWS = 100_000


def write_cpu_only(path: Path, rows: int) -> Path:
    """cpu-only's first ``rows`` rows (scale 4000, seed 1) as Parquet, written a chunk at a time."""
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return path
    spec = make_spec(use_case="cpu-only", seed=1, scale=4000, row_limit=rows, timestamp_end="2016-02-01T00:00:00Z")
    writer = None
    try:
        for chunk in USE_CASE.chunks(spec, ROW_GROUP_ROWS, FieldType.double, SymbolDtype.category):
            table = pa.Table.from_pandas(chunk["cpu"], preserve_index=False)
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
    finally:
        if writer is not None:
            writer.close()
    return path


@app.command()
def rate(rows: int = typer.Option(2_000_000, min=1), rounds: int = typer.Option(5, min=1),
         workers: int = typer.Option(1, min=1), chunk: int = typer.Option(10_000, min=1),
         sink_host: str = "localhost", sink_port: int = typer.Option(9010, min=1, max=65535),
         folder: Path = typer.Option(Path("results/own-data")),
         json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    """Parquet streamed vs the same rows from a DataFrame in memory, into the sink."""
    folder.mkdir(parents=True, exist_ok=True)
    path = write_cpu_only(folder / f"cpu-only-{rows}.parquet", rows)
    frame = pq.read_table(path).to_pandas()
    record = BenchmarkRecord("own-data-rate", parameters=dict(rows=rows, rounds=rounds, workers=workers, chunk=chunk,
                                                              file=str(path), target="sink"))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {rows} cpu-only rows, {workers} worker(s), chunks "
          f"of {chunk}, into the socat sink")
    common = dict(send=True, target="sink", host=sink_host, ilp_port=sink_port, workers=workers,
                  worker_chunk_row_count=chunk, reporting_period=0, sample_interval=0,
                  results_dir=str(folder / "runs"), quiet=True)

    def variant(data):
        def measure(round_number: int) -> Measurement:
            run = api.measure(data, **common)
            phase = run.phases["send"]
            print(f"round {round_number} {'parquet' if isinstance(data, Path) else 'in memory':<10} "
                  f"{phase.rows / phase.seconds / 1e6:6.3f} M rows/s, client CPU {phase.client_cpu_seconds:.2f}s")
            return Measurement(seconds=phase.seconds, rows=phase.rows, client_cpu_seconds=phase.client_cpu_seconds,
                               run_record=str(run.path))
        return measure

    comparison = alternate({"in memory": variant(frame), "parquet": variant(path)}, rounds, warm_up=True,
                           baseline="in memory")
    record.comparisons.append(comparison)
    speed = comparison.summary["parquet"]["rows_per_second"]
    cpu = comparison.summary["parquet"]["client_cpu_seconds"]
    print(f"parquet vs in memory: rows/s {speed.paired_text()}; client CPU {cpu.paired_text(higher_is_better=False)}")
    write_record(record, json_path)


def _peak_rss(command: list[str]) -> tuple[int, float]:
    """Peak RSS (bytes) and wall seconds of ``command`` run as a child process (one child at a time)."""
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if after <= before:  # ru_maxrss of the children is the largest so far: a smaller child cannot show
        raise RuntimeError("run the smaller file first: RUSAGE_CHILDREN keeps the largest child's peak")
    return after * 1024, time.perf_counter() - started


@app.command()
def rss(rows: int = typer.Option(500_000, min=1), factor: int = typer.Option(20, min=2),
        sink_host: str = "localhost", sink_port: int = typer.Option(9010, min=1, max=65535),
        folder: Path = typer.Option(Path("results/own-data")),
        json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    """Peak RSS of bench --data into the sink: a file, and one ``factor`` times larger (each run once, the
    small one first: each child's peak is its own only while it is the largest so far)."""
    folder.mkdir(parents=True, exist_ok=True)
    record = BenchmarkRecord("own-data-rss", parameters=dict(rows=rows, factor=factor, target="sink"))
    measurements = {}
    for name, count in (("1x", rows), (f"{factor}x", rows * factor)):
        path = write_cpu_only(folder / f"cpu-only-{count}.parquet", count)
        command = [sys.executable, "-m", "harness", "bench", "--send", "--data", str(path), "--target", "sink",
                   "--host", sink_host, "--ilp-port", str(sink_port), "--reporting-period", "0",
                   "--results", str(folder / "runs" / f"rss-{name}.json")]
        peak, seconds = _peak_rss(command)
        size = path.stat().st_size
        print(f"{name}: {count} rows, {size / 2**20:.0f} MiB of Parquet: peak RSS {peak / 2**20:.0f} MiB "
              f"in {seconds:.1f}s")
        measurements[name] = Measurement(seconds=seconds, rows=count, peak_rss_bytes=peak,
                                         extra={"file_bytes": size})
    from harness.records.benchmark_record import Comparison, Round
    from harness.records.intervals import summarize

    comparison = Comparison("rss", "1x", list(measurements), [Round(1, list(measurements), measurements)])
    comparison.summary = summarize(comparison)
    record.comparisons.append(comparison)
    small, large = (measurement.peak_rss_bytes for measurement in measurements.values())
    print(f"peak RSS {factor}x / 1x: {large / small:.2f}")
    write_record(record, json_path)


def write_trades(path: Path, rows: int) -> Path:
    """Trades: a microsecond timestamp, four string columns (50 symbols, 2 sides, 10 venues, 1,000 traders), a
    price and an amount; written a row group at a time."""
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return path
    import numpy as np

    rng = np.random.default_rng(11)
    symbols = np.array([f"SYM{index:03d}" for index in range(50)])
    venues = np.array([f"venue-{index}" for index in range(10)])
    traders = np.array([f"trader-{index:04d}" for index in range(1000)])
    start = np.datetime64("2024-06-03T00:00:00", "us")
    with pq.ParquetWriter(path, pa.schema([("ts", pa.timestamp("us")), ("symbol", pa.string()),
                                          ("side", pa.string()), ("venue", pa.string()), ("trader", pa.string()),
                                          ("price", pa.float64()), ("amount", pa.int64())])) as writer:
        for first in range(0, rows, ROW_GROUP_ROWS):
            count = min(ROW_GROUP_ROWS, rows - first)
            writer.write_table(pa.table({
                "ts": start + np.arange(first, first + count) * np.timedelta64(10_000, "us"),
                "symbol": symbols[rng.integers(0, 50, count)], "side": np.where(rng.random(count) > 0.5, "buy", "sell"),
                "venue": venues[rng.integers(0, 10, count)], "trader": traders[rng.integers(0, 1000, count)],
                "price": rng.random(count) * 100, "amount": rng.integers(1, 10_000, count)}))
    return path


@app.command()
def tune(rows: int = typer.Option(2_000_000, min=1), budget: float = typer.Option(600.0, min=1),
         sink_port: int = typer.Option(9010, min=1, max=65535), folder: Path = typer.Option(Path("results/own-data")),
         out: Path = typer.Option(Path("results/own-data"), help="Where the sweeps' records and output go.")) -> None:
    """``harness tune`` with its default grid, on cpu-only as is and on trades read as Python objects."""
    folder.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    sweeps = {"tune-cpu-only": (write_cpu_only(folder / f"cpu-only-{rows}.parquet", rows), []),
              "tune-object-strings-2w": (write_trades(folder / f"trades-{rows}.parquet", rows),
                                         ["--object-strings", "--workers", "2"])}
    for name, (path, flags) in sweeps.items():
        command = [sys.executable, "-m", "harness", "tune", "--data", str(path), *flags, "--budget", str(budget),
                   "--sink-port", str(sink_port), "--results", str(out / f"{name}.json"), "--report"]
        started = time.perf_counter()
        with open(out / f"{name}.txt", "w") as output:
            subprocess.run(command, check=True, stdout=output, stderr=subprocess.STDOUT)
        print(f"{name}: {' '.join(command[3:])}: {time.perf_counter() - started:.0f}s of a {budget:g}s budget")


if __name__ == "__main__":
    app()
