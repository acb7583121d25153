"""Loader parity with TSBS's Go tools (a script, not a test): the Go loader, `replay --workers W` of the same
file and `bench --send --fields long --workers W` of the same data, alternated, into QuestDB and into the
socat sink, unpinned and pinned (``--loaders``, ``--targets``, ``--pinning`` choose among them).

    .venv/bin/python benchmarks/loader_parity.py --tsbs-bin DIR [--rounds 5] [--workers 1 --workers 2]
    make bench-parity TSBS_BIN=DIR
    make bench-replay-parity TSBS_BIN=DIR   # replay vs Go on TSBS's 4.32M-row file: whole command, peak RSS

DIR holds ``tsbs_generate_data`` and ``tsbs_load_questdb``, built from a fetched copy of QuestDB's TSBS fork
(``go build ./cmd/tsbs_generate_data ./cmd/tsbs_load_questdb``), never part of this repository.

The script starts its own QuestDB (release jar, conf/server.conf) and socat sink on its own ports, writes one
TSBS file with the Go generator, and for each target, pinning, W and round runs the three loaders in an
order that rotates, each into a fresh table. A load's time is its own send time (the Go loader's "loaded N
rows in Xsec", our record's send phase) plus the time until every row is visible (read back with count());
into the sink, the send time alone. Pinned: QuestDB (or the sink) on the first half of the CPUs, every
client on the other half (taskset), the split the Compose stack uses; unpinned: the kernel's choice, where
client CPU is taken from the server. Client CPU-seconds: the Go loader's from its rusage, ours from the record's
send phase (Python's start-up is not loading).
Every load is also timed as a whole command (``command_seconds``: from starting the process until it exits,
Python's start-up included; for the Go loader into QuestDB, until every row is visible, which ``replay``
waits for before it exits, and with the CREATE TABLE the script makes for it, which ``replay`` makes itself)
and its peak RSS taken from the kernel (``wait4``).
Prints medians, ranges, ratios to the Go loader and client CPU-seconds per million rows, then whole-command
medians, Go's over ours (above 1: ours faster) and peak RSS; writes the benchmark record (every load's
figures, medians and ratios) to --json (alias --results).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import typer

from benchmarks.alternate import alternate, write_record
from harness.questdb.http import QuestDBSql
from harness.questdb.schema import create_table
from harness.records.benchmark_record import BenchmarkRecord, Comparison, Measurement
from harness.records.intervals import standings
from harness.servers.questdb import NativeQuestDB
from harness.servers.sink import SocatSink
from harness.tsbs.cpu_only import generator as cpu_only

LOADERS = ("go", "replay", "bench")
GO_LOADED = re.compile(r"loaded (\d+) rows in ([0-9.]+)sec")


def pin(pid: int, cpus: str) -> None:
    """Every thread of a running process onto ``cpus``."""
    subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], check=True, capture_output=True)


@dataclass
class Child:
    """A loader's run: its stdout, wall time, CPU-seconds and peak RSS (the kernel's, for that process)."""

    stdout: str
    seconds: float
    cpu_seconds: float
    peak_rss_bytes: int


def run_child(command: list[str], client_cpus: str | None) -> Child:
    """Run a loader to its end (taskset execs it: the process measured is the loader itself)."""
    if client_cpus:
        command = ["taskset", "-c", client_cpus, *command]
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        if process.returncode != 0:
            sys.exit(f"error: {' '.join(command)} failed ({process.returncode}): "
                     f"{stderr.read().decode(errors='replace').strip()[-500:]}")
        return Child(stdout.read().decode(errors="replace"), seconds, usage.ru_utime + usage.ru_stime,
                     usage.ru_maxrss * 1024)


def count_lines(path: Path) -> int:
    """Lines of a file, read in pieces."""
    lines = 0
    with open(path, "rb") as source:
        while piece := source.read(16 << 20):
            lines += piece.count(b"\n")
    return lines


def wait_visible(sql: QuestDBSql, rows: int, timeout: float = 300) -> float:
    """Seconds until ``rows`` rows are visible in cpu."""
    started = time.perf_counter()
    while sql.count(cpu_only.TABLE_NAME) < rows:
        if time.perf_counter() - started > timeout:
            sys.exit(f"error: {rows} rows did not become visible in {timeout:g}s")
        time.sleep(0.01)
    return time.perf_counter() - started


def main(
    tsbs_bin: Path = typer.Option(..., help="Folder with tsbs_generate_data and tsbs_load_questdb."),
    rounds: int = typer.Option(6, min=1, help="Counted rounds: 6 is the fewest whose paired interval covers 95 % "
                                              "(docs/methodology.md)."),
    workers: list[int] = typer.Option([1, 2], help="Worker counts (repeat the option)."),
    loaders: list[str] = typer.Option(list(LOADERS), help=f"Loaders to compare (repeat): {', '.join(LOADERS)}; "
                                                          "go is the baseline and always runs."),
    targets: list[str] = typer.Option(["questdb", "sink"], help="Targets (repeat): questdb, sink."),
    pinning: list[str] = typer.Option(["unpinned", "pinned"], help="Pinnings (repeat): unpinned, pinned."),
    warm_up: bool = typer.Option(False, help="One uncounted round first."),
    data_file: Path | None = typer.Option(None, help="The TSBS file to load; made there with tsbs_generate_data "
                                                     "if missing (default: a temporary one, removed at the end)."),
    scale: int = typer.Option(4000, min=1),
    seed: int = 1,
    timestamp_end: str = typer.Option("2016-01-01T01:00:00Z", help="Data set end: scale x 360 rows an hour."),
    http_port: int = 29500, ilp_port: int = 29509, pg_port: int = 28912, min_port: int = 29503,
    sink_port: int = 29510,
    results: Path = typer.Option(Path("results/loader-parity.json"), "--json", "--results",
                                 help="The benchmark record's path."),
) -> None:
    loaders = ["go", *[loader for loader in LOADERS if loader in loaders and loader != "go"]]
    if set(targets) - {"questdb", "sink"} or set(pinning) - {"unpinned", "pinned"}:
        sys.exit("error: --targets takes questdb or sink, --pinning unpinned or pinned")
    generate_data, load_questdb = tsbs_bin / "tsbs_generate_data", tsbs_bin / "tsbs_load_questdb"
    for tool in (generate_data, load_questdb):
        if not os.access(tool, os.X_OK):
            sys.exit(f"error: {tool} is not an executable (build it from QuestDB's TSBS fork)")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit("error: pinning needs at least 2 CPUs")
    half = len(cpus) // 2
    server_cpus = ",".join(map(str, cpus[:half]))
    client_cpus = ",".join(map(str, cpus[half:]))
    record = BenchmarkRecord("loader-parity", parameters=dict(
        rounds=rounds, workers=workers, scale=scale, seed=seed, timestamp_end=timestamp_end,
        server_cpus=server_cpus, client_cpus=client_cpus, loaders=loaders, targets=targets, pinning=pinning,
        warm_up=warm_up))
    print(f"{record.system['cpu_model']}, {len(cpus)} CPUs; pinned: server on {server_cpus}, clients on {client_cpus}")

    workdir = Path(tempfile.mkdtemp(prefix="loader-parity-"))
    data_file = data_file or workdir / "cpu-only.ilp"
    if not data_file.exists():
        partial = data_file.with_name(data_file.name + ".partial")  # whole or not at all
        with open(partial, "wb") as out:
            subprocess.run([str(generate_data), "--use-case=cpu-only", f"--seed={seed}", f"--scale={scale}",
                            "--timestamp-start=2016-01-01T00:00:00Z", f"--timestamp-end={timestamp_end}",
                            "--log-interval=10s", "--format=questdb"], stdout=out, check=True)
        partial.rename(data_file)
        print(f"made {data_file} with tsbs_generate_data --seed {seed} --scale {scale} --timestamp-end {timestamp_end}")
    rows = count_lines(data_file)
    record.parameters.update(rows=rows, data_file=str(data_file), data_file_bytes=data_file.stat().st_size)
    print(f"{rows} rows, {data_file.stat().st_size / 2**20:.1f} MiB in {data_file}")

    questdb = NativeQuestDB(root=workdir / "questdb-root", http_port=http_port, ilp_port=ilp_port, pg_port=pg_port,
                            min_port=min_port).start()
    sink = SocatSink(port=sink_port, pid_file=workdir / "sink.pid")
    sql = QuestDBSql("127.0.0.1", http_port)
    try:
        sink.start()  # inside: a sink that cannot start (no socat) still stops the QuestDB started above
        for pinned in [one == "pinned" for one in pinning]:
            for process in (questdb.pid(), sink.pid()):
                pin(process, server_cpus if pinned else ",".join(map(str, cpus)))
            for target in targets:
                port = ilp_port if target == "questdb" else sink_port
                for worker_count in workers:
                    def load(loader: str):
                        def measure(round_number: int) -> Measurement:
                            measurement = one_load(load_questdb, loader, target, worker_count, rows, data_file, port,
                                                   http_port, seed, scale, timestamp_end, sql, workdir,
                                                   client_cpus if pinned else None)
                            print(f"{'pinned' if pinned else 'unpinned':8} {target:7} W={worker_count} "
                                  f"round {round_number} {loader:6} "
                                  f"{measurement.figures()['rows_per_second'] / 1e6:6.3f} M rows/s "
                                  f"({measurement.seconds:.2f}s, client {measurement.client_cpu_seconds:.2f} CPU-s; "
                                  f"whole command {measurement.extra['command_seconds']:.2f}s, "
                                  f"peak RSS {measurement.peak_rss_bytes / 2**20:.0f} MiB)", flush=True)
                            return measurement
                        return measure

                    # The order rotates each round (go replay bench, replay bench go, ...), each load into a
                    # fresh table.
                    record.comparisons.append(alternate(
                        {loader: load(loader) for loader in loaders}, rounds, baseline="go", warm_up=warm_up,
                        name=f"{'pinned' if pinned else 'unpinned'} {target} W={worker_count}",
                        parameters={"pinned": pinned, "target": target, "workers": worker_count}))
    finally:
        questdb.stop()
        sink.stop()
        shutil.rmtree(workdir, ignore_errors=True)  # the script's own folder (a --data-file elsewhere stays)
    print_summary(record.comparisons, rows, loaders)
    print_whole_command(record.comparisons, loaders)
    write_record(record, results)


def one_load(load_questdb: Path, loader: str, target: str, workers: int, rows: int, data_file: Path, port: int,
             http_port: int, seed: int, scale: int, timestamp_end: str, sql: QuestDBSql, workdir: Path,
             client_cpus: str | None) -> Measurement:
    """One load into a fresh table: its own send time plus the time until every row is visible (into the
    sink, the send time alone), and the client's CPU-seconds."""
    record_path = workdir / "record.json"
    common = ["--host", "127.0.0.1", "--ilp-port", str(port), "--http-port", str(http_port),
              "--results", str(record_path)] + (["--target", "sink"] if target == "sink" else [])
    if target == "questdb":
        # The last load's table goes before the clock starts, for every loader alike (ours then only creates it).
        sql.exec(f"DROP TABLE IF EXISTS {cpu_only.TABLE_NAME}")
    if loader == "go":
        created = 0.0
        if target == "questdb":
            # The Go loader leaves the table to ILP; the script makes it as ours makes its own (the same schema),
            # and that DDL's time goes into Go's whole command, as it is in ours.
            started = time.perf_counter()
            create_table(sql, cpu_only.schema("long"))
            created = time.perf_counter() - started
        child = run_child([str(load_questdb), f"--file={data_file}", f"--workers={workers}",
                           "--batch-size=10000", f"--ilp-bind-to=127.0.0.1:{port}",
                           f"--url=http://127.0.0.1:{http_port}/", "--reporting-period=1h"], client_cpus)
        match = GO_LOADED.search(child.stdout)
        if not match:
            sys.exit(f"error: cannot read the Go loader's summary: {child.stdout[-500:]}")
        seconds, cpu, command_seconds = float(match.group(2)), child.cpu_seconds, created + child.seconds
        if target == "questdb":
            visible = wait_visible(sql, rows)
            seconds += visible
            command_seconds += visible
    else:
        if loader == "replay":
            command = [sys.executable, "-m", "harness", "replay", str(data_file), "--workers", str(workers), *common]
        else:
            command = [sys.executable, "-m", "harness", "bench", "--send", "--fields", "long", "--workers",
                       str(workers), "--seed", str(seed), "--scale", str(scale), "--timestamp-end", timestamp_end,
                       "--reporting-period", "0", *common]
        child = run_child(command, client_cpus)
        command_seconds = child.seconds
        record = json.loads(record_path.read_text())
        # The send phase's own CPU: Python's start-up (imports, about a CPU-second) is not loading, and the
        # Go loader's start-up costs next to nothing.
        cpu = record["phases"]["send"]["client_cpu_seconds"]
        seconds = record["phases"]["send"]["seconds"]
        if record["validation"]:
            seconds += record["validation"]["time_to_visible_seconds"]
        if record["phases"]["send"]["rows"] != rows:
            sys.exit(f"error: {loader} sent {record['phases']['send']['rows']} rows, not {rows}")
    return Measurement(seconds=seconds, rows=rows, client_cpu_seconds=cpu, peak_rss_bytes=child.peak_rss_bytes,
                       extra={"command_seconds": command_seconds})


