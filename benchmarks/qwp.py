"""QWP measured beside ILP (a script, not a test), against a running QWP server (``harness native up --questdb-jar
qwp``, its defaults: HTTP 9000, ILP 9009, PGWire 8812):

    .venv/bin/python benchmarks/qwp.py transports --rows 10000000 --workers 1,2 --rounds 3 [--data FILE] [--json PATH]
    .venv/bin/python benchmarks/qwp.py frames --rows 10000000 --rounds 3 [--data FILE] [--json PATH]
    .venv/bin/python benchmarks/qwp.py pinned --rows 10000000 --rounds 3 [--json PATH]
    .venv/bin/python benchmarks/qwp.py calls --rows 5000000 --rounds 3 [--json PATH]
    .venv/bin/python benchmarks/qwp.py queries --queries FILE --rounds 3 [--json PATH]

``transports``: the same rows sent over QWP, ILP over HTTP and ILP over TCP into the one server, for each worker count
(TSBS cpu-only's first ``--rows`` rows, scale 4000, made before the timed phase as the main job makes them; or the
user's ``--data`` file, read while sending). ``frames``: the same rows handed to QWP's client as NumPy-backed pandas,
Arrow-backed pandas, a pyarrow Table and a Polars frame (TSBS's frames converted before the timed phase; a file read
straight into the kind). ``pinned``: QWP and ILP over HTTP with the server pinned to CPU 1 and the client to CPU 0
(``taskset``), so that the client's own cost shows instead of the server's. Each run is ``bench --send`` as a process
of its own, its record kept under ``--folder``; its figures: rows/s until visible (the send phase and the wait until
``count()`` shows every row), the send phase's client CPU (per million rows: ``client_cpu_seconds / rows``) and the
process's peak RSS (``wait4``). ``calls``: each chunk one committed ``dataframe()`` call, as the harness sends,
against one call for the whole table fed by a ``RecordBatchReader``, in this process. ``queries``: TSBS's queries
run over QWP and over PGWire (``queries run``, one worker, ``--check`` first, untimed), each type's median
latency, alternated.

Variants alternate round by round, the order rotating, after a warm-up round; medians, paired ratios to the first
variant and their intervals (``benchmarks/alternate.py``). On 2 shared cores the server is the bottleneck end to end
and the client's CPU is taken from it: ``pinned`` gives each side a core of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer

from benchmarks.alternate import alternate, alternate_groups, write_record
from harness.records.benchmark_record import BenchmarkRecord, Measurement

app = typer.Typer(add_completion=False)
TRANSPORTS = ("qwp", "http", "tcp")
FRAMES = ("pandas", "pandas-arrow", "arrow", "polars")
CPU_ONLY = ("--scale", "4000", "--seed", "1")
TABLE = "qwp_bench"


class Server:
    """Where the runs send: the QWP server's address."""

    def __init__(self, host: str, http_port: int, ilp_port: int, pg_port: int):
        self.host, self.http_port, self.ilp_port, self.pg_port = host, http_port, ilp_port, pg_port

    def flags(self) -> list[str]:
        return ["--host", self.host, "--http-port", str(self.http_port), "--ilp-port", str(self.ilp_port)]


def run_child(command: list[str], log: Path) -> tuple[int, float]:
    """``command`` as a process of its own, its output in ``log``; its exit code and peak RSS in bytes (``wait4``:
    its own, this script's being small)."""
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024


def bench(folder: Path, name: str, server: Server, flags: list[str], prefix: tuple[str, ...] = ()) -> Measurement:
    """One ``bench --send`` of ``flags``: rows/s until visible, the send phase's client CPU, the peak RSS."""
    folder.mkdir(parents=True, exist_ok=True)
    results, log = folder / f"{name}.json", folder / f"{name}.txt"
    command = [*prefix, sys.executable, "-m", "harness", "bench", "--send", "--reporting-period", "0",
               "--sample-interval", "0", *server.flags(), *flags, "--results", str(results)]
    code, peak = run_child(command, log)
    if code != 0 or not results.exists():
        lines = log.read_text(errors="replace").strip().splitlines()
        raise SystemExit(f"{name}: exit {code}: {lines[-1] if lines else 'nothing printed'}")
    record = json.loads(results.read_text())
    send, validation = record["phases"]["send"], record["validation"]
    if validation["visible_rows"] != validation["expected_rows"]:
        raise SystemExit(f"{name}: {validation['visible_rows']} of {validation['expected_rows']} rows visible")
    visible = validation["time_to_visible_seconds"]
    seconds = send["seconds"] + visible
    print(f"  {name:<28} {send['rows'] / seconds:>12,.0f} rows/s until visible; client CPU "
          f"{send['client_cpu_seconds'] / send['rows'] * 1e6:5.2f} s/M rows; peak RSS {peak / 2**20:6.0f} MiB",
          flush=True)
    return Measurement(seconds=seconds, rows=send["rows"], client_cpu_seconds=send["client_cpu_seconds"],
                       peak_rss_bytes=int(peak), run_record=str(results),
                       extra={"send_seconds": send["seconds"], "visible_seconds": visible,
                              "client_cpu_seconds_per_million_rows": send["client_cpu_seconds"] / send["rows"] * 1e6})


