"""Files as they come, measured (a script, not a test): the same rows sent into the no-op sink from Parquet, CSV and
gzip-compressed CSV (alternated rounds, paired intervals: the client's CPU per row, whole runs and send phases),
and the peak RSS of ``bench --data`` on a CSV and on one 10 times larger, and on one Parquet file and on a folder of
20 of them.

    .venv/bin/python benchmarks/file_formats.py cpu --rows 1000000 --rounds 5 [--workers 1] [--json PATH]
    .venv/bin/python benchmarks/file_formats.py rss --rows 200000 [--json PATH]

The rows are TSBS's cpu-only data set (its generator, seed 1; ``benchmarks/own_data.py``'s Parquet file): ten
DOUBLE fields, ten tags, a timestamp. The CSV holds them as a user's CSV would: the timestamp as ISO 8601 text with
``Z`` (parsed by the reader), the tags as text; every run names the ten tags as symbols (``--symbols``), so that
each format fills the same table. ``cpu`` runs each format in this process through the notebook API
(``harness.measure``), each round every format back to back, the order rotating; its figures are the client's CPU
seconds per million rows of the whole call (``getrusage`` of this process: the reader's scan of a CSV before
sending, its schema and first rows included) and of the send phase alone, and the send phase's rows/s. Beside
them, in the same rounds, the floor: pyarrow's reader alone reading every column of the Parquet file and of the CSV
(nothing parsed further, nothing sent). ``rss`` runs
each ``bench --data`` as a process of its own, smaller one first, and reads its peak RSS (``ru_maxrss``). Into a
private socat sink the script starts: the client's own cost, no server sharing the cores.
"""

from __future__ import annotations

import contextlib
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import typer

from benchmarks.alternate import alternate, write_record
from benchmarks.own_data import write_cpu_only
from harness import api
from harness.own_data.readers.text import READ_BLOCK_BYTES
from harness.records.benchmark_record import BenchmarkRecord, Comparison, Measurement, Round
from harness.records.intervals import summarize
from harness.servers.sink import free_port, sink_at

app = typer.Typer(add_completion=False)
TAGS = ("hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version",
        "service_environment")
FOLDER_FILES = 20


