"""Which path from QuestDB into pandas is fastest: one cpu-only data set loaded once (``bench --send``), then
read whole by every ``read`` protocol the pinned QuestDB serves (or those ``--protocols`` names, ``PROTOCOL[:FRAME]``:
``qwp,qwp:arrow,qwp:polars`` against a QWP server), alternated over rounds, for each worker count; medians, ratios to
asyncpg, the client's CPU seconds per million rows; with one worker also asyncpg's Records alone, without
DataFrames (what the asyncpg seed measured), to split its decoding from the conversion (a script, not a
test).

    .venv/bin/python benchmarks/read_protocols.py --row-count 10000000 --rounds 3 --workers 1,2 \\
        --out-dir results/reference/<date>-read

Each round reads the same table once per protocol (the order rotates every round), each read a fresh
``python -m harness read`` process (its own connections and memory: its peak RSS is its own; its record
under OUT_DIR/runs/). A round's seconds,
rows, client CPU and peak RSS are the read phase's; MiB/s received, CPU seconds per million rows and the
seconds to the first rows are extra figures. Before the rounds, every protocol reads the table once with
``--check`` (untimed): each must equal the data set. Client and server share the machine's cores, so a
protocol the server cannot feed faster shows in the client's CPU per million rows, not in its rate. The
benchmark record goes to OUT_DIR/read-protocols.json and the table to OUT_DIR/summary.txt.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import time
from pathlib import Path

import typer

from benchmarks.alternate import alternate_groups, write_record
from harness.commands.bench import run_bench
from harness.commands.read import DEFAULT_CHUNK_ROWS
from harness.frames.kinds import FrameKind
from harness.read.protocols import ReadProtocol, needed_features
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.records.run_record import RunRecord
from harness.records.store import default_results_path, load_results
from harness.report.tables import benchmark_table
from harness.run.bench_options import BenchOptions

RECORDS_ONLY = "asyncpg Records only"
# What a plain run reads by: every protocol that needs nothing of the server the pinned QuestDB lacks (QWP does).
DEFAULT_PROTOCOLS = ",".join(protocol for protocol in ReadProtocol if not needed_features(protocol))


def read_path(name: str) -> tuple[ReadProtocol, FrameKind]:
    """``PROTOCOL[:FRAME]``: the protocol and the kind of frame it hands over (default: pandas)."""
    protocol, _, frame = name.strip().partition(":")
    return ReadProtocol(protocol), FrameKind(frame or FrameKind.pandas)


async def _records_only(host: str, pg_port: int, chunk_rows: int) -> tuple[float, float, int]:
    """Table cpu read as `read --protocol asyncpg` reads it (a cursor, ``chunk_rows`` a fetch, timestamps as
    integers), the Records dropped: (seconds, client CPU seconds, rows)."""
    import asyncpg

    from harness.questdb.credentials import pg_login
    from harness.questdb.pgwire import asyncpg_tls
    from harness.questdb.tls import pg_tls
    from harness.read.pgwire_asyncpg import _micros, _unused

    cpu_started, started = time.process_time(), time.perf_counter()
    login = pg_login(host, pg_port)
    connection = await asyncpg.connect(host=host, port=pg_port, user=login.user, password=login.password,
                                       database=login.database, statement_cache_size=0, **asyncpg_tls(pg_tls()))
    await connection.set_type_codec("timestamp", schema="pg_catalog", encoder=_unused, decoder=_micros,
                                    format="tuple")
    rows = 0
    try:
        async with connection.transaction():
            cursor = await connection.cursor(f"/* records only {started} */ select * from 'cpu'")
            while batch := await cursor.fetch(chunk_rows):
                rows += len(batch)
    finally:
        await connection.close()
    return time.perf_counter() - started, time.process_time() - cpu_started, rows


def main(rounds: int = typer.Option(3, min=1), row_count: int = typer.Option(10_000_000, min=1),
         scale: int = typer.Option(4000, min=1), seed: int = 1, workers: str = typer.Option("1,2"),
         chunk_rows: int = typer.Option(DEFAULT_CHUNK_ROWS, min=1), protocols: str = DEFAULT_PROTOCOLS,
         load: bool = typer.Option(True, help="Load the data set first (drops table cpu)."),
         host: str = "localhost", http_port: int = typer.Option(9000, min=1, max=65535),
         ilp_port: int = typer.Option(9009, min=1, max=65535), pg_port: int = typer.Option(8812, min=1, max=65535),
         server_metrics_port: int = typer.Option(9003, min=1, max=65535),
         out_dir: Path = typer.Option(Path("results/read-protocols"))) -> None:
    worker_counts = [int(count) for count in workers.split(",") if count.strip()]
    chosen = [name.strip() for name in protocols.split(",") if name.strip()]
    for name in chosen:
        read_path(name)  # an unknown protocol or frame ends here, before the load
    record = BenchmarkRecord("read-protocols", parameters=dict(
        rounds=rounds, row_count=row_count, scale=scale, seed=seed, workers=worker_counts, chunk_rows=chunk_rows,
        protocols=chosen, host=host, out_dir=str(out_dir)))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; cpu-only, {row_count} rows, scale {scale}, seed "
          f"{seed}; chunks of {chunk_rows} rows; client and server share the cores")
    if load:
        loaded = run_bench(BenchOptions(send=True, ilp_port=ilp_port, reporting_period=0, workers=2, host=host,
                                        http_port=http_port, server_metrics_port=server_metrics_port,
                                        results_dir=str(out_dir / "runs"), seed=seed, scale=scale,
                                        row_count=row_count), out=io.StringIO())
        send = loaded.phases["send"]
        print(f"loaded: {loaded.validation.visible_rows} rows in table cpu ({send.rows_per_second / 1e6:.3f} M rows/s "
              f"sent)  {loaded.path}")
        record.extra["load_record"] = str(loaded.path)

    def read_run(name: str, count: int, *flags: str) -> tuple[RunRecord | None, str]:
        """One `read` (``name``: ``PROTOCOL[:FRAME]``) in a process of its own: its record, and its error line if it
        failed."""
        protocol, frame = read_path(name)
        results = default_results_path(f"read-{protocol}-{frame}-{count}w", out_dir / "runs")
        run = subprocess.run([sys.executable, "-m", "harness", "read", "--protocol", str(protocol), "--frame",
                              str(frame), "--workers",
                              str(count), "--chunk-rows", str(chunk_rows), "--host", host, "--http-port",
                              str(http_port), "--pg-port", str(pg_port), "--server-metrics-port",
                              str(server_metrics_port), "--reporting-period", "0", "--results", str(results), *flags],
                             capture_output=True, text=True)
        error = run.stderr.strip().splitlines()[-1] if run.returncode else ""
        return (load_results([results])[0] if results.exists() else None), error

    checks = {}
    for protocol in chosen:
        run, error = read_run(protocol, worker_counts[-1], "--check", "--seed", str(seed), "--scale", str(scale),
                              "--row-count", str(row_count))
        checks[protocol] = error or f"all {run.read.checked_rows} rows equal the data set"
        print(f"check {protocol:<13} {checks[protocol]}")
    record.extra["check"] = checks

    def read(protocol: str, count: int):
        def measure(round_number: int) -> Measurement:
            run, error = read_run(protocol, count)
            if error:
                raise SystemExit(f"{protocol} with {count} worker(s): {error}")
            phase, figures = run.phases["read"], run.read
            per_million = phase.client_cpu_seconds / phase.rows * 1e6
            print(f"round {round_number} {count}w {protocol:<13} {phase.rows_per_second / 1e6:6.3f} M rows/s  "
                  f"{f'{phase.mib_per_second:7.1f}' if phase.bytes else '      -'} MiB/s  CPU {per_million:6.3f} s/M rows  first rows "
                  f"{figures.first_rows_seconds:.3f}s  peak RSS {figures.peak_rss_bytes / 2**20:.0f} MiB  {run.path}")
            extra = {"cpu_seconds_per_million_rows": per_million, "first_rows_seconds": figures.first_rows_seconds,
                     "client_cores": phase.client_cpu_cores}
            if phase.bytes:
                extra["mib_per_second"] = phase.mib_per_second
            return Measurement(seconds=phase.seconds, rows=phase.rows, client_cpu_seconds=phase.client_cpu_seconds,
                               peak_rss_bytes=figures.peak_rss_bytes, extra=extra, run_record=str(run.path))
        return measure

    def records_only(round_number: int) -> Measurement:
        """asyncpg's Records alone, no DataFrame: the decoding the asyncpg seed measured, beside the whole path."""
        seconds, cpu, rows = asyncio.run(_records_only(host, pg_port, chunk_rows))
        print(f"round {round_number} 1w asyncpg Records only {rows / seconds / 1e6:6.3f} M rows/s  CPU "
              f"{cpu / rows * 1e6:6.3f} s/M rows")
        return Measurement(seconds=seconds, rows=rows, client_cpu_seconds=cpu,
                           extra={"cpu_seconds_per_million_rows": cpu / rows * 1e6})

    groups = {f"{count} worker(s)": {protocol: read(protocol, count) for protocol in chosen}
              for count in worker_counts}
    if 1 in worker_counts and ReadProtocol.asyncpg in chosen:  # "asyncpg" (pandas)
        groups["1 worker(s)"][RECORDS_ONLY] = records_only
    record.comparisons.extend(alternate_groups(groups, rounds, parameters={
        name: {"workers": count} for name, count in zip(groups, worker_counts)}))
    path = write_record(record, out_dir / "read-protocols.json")
    table = benchmark_table([record])
    print(table)
    (out_dir / "summary.txt").write_text(table + "\n")
    print(f"Summary: {out_dir / 'summary.txt'} (record {path})")


if __name__ == "__main__":
    typer.run(main)