def data_flags(rows: int, data: Path | None) -> list[str]:
    """TSBS cpu-only's first ``rows`` rows, or the user's file into a table of its own, replaced each run."""
    if data is None:
        return ["--row-count", str(rows), *CPU_ONLY]
    return ["--data", str(data), "--table", TABLE, "--replace-table"]


def transport_flags(transport: str) -> list[str]:
    return ["--transport", transport]


def report(record: BenchmarkRecord, figures=("rows_per_second", "client_cpu_seconds_per_million_rows",
                                            "peak_rss_bytes")) -> None:
    """Each comparison's medians and paired intervals, as the record keeps them."""
    for comparison in record.comparisons:
        print(f"{comparison.name or 'comparison'} (baseline {comparison.baseline}):")
        for variant in comparison.variants:
            summary = comparison.summary[variant]
            cells = []
            for figure in figures:
                if figure not in summary:
                    continue
                value = summary[figure]
                higher = figure == "rows_per_second"
                against = "" if variant == comparison.baseline else \
                    f" ({value.paired_text(higher_is_better=higher)})"
                shown = f"{value.median / 2**20:.0f} MiB" if figure == "peak_rss_bytes" else f"{value.median:,.2f}"
                cells.append(f"{figure} {shown}{against}")
            print(f"  {variant:<16} " + "; ".join(cells))


HOST = typer.Option("127.0.0.1")
HTTP = typer.Option(9000)
ILP = typer.Option(9009)
PG = typer.Option(8812)


@app.command()
def transports(rows: int = typer.Option(10_000_000, min=1), workers: str = "1,2", rounds: int = typer.Option(3, min=1),
               data: Path | None = None, folder: Path = typer.Option(Path("results/qwp/transports")),
               host: str = HOST, http_port: int = HTTP, ilp_port: int = ILP, pg_port: int = PG,
               json_path: Path | None = typer.Option(None, "--json")) -> None:
    """QWP vs ILP/HTTP vs ILP/TCP, the same rows into one server, at each worker count."""
    server = Server(host, http_port, ilp_port, pg_port)
    counts = [int(count) for count in workers.split(",")]
    record = BenchmarkRecord("qwp-transports", parameters=dict(rows=rows, workers=counts, rounds=rounds,
                                                               data=str(data) if data else None, source=(
                                                                   "TSBS cpu-only, scale 4000, seed 1" if data is None
                                                                   else str(data))))
    groups = {}
    for count in counts:
        def variant(transport: str, count: int = count):
            def measure(round_number: int) -> Measurement:
                return bench(folder, f"{transport}-{count}w-{round_number}", server,
                             [*transport_flags(transport), "--workers", str(count), *data_flags(rows, data)])
            return measure
        groups[f"{count} workers"] = {transport: variant(transport) for transport in TRANSPORTS}
    record.comparisons.extend(alternate_groups(groups, rounds, warm_up=True, baseline="http"))
    report(record)
    write_record(record, json_path)


@app.command()
def frames(rows: int = typer.Option(10_000_000, min=1), workers: int = typer.Option(1, min=1),
           rounds: int = typer.Option(3, min=1), data: Path | None = None,
           folder: Path = typer.Option(Path("results/qwp/frames")), host: str = HOST, http_port: int = HTTP,
           ilp_port: int = ILP, pg_port: int = PG, json_path: Path | None = typer.Option(None, "--json")) -> None:
    """QWP's client handed each kind of frame of the same rows."""
    server = Server(host, http_port, ilp_port, pg_port)
    record = BenchmarkRecord("qwp-frames", parameters=dict(rows=rows, workers=workers, rounds=rounds,
                                                           data=str(data) if data else None))

    def variant(frame: str):
        def measure(round_number: int) -> Measurement:
            return bench(folder, f"{frame}-{round_number}", server,
                         ["--transport", "qwp", "--frame", frame, "--workers", str(workers), *data_flags(rows, data)])
        return measure

    record.comparisons.append(alternate({frame: variant(frame) for frame in FRAMES}, rounds, name="frames",
                                        warm_up=True, baseline="pandas"))
    report(record)
    write_record(record, json_path)