def write_csv(parquet: Path, path: Path, compression: str | None = None) -> Path:
    """The Parquet file's rows as CSV (timestamps as ISO 8601 text with Z), a row group at a time."""
    if path.exists():
        return path
    source = pq.ParquetFile(parquet)
    sink = pa.CompressedOutputStream(str(path), compression) if compression else pa.OSFile(str(path), "wb")
    with sink as stream:
        writer = None
        for batch in source.iter_batches(batch_size=100_000):
            table = pa.Table.from_batches([batch])
            # Whole seconds, as TSBS's times are (Arrow's %S of a nanosecond timestamp prints nine zero digits).
            columns = [pc.strftime(column.cast(pa.timestamp("s")), "%Y-%m-%dT%H:%M:%SZ")
                       if pa.types.is_timestamp(column.type)
                       else column.cast(pa.string()) if pa.types.is_dictionary(column.type) else column
                       for column in table.columns]
            table = pa.table(columns, names=table.column_names)
            writer = writer or pa_csv.CSVWriter(stream, table.schema)
            writer.write_table(table)
        writer.close()
    return path


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@app.command()
def cpu(rows: int = typer.Option(1_000_000, min=1), rounds: int = typer.Option(5, min=1),
        workers: int = typer.Option(1, min=1), chunk: int = typer.Option(10_000, min=1),
        folder: Path = typer.Option(Path("results/own-data")),
        qwp: bool = typer.Option(False, "--qwp", help="Over QWP into the QWP server at --host:--http-port, each file "
                                                      "read straight into Arrow frames (no pandas step), instead of "
                                                      "ILP/TCP into a private sink."),
        host: str = "127.0.0.1", http_port: int = 9000,
        json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    """Parquet vs CSV vs CSV.gz, the same rows into the sink (or over QWP into a server): client CPU per row, whole
    run and send phase."""
    folder.mkdir(parents=True, exist_ok=True)
    parquet = write_cpu_only(folder / f"cpu-only-{rows}.parquet", rows)
    files = {"parquet": parquet, "csv": write_csv(parquet, folder / f"cpu-only-{rows}.csv"),
             "csv.gz": write_csv(parquet, folder / f"cpu-only-{rows}.csv.gz", "gzip")}
    record = BenchmarkRecord("file-formats-cpu" + ("-qwp" if qwp else ""), parameters=dict(
        rows=rows, rounds=rounds, workers=workers, chunk=chunk, target="questdb over QWP, arrow frames" if qwp else "sink",
        files={name: {"path": str(path), "bytes": path.stat().st_size} for name, path in files.items()}))
    system = record.system
    where = f"over QWP into {host}:{http_port} as Arrow frames" if qwp else "into a socat sink"
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; {rows} cpu-only rows, {workers} worker(s), chunks "
          f"of {chunk}, {where}; " + ", ".join(f"{name} {path.stat().st_size / 2**20:.0f} MiB"
                                             for name, path in files.items()))
    with (contextlib.nullcontext() if qwp else sink_at("127.0.0.1", free_port(), print)) as sink:
        common = dict(send=True, workers=workers, worker_chunk_row_count=chunk, reporting_period=0, sample_interval=0,
                      symbols=",".join(TAGS), results_dir=str(folder / "runs"), quiet=True)
        common.update(dict(transport="qwp", frame="arrow", host=host, http_port=http_port, table="formats_qwp",
                           replace_table=True) if qwp else dict(target="sink", host=sink.host, ilp_port=sink.port))

        def variant(name: str, path: Path):
            def measure(round_number: int) -> Measurement:
                before = _cpu_seconds()
                run = api.measure(str(path), **common)
                whole = _cpu_seconds() - before
                phase = run.phases["send"]
                print(f"round {round_number} {name:<8} send {phase.rows / phase.seconds / 1e6:6.3f} M rows/s; client "
                      f"CPU per M rows: whole run {whole / phase.rows * 1e6:5.2f}s, send phase "
                      f"{phase.client_cpu_seconds / phase.rows * 1e6:5.2f}s")
                return Measurement(seconds=phase.seconds, rows=phase.rows, client_cpu_seconds=whole,
                                   run_record=str(run.path),
                                   extra={"send_client_cpu_seconds": phase.client_cpu_seconds})
            return measure

        def reader_alone(name: str, path: Path):
            """The floor: pyarrow's reader of the file alone, every column, nothing sent."""
            def measure(round_number: int) -> Measurement:
                before, started = _cpu_seconds(), time.perf_counter()
                rows_read = _read_whole(path)
                cpu_seconds, seconds = _cpu_seconds() - before, time.perf_counter() - started
                print(f"round {round_number} {name:<8} read alone: client CPU per M rows "
                      f"{cpu_seconds / rows_read * 1e6:5.2f}s")
                return Measurement(seconds=seconds, rows=rows_read, client_cpu_seconds=cpu_seconds)
            return measure

        variants = {name: variant(name, path) for name, path in files.items()}
        variants.update({f"{name} read alone": reader_alone(name, path) for name, path in files.items()
                         if name != "csv.gz"})
        comparison = alternate(variants, rounds, warm_up=True, baseline="parquet")
    record.comparisons.append(comparison)
    for name in ("csv", "csv.gz", "csv read alone", "parquet read alone"):
        figures = comparison.summary[name]
        cpu_text = figures["client_cpu_seconds"].paired_text(higher_is_better=False)
        print(f"{name} vs parquet: client CPU (whole run) {cpu_text}; send rows/s "
              f"{figures['rows_per_second'].paired_text()}")
    write_record(record, json_path)


def _read_whole(path: Path) -> int:
    """Read every column of the file with pyarrow's reader, a batch at a time, as the harness's reader does (one
    thread, its CSV blocks); its rows."""
    if path.suffix == ".parquet":
        return sum(batch.num_rows for batch in pq.ParquetFile(path, pre_buffer=False).iter_batches(100_000))
    reader = pa_csv.open_csv(path, read_options=pa_csv.ReadOptions(use_threads=False, block_size=READ_BLOCK_BYTES))
    return sum(batch.num_rows for batch in reader)