def print_summary(comparisons: list[Comparison], rows: int, loaders: list[str]) -> None:
    print("\nmedians (M rows/s), range, ratio to the Go loader, client CPU-s per million rows:")
    for comparison in sorted(comparisons, key=lambda one: (one.parameters["pinned"], one.parameters["target"],
                                                            one.parameters["workers"])):
        pinned, target, workers = (comparison.parameters[key] for key in ("pinned", "target", "workers"))
        for loader in loaders:
            rate = comparison.summary[loader]["rows_per_second"]
            cpu_per_million = comparison.summary[loader]["client_cpu_seconds"].median / (rows / 1e6)
            print(f"{'pinned' if pinned else 'unpinned':8} {target:7} W={workers} {loader:6} {rate.median / 1e6:6.3f} "
                  f"[{rate.min / 1e6:.3f}-{rate.max / 1e6:.3f}]  {rate.ratio:4.2f}x  "
                  f"{cpu_per_million:.2f} CPU-s/M")


def print_whole_command(comparisons: list[Comparison], loaders: list[str]) -> None:
    """Whole-command medians and ranges, the Go loader's median over each loader's (above 1: faster than Go;
    paired: the median of the rounds' own ratios, its interval, and where the loader stands by it), peak RSS
    medians; then, per loader, how many comparisons it is ahead, level or behind in."""
    print("\nwhole command (s: median [range]), Go's median over ours (paired [interval], standing), "
          "peak RSS (MiB: median [max]):")
    for comparison in sorted(comparisons, key=lambda one: (one.parameters["pinned"], one.parameters["target"],
                                                            one.parameters["workers"])):
        pinned, target, workers = (comparison.parameters[key] for key in ("pinned", "target", "workers"))
        for loader in loaders:
            whole, rss = (comparison.summary[loader][figure] for figure in ("command_seconds", "peak_rss_bytes"))
            versus = ("baseline" if loader == "go" else
                      f"{1 / whole.ratio:4.2f}x ({whole.paired_text(higher_is_better=False, invert=True)})")
            print(f"{'pinned' if pinned else 'unpinned':8} {target:7} W={workers} {loader:6} {whole.median:6.2f} "
                  f"[{whole.min:.2f}-{whole.max:.2f}]  {versus:34} {rss.median / 2**20:6.0f} [{rss.max / 2**20:.0f}]")
    for loader in loaders:
        if loader != "go":
            whole_commands = ((one.summary[loader]["command_seconds"], False) for one in comparisons)
            print(f"{loader}, whole command: {standings(whole_commands)}")


if __name__ == "__main__":
    typer.run(main)