@app.command()
def pinned(rows: int = typer.Option(10_000_000, min=1), rounds: int = typer.Option(3, min=1),
           folder: Path = typer.Option(Path("results/qwp/pinned")), host: str = HOST, http_port: int = HTTP,
           ilp_port: int = ILP, pg_port: int = PG, json_path: Path | None = typer.Option(None, "--json")) -> None:
    """QWP and ILP/HTTP, one worker, the server pinned to CPU 1 and the client to CPU 0."""
    from harness.questdb.process import listening_process

    server = Server(host, http_port, ilp_port, pg_port)
    process = listening_process(http_port)
    if process is None:
        raise SystemExit(f"nothing listens on port {http_port}: start the QWP server first")
    subprocess.run(["taskset", "-a", "-cp", "1", str(process.pid)], check=True, capture_output=True)
    record = BenchmarkRecord("qwp-pinned", parameters=dict(rows=rows, rounds=rounds, server_cpus="1", client_cpus="0"))
    try:
        def variant(transport: str):
            def measure(round_number: int) -> Measurement:
                return bench(folder, f"{transport}-{round_number}", server,
                             [*transport_flags(transport), *data_flags(rows, None)], prefix=("taskset", "-c", "0"))
            return measure

        record.comparisons.append(alternate({transport: variant(transport) for transport in ("http", "qwp")}, rounds,
                                            name="pinned", warm_up=True, baseline="http"))
    finally:
        subprocess.run(["taskset", "-a", "-cp", "0-1", str(process.pid)], check=False, capture_output=True)
    report(record)
    write_record(record, json_path)


CALLS_TABLE = "qwp_calls"


@app.command()
def calls(rows: int = typer.Option(5_000_000, min=1), chunk: int = typer.Option(10_000, min=1),
          rounds: int = typer.Option(3, min=1), host: str = HOST, http_port: int = HTTP,
          json_path: Path | None = typer.Option(None, "--json")) -> None:
    """Each chunk one committed ``dataframe()`` call (the harness's way) against one call for the whole table fed by
    a ``RecordBatchReader`` over the same chunks (the other way the client takes): TSBS cpu-only's Arrow batches,
    made before the rounds, one thread, in this process; rows/s until visible and client CPU per million rows."""
    import time

    import pyarrow as pa
    import questdb

    from harness.questdb.http import QuestDBSql
    from harness.tsbs.cpu_only import generator as cpu_only
    from harness.tsbs.use_cases import make_spec

    frames = cpu_only.frames(make_spec(seed=1, scale=4000, timestamp_end=None, row_limit=rows), chunk)
    batches = [pa.RecordBatch.from_pandas(frame, preserve_index=False) for frame in frames]
    sql = QuestDBSql(host, http_port)
    conf = f"ws::addr={host}:{http_port};"

    def visible_after(load) -> Measurement:
        sql.exec(f"DROP TABLE IF EXISTS {CALLS_TABLE}")  # the script's own table
        wall, cpu = time.perf_counter(), time.process_time()
        with questdb.connect(conf) as db:
            load(db)
        while int(sql.exec(f"SELECT count() FROM {CALLS_TABLE}")["dataset"][0][0]) < rows:
            time.sleep(0.01)
        seconds, cpu_seconds = time.perf_counter() - wall, time.process_time() - cpu
        return Measurement(seconds, rows=rows, client_cpu_seconds=cpu_seconds,
                           extra={"client_cpu_seconds_per_million_rows": cpu_seconds / rows * 1e6})

    def per_chunk(round_number: int) -> Measurement:
        def load(db):
            for batch in batches:
                db.dataframe(pa.Table.from_batches([batch]), table_name=CALLS_TABLE, symbols="auto", at="timestamp")
        return visible_after(load)

    def streamed(round_number: int) -> Measurement:
        def load(db):
            reader = pa.RecordBatchReader.from_batches(batches[0].schema, iter(batches))
            db.dataframe(reader, table_name=CALLS_TABLE, symbols="auto", at="timestamp")
        return visible_after(load)

    record = BenchmarkRecord("qwp-calls", parameters=dict(rows=rows, chunk=chunk, rounds=rounds, workers=1,
                                                          source="TSBS cpu-only, scale 4000, seed 1, Arrow batches"))
    try:
        record.comparisons.append(alternate({"a call per chunk": per_chunk, "one streamed call": streamed}, rounds,
                                            name="calls", warm_up=True, baseline="a call per chunk"))
    finally:
        sql.exec(f"DROP TABLE IF EXISTS {CALLS_TABLE}")
    report(record, figures=("rows_per_second", "client_cpu_seconds_per_million_rows"))
    write_record(record, json_path)