def _child_peak(command: list[str]) -> tuple[int, float]:
    """Peak RSS (bytes) and wall seconds of ``command`` run as a child process: its high-water mark (``VmHWM``),
    read every 10 ms until it exits. Not ``ru_maxrss``: Linux keeps across ``exec`` the high-water mark of the
    memory the child started with, this (large) process's."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    status, peak = Path(f"/proc/{child.pid}/status"), 0
    while child.poll() is None:
        try:
            line = next(line for line in status.read_text().splitlines() if line.startswith("VmHWM:"))
            peak = max(peak, int(line.split()[1]) * 1024)
        except (OSError, StopIteration):
            pass
        time.sleep(0.01)
    if child.returncode:
        raise RuntimeError(f"{' '.join(command)} exited {child.returncode}")
    return peak, time.perf_counter() - started


@app.command()
def rss(rows: int = typer.Option(200_000, min=1), factor: int = typer.Option(10, min=2),
        folder: Path = typer.Option(Path("results/own-data")),
        json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    """Peak RSS of bench --data into the sink: a CSV and one ``factor`` times larger; a Parquet file and a folder of
    20 such files (each run as a process of its own)."""
    folder.mkdir(parents=True, exist_ok=True)
    record = BenchmarkRecord("file-formats-rss", parameters=dict(rows=rows, factor=factor, folder_files=FOLDER_FILES,
                                                                 target="sink"))
    small = write_cpu_only(folder / f"cpu-only-{rows}.parquet", rows)
    large = write_cpu_only(folder / f"cpu-only-{rows * factor}.parquet", rows * factor)
    many = folder / f"cpu-only-{rows}x{FOLDER_FILES}"
    if not many.exists():
        many.mkdir()
        for index in range(FOLDER_FILES):  # the same rows in each: a folder 20 times the file
            shutil.copyfile(small, many / f"part-{index:02d}.parquet")
    pairs = {"csv": (write_csv(small, folder / f"cpu-only-{rows}.csv"),
                     write_csv(large, folder / f"cpu-only-{rows * factor}.csv"), factor, rows * factor),
             "parquet folder": (small, many, FOLDER_FILES, rows * FOLDER_FILES)}
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; bench --data into a socat sink, each a process of "
          f"its own")
    with sink_at("127.0.0.1", free_port(), print) as sink:
        for name, (one, bigger, times, bigger_rows) in pairs.items():
            measured = {}
            for label, path, count in (("1x", one, rows), (f"{times}x", bigger, bigger_rows)):
                command = [sys.executable, "-m", "harness", "bench", "--send", "--data", str(path), "--target",
                           "sink", "--host", sink.host, "--ilp-port", str(sink.port), "--symbols", ",".join(TAGS),
                           "--reporting-period", "0", "--results",
                           str(folder / "runs" / f"rss-{Path(path).name}.json")]
                peak, seconds = _child_peak(command)
                size = sum(part.stat().st_size for part in ([path] if path.is_file() else path.iterdir()))
                print(f"{name} {label}: {count} rows, {size / 2**20:.0f} MiB: peak RSS {peak / 2**20:.0f} MiB in "
                      f"{seconds:.1f}s")
                measured[label] = Measurement(seconds=seconds, rows=count, peak_rss_bytes=peak,
                                              extra={"file_bytes": size})
                record.parameters.setdefault("files", {})[f"{name} {label}"] = str(path)
            first, second = (measurement.peak_rss_bytes for measurement in measured.values())
            print(f"{name}: peak RSS {times}x / 1x: {second / first:.2f}")
            comparison = Comparison(f"rss {name}", "1x", list(measured), [Round(1, list(measured), measured)])
            comparison.summary = summarize(comparison)
            record.comparisons.append(comparison)
    write_record(record, json_path)


if __name__ == "__main__":
    app()
