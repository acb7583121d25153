"""Query runner parity with TSBS's Go tool (a script, not a test): `tsbs_run_queries_questdb` and our
`queries run`, the same queries of each type on the same loaded table, alternated, medians.

    .venv/bin/python benchmarks/query_parity.py --tsbs-bin DIR [--rounds 6] [--queries 500] [--workers 1 --workers 2]
    make bench-query-parity TSBS_BIN=DIR

DIR holds ``tsbs_generate_queries`` and ``tsbs_run_queries_questdb``, built from a fetched copy of QuestDB's
TSBS fork (``go build ./cmd/tsbs_generate_queries ./cmd/tsbs_run_queries_questdb``), never part of this
repository.

The script starts its own QuestDB (release jar, conf/server.conf) on its own ports, loads the data set with
``bench --send``, and for each query type writes the queries twice from the same flags: TSBS's file with the
Go generator, ours with ``queries generate`` (the tests check both hold the same queries). One type at one
worker count (1 and 2 by default) at a time: a warm-up round (not counted) runs it once with each runner,
through a relay that counts each runner's round trips and prepares per query on the wire
(``benchmarks/pgwire_tally.py``); then each round runs both runners on it, the order alternating: the Go
runner's "Overall query rate" against our record's queries/s, both counted from the runner's start, its
connections' set-up included, to the last query's end. (With every type in each round, the second
runner of a pair ran faster than the first, whichever it was: a median 1.07x over all pairs, 1.1-2.3x on
most light types.) With one worker, ``1000/ours - 1000/go`` is our client's extra time per
query in ms. Both runners share the machine with the server: their client CPU is taken from it. Each run's
client CPU comes from the kernel (``wait4``): the Go runner's is its whole process (it starts in under 10 ms
of CPU), ours the record's queries phase (the process's, Python's start-up, the query file's parsing and the
queries' wire forms excluded; the whole process's is recorded beside it).
Each run's median query latency (the Go runner's printed ``med``, our record's ``median_ms``) is recorded
too: a 500-query run of a light type lasts well under a second, and one pause of the server or the machine
moves its rate, while the median query is left alone.
The benchmark record goes to --json (alias --results): per query type, every round's queries/s, median
latency and client CPU seconds of each runner (its seconds: the queries over that rate, the runner's own
time), medians and ratios.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import typer

from benchmarks.alternate import alternate_groups, write_record
from benchmarks.loader_parity import run_child
from benchmarks.pgwire_tally import PgwireTally
from harness.records.benchmark_record import BenchmarkRecord, Comparison, Measurement
from harness.records.intervals import standings
from harness.servers.questdb import NativeQuestDB
from harness.tsbs.query_types import QUERY_TYPES

GO_RATE = re.compile(r"Overall query rate ([0-9.]+) queries/sec")
GO_LATENCY = re.compile(r"all queries\s*:\s*min:\s*[0-9.]+ms, med:\s*([0-9.]+)ms")
RUNNERS = ("go", "ours")


def harness(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: harness {' '.join(args[:2])} failed: {result.stderr.strip()[-500:]}")
    return result


def main(
    tsbs_bin: Path = typer.Option(..., help="Folder with tsbs_generate_queries and tsbs_run_queries_questdb."),
    rounds: int = typer.Option(6, min=1, help="Counted rounds, after one warm-up round; even, so each runner goes first equally."),
    queries: int = typer.Option(500, min=1, help="Queries per type (with few, the prepare of each new SQL text weighs)."),
    workers: list[int] = typer.Option([1, 2], "--workers", min=1, help="Worker counts, each compared (repeat the flag)."),
    protocol: str = typer.Option("pgwire", help="pgwire or http (both runners)."),
    scale: int = typer.Option(100, min=1),
    seed: int = 7,
    timestamp_end: str = "2016-01-02T00:00:01Z",  # TSBS's golden query sets end a second past the day
    types: list[str] = typer.Option(list(QUERY_TYPES), "--type", help="Query types (default: all of TSBS's 16)."),
    http_port: int = 29600, ilp_port: int = 29609, pg_port: int = 29612, min_port: int = 29603,
    results: Path = typer.Option(Path("results/query-parity.json"), "--json", "--results",
                                 help="The benchmark record's path."),
) -> None:
    generate_queries, run_queries = tsbs_bin / "tsbs_generate_queries", tsbs_bin / "tsbs_run_queries_questdb"
    for tool in (generate_queries, run_queries):
        if not tool.is_file():
            sys.exit(f"error: {tool} is missing (build it from QuestDB's TSBS fork)")
    data_flags = ["--seed", str(seed), "--scale", str(scale), "--timestamp-start", "2016-01-01T00:00:00Z",
                  "--timestamp-end", timestamp_end]
    record = BenchmarkRecord("query-parity", parameters=dict(
        rounds=rounds, queries=queries, workers=workers, protocol=protocol, scale=scale, seed=seed,
        timestamp_end=timestamp_end, types=types))
    system = record.system
    print(f"{system['cpu_model']}, {system['cpu_count']} CPUs; scale {scale} to {timestamp_end}, {queries} queries "
          f"per type, {'/'.join(map(str, workers))} worker(s), {protocol}; client and server share the cores")
    workdir = Path(tempfile.mkdtemp(prefix="query-parity-"))
    questdb = NativeQuestDB(root=workdir / "questdb-root", http_port=http_port, ilp_port=ilp_port, pg_port=pg_port,
                            min_port=min_port).start()
    try:
        harness("bench", "--send", "--transport", "http", "--host", "127.0.0.1", "--http-port", str(http_port),
                "--ilp-port", str(ilp_port), "--reporting-period", "0", "--sample-interval", "0",
                "--results", str(workdir / "load.json"), *data_flags)
        files = {}
        for name in types:
            go_file, our_file = workdir / f"{name}.gob", workdir / f"{name}.jsonl"
            with open(go_file, "wb") as out:
                subprocess.run([str(generate_queries), "--use-case=cpu-only", "--format=questdb",
                                f"--queries={queries}", f"--query-type={name}",
                                *[f"{flag}={value}" for flag, value in zip(data_flags[::2], data_flags[1::2])]],
                               stdout=out, check=True, capture_output=False, stderr=subprocess.DEVNULL)
            harness("queries", "generate", "--query-type", name, "--queries", str(queries), "--file", str(our_file),
                    *data_flags)
            files[name] = (go_file, our_file)

        def rate_of(runner: str, name: str, worker_count: int, port: int) -> tuple[float, float, float, float]:
            """(queries/s, client CPU seconds of the queries, CPU seconds of the whole process, the median
            query's latency in ms)."""
            go_file, our_file = files[name]
            if runner == "go":
                go_protocol = ["--use-http", f"--url=http://127.0.0.1:{http_port}/"] if protocol == "http" else \
                    ["--pg-host=127.0.0.1", f"--pg-port={port}"]
                child = run_child([str(run_queries), f"--file={go_file}", f"--workers={worker_count}",
                                   "--print-interval=0", *go_protocol], None)
                text, cpu_seconds = child.stdout, child.cpu_seconds
                match, latency = GO_RATE.search(text), GO_LATENCY.search(text)
                if not match or not latency:
                    sys.exit(f"error: cannot read the Go runner's rate and latency: {text[-500:]}")
                # The Go binary starts in under 10 ms of CPU: its process's CPU is its queries'.
                return float(match.group(1)), cpu_seconds, cpu_seconds, float(latency.group(1))
            record_path = workdir / "queries.json"
            cpu_seconds = run_child([sys.executable, "-m", "harness", "queries", "run", str(our_file), "--protocol",
                                     protocol, "--workers", str(worker_count), "--host", "127.0.0.1",
                                     "--http-port", str(http_port), "--pg-port", str(port), "--reporting-period",
                                     "0", "--results", str(record_path)], None).cpu_seconds
            run = json.loads(record_path.read_text())
            statistics = run["queries"]["statistics"]["all queries"]
            return (statistics["queries_per_second"], run["phases"]["queries"]["client_cpu_seconds"], cpu_seconds,
                    statistics["median_ms"])

        wire: dict[tuple[str, int, str], dict[str, float]] = {}  # (type, workers, runner): the tally's figures

        def runner(name: str, worker_count: int, runner_name: str):
            def measure(round_number: int) -> Measurement:
                if round_number == 0 and protocol == "pgwire":  # the warm-up: through the relay, counted
                    tally.reset()
                    rate, cpu, process_cpu, median_ms = rate_of(runner_name, name, worker_count, tally.port)
                    wire[name, worker_count, runner_name] = tally.per_query(queries)
                else:
                    rate, cpu, process_cpu, median_ms = rate_of(runner_name, name, worker_count, pg_port)
                print(f"{f'round {round_number}' if round_number else 'warm-up'} {name:<22} W={worker_count} "
                      f"{runner_name:<4} {rate:8.2f} queries/s  median {median_ms:7.2f} ms  {1000 * cpu / queries:.3f} "
                      f"ms CPU a query (process {process_cpu:.2f} s)", flush=True)
                return Measurement(seconds=queries / rate, client_cpu_seconds=cpu,
                                   extra={"queries_per_second": rate, "process_cpu_seconds": process_cpu,
                                          "median_ms": median_ms})
            return measure

        # One type (at one worker count) at a time, not every type in each round: the module's docstring says
        # why (results/reference/2026-11-25-parity/order-effect.txt). Its warm-up round, not counted, pays for
        # the server's cold start (JIT, the table's pages, each statement's first compilation), which would
        # otherwise fall on whichever runner happened to go first, and runs through the tally relay, which
        # counts both runners' messages.
        parameters = {f"{name} W={count}": {"query_type": name, "workers": count}
                      for name in types for count in workers}
        with PgwireTally("127.0.0.1", pg_port) as tally:
            comparisons = [
                comparison
                for name in types for count in workers
                for comparison in alternate_groups(
                    {f"{name} W={count}": {runner_name: runner(name, count, runner_name) for runner_name in RUNNERS}},
                    rounds, baseline="go", warm_up=True, parameters=parameters)]
    finally:
        questdb.stop()
    for comparison in comparisons:
        key = (comparison.parameters["query_type"], comparison.parameters["workers"])
        comparison.parameters["wire"] = {runner_name: wire[(*key, runner_name)] for runner_name in RUNNERS
                                         if (*key, runner_name) in wire}
    record.comparisons.extend(comparisons)
    print_summary(comparisons, queries)
    write_record(record, results)


def print_summary(comparisons: list[Comparison], queries: int) -> None:
    """Per query type and worker count, the medians of both runners and our ratios (with the paired interval
    and where ours stands by it), latency, client CPU and the wire's counts; then how many pairs ours is
    ahead, level or behind in."""
    print("\nmedians over the rounds: queries/s, ours / Go (paired: the median of the rounds' own ratios, its "
          "interval, and where ours stands by it), our extra time per query (ms, at 1 worker); the median query's "
          "latency, Go / ours (ms), Go's over ours; client CPU ms a query, Go / ours (Go's whole process; ours the "
          "record's queries phase), Go's over ours; round trips and prepares per query (go / ours, connection "
          "set-up included):")
    for comparison in comparisons:
        go, ours = (comparison.summary[runner_name]["queries_per_second"] for runner_name in RUNNERS)
        go_cpu, our_cpu = (comparison.summary[runner_name]["client_cpu_seconds"] for runner_name in RUNNERS)
        go_median, our_median = (comparison.summary[runner_name]["median_ms"] for runner_name in RUNNERS)
        extra = f"{1000 / ours.median - 1000 / go.median:+.2f} ms" if comparison.parameters["workers"] == 1 else "-"
        counts = comparison.parameters["wire"]
        on_wire = "  ".join(f"{figure} {' / '.join(f'{counts[r][figure]:.3f}' for r in RUNNERS)}"
                            for figure in ("round_trips_per_query", "prepares_per_query")) if counts else ""
        print(f"{comparison.name:<26} Go {go.median:8.2f}  ours {ours.median:8.2f}  {ours.ratio:5.2f}x "
              f"(paired {ours.paired_text()})  {extra:>9}  latency {go_median.median:.2f} / "
              f"{our_median.median:.2f} ms {1 / our_median.ratio:.2f}x  CPU {1000 * go_cpu.median / queries:.3f} / "
              f"{1000 * our_cpu.median / queries:.3f} ms {1 / our_cpu.ratio:.2f}x  {on_wire}")
    for figure, label, higher in (("queries_per_second", "queries/s", True),
                                  ("client_cpu_seconds", "client CPU", False)):
        print(f"{label}, {standings((one.summary['ours'][figure], higher) for one in comparisons)}")


if __name__ == "__main__":
    typer.run(main)