@app.command()
def queries(queries_file: Path = typer.Option(..., "--queries"), rounds: int = typer.Option(3, min=1),
            workers: int = typer.Option(1, min=1), data_set: str = typer.Option(
                "", help="The flags of the data set loaded in table cpu (--scale 100 --seed 1 ...), for --check's "
                         "reference."), folder: Path = typer.Option(Path("results/qwp/queries")),
            host: str = HOST, http_port: int = HTTP, ilp_port: int = ILP, pg_port: int = PG,
            json_path: Path | None = typer.Option(None, "--json")) -> None:
    """TSBS's queries over QWP and over PGWire: each type's median latency, alternated (the table cpu loaded with
    ``--data-set``'s flags first)."""
    folder.mkdir(parents=True, exist_ok=True)
    common = ["--host", host, "--http-port", str(http_port), "--pg-port", str(pg_port), "--workers", str(workers),
              "--reporting-period", "0", *data_set.split()]
    for protocol in ("qwp", "pgwire"):  # every answer checked once, untimed
        checked = subprocess.run([sys.executable, "-m", "harness", "queries", "run", str(queries_file), "--protocol",
                                  protocol, "--check", *common, "--results", str(folder / f"check-{protocol}.json")],
                                 capture_output=True, text=True)
        if checked.returncode != 0:
            raise SystemExit(f"queries run --protocol {protocol} --check: {checked.stderr.strip()[-300:]}")
        print(f"  {protocol}: every answer checked")
    record = BenchmarkRecord("qwp-queries", parameters=dict(queries=str(queries_file), rounds=rounds, workers=workers,
                                                            data_set=data_set))

    def variant(protocol: str):
        def measure(round_number: int) -> Measurement:
            results = folder / f"{protocol}-{round_number}.json"
            code, peak = run_child([sys.executable, "-m", "harness", "queries", "run", str(queries_file), "--protocol",
                                    protocol, *common, "--results", str(results)],
                                   folder / f"{protocol}-{round_number}.txt")
            if code != 0:
                raise SystemExit(f"queries run --protocol {protocol}: exit {code}")
            run = json.loads(results.read_text())
            statistics = run["queries"]["statistics"]
            phase = run["phases"]["queries"] if "queries" in run["phases"] else next(iter(run["phases"].values()))
            extra = {f"{kind} median_ms": figures["median_ms"] for kind, figures in statistics.items()}
            print(f"  {protocol:<7} round {round_number}: " + ", ".join(
                f"{kind} {figures['median_ms']:.2f}" for kind, figures in statistics.items()), flush=True)
            return Measurement(seconds=phase["seconds"], rows=phase["rows"],
                               client_cpu_seconds=phase.get("client_cpu_seconds"), peak_rss_bytes=int(peak),
                               run_record=str(results), extra=extra)
        return measure

    comparison = alternate({protocol: variant(protocol) for protocol in ("pgwire", "qwp")}, rounds, name="queries",
                           warm_up=True, baseline="pgwire")
    record.comparisons.append(comparison)
    qwp = comparison.summary["qwp"]
    pgwire = comparison.summary["pgwire"]
    print("query type: median ms over PGWire, over QWP, QWP/PGWire paired (less is faster):")
    for figure in sorted(name for name in qwp if name.endswith("median_ms")):
        print(f"  {figure.removesuffix(' median_ms'):<24} {pgwire[figure].median:8.2f} {qwp[figure].median:8.2f}  "
              f"{qwp[figure].paired_text(higher_is_better=False)}")
    write_record(record, json_path)


if __name__ == "__main__":
    app()
