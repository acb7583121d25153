"""Query runner parity with TSBS's Go tool (a script, not a test): `tsbs_run_queries_questdb` and our
`queries run`, the same queries of each type on the same loaded table, alternated, medians.

    .venv/bin/python benchmarks/query_parity.py --tsbs-bin DIR [--rounds 4] [--queries 1000] [--protocol pgwire]
    make bench-query-parity TSBS_BIN=DIR

DIR holds ``tsbs_generate_queries`` and ``tsbs_run_queries_questdb``, built from a fetched copy of QuestDB's
TSBS fork (``go build ./cmd/tsbs_generate_queries ./cmd/tsbs_run_queries_questdb``), never part of this
repository.

The script starts its own QuestDB (release jar, conf/server.conf) on its own ports, loads the data set with
``bench --send``, and for each query type writes the queries twice from the same flags: TSBS's file with the
Go generator, ours with ``queries generate`` (the tests check both hold the same queries). A warm-up round
(not counted) runs each type once with each runner; then each round runs both runners on each type, the
order alternating, one worker each by default: the Go runner's "Overall
query rate" against our record's queries/s. With one worker, ``1000/ours - 1000/go`` is our client's extra
time per query in ms. Both runners share the machine with the server: their client CPU is taken from it.
The benchmark record goes to --json (alias --results): per query type, every round's queries/s of each
runner (its seconds: the queries over that rate, the runner's own time), medians and ratios.
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
from harness.benchmark_record import BenchmarkRecord, Measurement
from harness.native import NativeQuestDB

LIGHT_TYPES = ("single-groupby-1-1-1", "high-cpu-1", "lastpoint", "groupby-orderby-limit")
HEAVY_TYPES = ("double-groupby-all",)
GO_RATE = re.compile(r"Overall query rate ([0-9.]+) queries/sec")


def harness(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"error: harness {' '.join(args[:2])} failed: {result.stderr.strip()[-500:]}")
    return result


def main(
    tsbs_bin: Path = typer.Option(..., help="Folder with tsbs_generate_queries and tsbs_run_queries_questdb."),
    rounds: int = typer.Option(4, min=1, help="Counted rounds, after one warm-up round; even, so each runner goes first equally."),
    queries: int = typer.Option(1000, min=1, help="Queries per type (TSBS's examples use 1000; with few, the prepare of each new SQL text weighs)."),
    workers: int = typer.Option(1, min=1),
    protocol: str = typer.Option("pgwire", help="pgwire or http (both runners)."),
    scale: int = typer.Option(100, min=1),
    seed: int = 7,
    timestamp_end: str = "2016-01-02T00:00:01Z",  # TSBS's golden query sets end a second past the day
    types: list[str] = typer.Option(list(LIGHT_TYPES + HEAVY_TYPES), "--type"),
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
          f"per type, {workers} worker(s), {protocol}; client and server share the cores")
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
        go_protocol = ["--use-http", f"--url=http://127.0.0.1:{http_port}/"] if protocol == "http" else \
            ["--pg-host=127.0.0.1", f"--pg-port={pg_port}"]

        def rate_of(runner: str, name: str) -> float:
            go_file, our_file = files[name]
            if runner == "go":
                text = subprocess.run(f"zcat -f {go_file} | {run_queries} --workers={workers} "
                                      f"--print-interval=0 {' '.join(go_protocol)}", shell=True,
                                      capture_output=True, text=True, check=True).stdout
                match = GO_RATE.search(text)
                if not match:
                    sys.exit(f"error: cannot read the Go runner's rate: {text[-500:]}")
                return float(match.group(1))
            record_path = workdir / "queries.json"
            harness("queries", "run", str(our_file), "--protocol", protocol, "--workers", str(workers),
                    "--host", "127.0.0.1", "--http-port", str(http_port), "--pg-port", str(pg_port),
                    "--reporting-period", "0", "--results", str(record_path))
            run = json.loads(record_path.read_text())
            return run["queries"]["statistics"]["all queries"]["queries_per_second"]

        def runner(name: str, runner_name: str):
            def measure(round_number: int) -> Measurement:
                rate = rate_of(runner_name, name)
                print(f"{f'round {round_number}' if round_number else 'warm-up'} {name:<22} {runner_name:<4} "
                      f"{rate:8.2f} queries/s", flush=True)
                return Measurement(seconds=queries / rate, extra={"queries_per_second": rate})
            return measure

        # The warm-up round is not counted: the first run of a type pays for the server's cold start (JIT,
        # the table's pages, each statement's first compilation), and would fall on whichever runner happened
        # to go first. Each round runs every type, the runners' order alternating from round to round.
        comparisons = alternate_groups({name: {"go": runner(name, "go"), "ours": runner(name, "ours")}
                                        for name in types}, rounds, baseline="go", warm_up=True,
                                       parameters={name: {"query_type": name} for name in types})
    finally:
        questdb.stop()
    record.comparisons.extend(comparisons)
    print("\nmedians (queries/s), ours / Go, our extra client time per query (ms, meaningful at 1 worker):")
    for comparison in comparisons:
        go, ours = (comparison.summary[runner_name]["queries_per_second"] for runner_name in ("go", "ours"))
        extra_ms = 1000 / ours.median - 1000 / go.median if workers == 1 else None
        extra = f"{extra_ms:+.2f} ms" if extra_ms is not None else "-"
        print(f"{comparison.name:<22} Go {go.median:8.2f}  ours {ours.median:8.2f}  {ours.ratio:5.2f}x  {extra}")
    write_record(record, results)


if __name__ == "__main__":
    typer.run(main)
