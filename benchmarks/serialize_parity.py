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
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import typer

from harness.results import system_info

ORIGINAL_SERIALIZED = re.compile(r"Serialized:\s+(\d+) rows in ([0-9.]+)s.*?ILP Buffer size: ([0-9.]+) MiB", re.S)
# What runs in the original's interpreter: its own entry point (bench_pandas.main, its console script),
# with its own flags; without --send it only generates and serializes.
ORIGINAL_MAIN = "import sys; from py_tsbs_benchmark.bench_pandas import main; sys.argv[0] = 'bench_pandas'; main()"


@dataclass
class Serialize:
    side: str  # original, ours-p1, ours-p2
    threads: int  # 1: single-threaded; N: N workers
    round: int
    rows: int
    seconds: float
    mib: float

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds


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
    results: Path = typer.Option(Path("results/serialize-parity.json")),
) -> None:
    if not (original_repo / "py_tsbs_benchmark" / "bench_pandas.py").is_file():
        sys.exit(f"{original_repo} is not a checkout of questdb/py-tsbs-benchmark (no py_tsbs_benchmark/bench_pandas.py)")
    system = system_info()
    print(f"{system.get('cpu_model', '?')}, {os.cpu_count()} CPUs; {row_count:,} rows, 1 thread and {workers} "
          f"workers, {rounds} rounds; serialize only (in-memory buffers)", flush=True)
    runs: list[Serialize] = []
    sides = [("original", None), ("ours-p1", 1), ("ours-p2", 2)]
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(1, rounds + 1):
            for threads in (1, workers):
                # The order rotates each round, so drift in the machine's speed falls on every side alike.
                shift = (round_number - 1) % len(sides)
                for side, protocol in sides[shift:] + sides[:shift]:
                    if protocol is None:
                        seconds, mib = run_original(original_python, original_repo, row_count, seed, threads)
                    else:
                        seconds, mib = run_ours(row_count, seed, threads, protocol, Path(scratch))
                    run = Serialize(side, threads, round_number, row_count, seconds, mib)
                    runs.append(run)
                    print(f"round {round_number} {threads} thread(s) {side:9} {run.rows_per_second / 1e6:6.3f} M rows/s "
                          f"({mib:7.1f} MiB in {seconds:.2f}s)", flush=True)
    summary = summarize(runs)
    print("\nmedians (M rows/s), range, ratio to the original:")
    for row in summary:
        print(f"{row['threads']} thread(s) {row['side']:9} {row['median_rows_per_second'] / 1e6:6.3f} "
              f"({row['min_rows_per_second'] / 1e6:.3f}-{row['max_rows_per_second'] / 1e6:.3f})  "
              f"{row['ratio_to_original']:.2f}x")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps({"system": system, "row_count": row_count, "workers": workers, "seed": seed,
                                   "runs": [dict(asdict(run), rows_per_second=run.rows_per_second) for run in runs],
                                   "summary": summary}, indent=2) + "\n")
    print(f"Results: {results}")


def summarize(runs: list[Serialize]) -> list[dict]:
    rows = []
    for threads in sorted({run.threads for run in runs}):
        rates = {side: [run.rows_per_second for run in runs if run.threads == threads and run.side == side]
                 for side in ("original", "ours-p1", "ours-p2")}
        original = statistics.median(rates["original"])
        for side, values in rates.items():
            rows.append({"threads": threads, "side": side, "median_rows_per_second": statistics.median(values),
                         "min_rows_per_second": min(values), "max_rows_per_second": max(values),
                         "ratio_to_original": statistics.median(values) / original})
    return rows


if __name__ == "__main__":
    typer.run(main)
