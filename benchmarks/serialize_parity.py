"""Serializer parity with the original pandas benchmark (a script, not a test): the original's own
``bench_pandas`` serialize (1 thread, and N workers) against ours on DataFrames of the same shape and size,
alternated, medians and ratios.

    .venv/bin/python benchmarks/serialize_parity.py --original-python /tmp/original-venv/bin/python \\
        --original-repo /tmp/py-tsbs-benchmark [--row-count 2000000] [--workers 2] [--rounds 5]
    make bench-serialize-parity ORIGINAL_PYTHON=... ORIGINAL_REPO=...

The original is questdb/py-tsbs-benchmark (a checkout of its repository; never part of this one), run with
the dependencies it was published with, in a scratch venv that is never part of our lock files:

    python3 -m venv /tmp/original-venv
    /tmp/original-venv/bin/pip install questdb==1.1.0 pandas==2.0.3 numpy==1.26.4 pyarrow==14.0.2 \\
        numba==0.59.1 requests==2.31.0

(its lock pins pandas 1.5.2, pyarrow 10 and numba 0.56, which have no wheels for Python 3.11; these are the
nearest that install, the questdb client is its own 1.1.0). Both sides serialize into an in-memory buffer
only, nothing is sent. The original's 1-thread run serializes its whole frame in one ``dataframe()`` call,
its N-worker run deals 10,000-row slices round-robin to N threads; ours does as ``bench`` (no --send) does:
10,000-row chunks, one buffer per worker cleared after each chunk. Same rows, 10 SYMBOL columns
(``string[pyarrow]`` on both sides), 10 DOUBLE fields of full-precision random-walk values, a timestamp.
Ours runs on protocol 1 (text, the only one the original's client speaks) and on protocol 2 (binary
doubles), reported beside it. Each side's time is its own serialize clock (the original's printed
"Serialized: N rows in Xs", our record's serialize phase): generation and start-up are not counted.
The benchmark record (every run, medians, ratios to the original) goes to --json (alias --results).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import typer

from benchmarks.alternate import alternate_groups, write_record
from harness.benchmark_record import BenchmarkRecord, Measurement

ORIGINAL_SERIALIZED = re.compile(r"Serialized:\s+(\d+) rows in ([0-9.]+)s.*?ILP Buffer size: ([0-9.]+) MiB", re.S)
# What runs in the original's interpreter: its own entry point (bench_pandas.main, its console script),
# with its own flags; without --send it only generates and serializes.
ORIGINAL_MAIN = "import sys; from py_tsbs_benchmark.bench_pandas import main; sys.argv[0] = 'bench_pandas'; main()"
SIDES = {"original": None, "ours-p1": 1, "ours-p2": 2}  # side: our ILP protocol version


def run_original(python: Path, repo: Path, rows: int, seed: int, threads: int) -> tuple[float, float]:
    command = [str(python), "-c", ORIGINAL_MAIN, "--row-count", str(rows), "--seed", str(seed)]
    if threads > 1:
        command += ["--workers", str(threads)]
    environment = dict(os.environ, PYTHONPATH=str(repo))
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    match = ORIGINAL_SERIALIZED.search(result.stdout)
    if result.returncode != 0 or not match:
        sys.exit(f"the original benchmark failed (exit {result.returncode}): {(result.stderr or result.stdout)[-500:]}")
    if int(match.group(1)) != rows:
        sys.exit(f"the original serialized {match.group(1)} rows, not {rows}")
    return float(match.group(2)), float(match.group(3))


def run_ours(rows: int, seed: int, threads: int, protocol: int, workdir: Path) -> tuple[float, float]:
    record_path = workdir / "record.json"
    command = [sys.executable, "-m", "harness", "bench", "--row-count", str(rows), "--seed", str(seed),
               "--protocol-version", str(protocol), "--symbol-dtype", "string[pyarrow]",
               "--reporting-period", "0", "--results", str(record_path)]
    if threads > 1:
        command += ["--workers", str(threads)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"harness bench failed (exit {result.returncode}): {result.stderr[-500:]}")
    serialize = json.loads(record_path.read_text())["phases"]["serialize"]
    if serialize["rows"] != rows:
        sys.exit(f"harness serialized {serialize['rows']} rows, not {rows}")
    return serialize["seconds"], serialize["bytes"] / 2**20


def main(
    original_python: Path = typer.Option(..., help="Interpreter with the original's pinned dependencies."),
    original_repo: Path = typer.Option(..., help="Checkout of questdb/py-tsbs-benchmark."),
    row_count: int = typer.Option(2_000_000, min=10_000),
    workers: int = typer.Option(2, min=2, help="N of the N-worker runs (both sides)."),
    rounds: int = typer.Option(5, min=1),
    seed: int = typer.Option(1),
    results: Path = typer.Option(Path("results/serialize-parity.json"), "--json", "--results",
                                 help="The benchmark record's path."),
) -> None:
    if not (original_repo / "py_tsbs_benchmark" / "bench_pandas.py").is_file():
        sys.exit(f"{original_repo} is not a checkout of questdb/py-tsbs-benchmark (no py_tsbs_benchmark/bench_pandas.py)")
    record = BenchmarkRecord("serialize-parity", parameters=dict(row_count=row_count, workers=workers, rounds=rounds,
                                                                 seed=seed))
    print(f"{record.system.get('cpu_model', '?')}, {os.cpu_count()} CPUs; {row_count:,} rows, 1 thread and {workers} "
          f"workers, {rounds} rounds; serialize only (in-memory buffers)", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        def serialize(side: str, threads: int):
            def measure(round_number: int) -> Measurement:
                protocol = SIDES[side]
                if protocol is None:
                    seconds, mib = run_original(original_python, original_repo, row_count, seed, threads)
                else:
                    seconds, mib = run_ours(row_count, seed, threads, protocol, Path(scratch))
                print(f"round {round_number} {threads} thread(s) {side:9} {row_count / seconds / 1e6:6.3f} M rows/s "
                      f"({mib:7.1f} MiB in {seconds:.2f}s)", flush=True)
                return Measurement(seconds=seconds, rows=row_count, extra={"mib": mib})
            return measure

        # Each round serializes with 1 thread, then N workers; the sides' order rotates each round, so drift in
        # the machine's speed falls on every side alike.
        comparisons = alternate_groups(
            {f"{threads} thread(s)": {side: serialize(side, threads) for side in SIDES} for threads in (1, workers)},
            rounds, baseline="original",
            parameters={f"{threads} thread(s)": {"threads": threads} for threads in (1, workers)})
    record.comparisons.extend(comparisons)
    print("\nmedians (M rows/s), range, ratio to the original:")
    for comparison in comparisons:
        for side in SIDES:
            rate = comparison.summary[side]["rows_per_second"]
            print(f"{comparison.name} {side:9} {rate.median / 1e6:6.3f} ({rate.min / 1e6:.3f}-{rate.max / 1e6:.3f})  "
                  f"{rate.ratio:.2f}x")
    write_record(record, results)


if __name__ == "__main__":
    typer.run(main)
