"""Serializer parity with the original pandas benchmark (a script, not a test): the original's own
``bench_pandas`` serialize (1 thread, and N workers) against ours on DataFrames of the same shape and size,
alternated, medians and ratios.

    .venv/bin/python benchmarks/serialize_parity.py --original-python /tmp/original-venv/bin/python \\
        --original-current-client-python /tmp/original-6.0.0-venv/bin/python \\
        --original-repo /tmp/py-tsbs-benchmark [--row-count 2000000] [--workers 2] [--rounds 5] \\
        [--side original-our-deps --side ours-p1 --no-one-thread]   # some sides only, N workers only
    make bench-serialize-parity ORIGINAL_PYTHON=... ORIGINAL_6_PYTHON=... ORIGINAL_REPO=...

The original is questdb/py-tsbs-benchmark (a checkout of its repository; never part of this one), run with
the dependencies it was published with, in a scratch venv that is never part of our lock files:

    python3 -m venv /tmp/original-venv
    /tmp/original-venv/bin/pip install questdb==1.1.0 pandas==2.0.3 numpy==1.26.4 pyarrow==14.0.2 \\
        numba==0.59.1 requests==2.31.0

(its lock pins pandas 1.5.2, pyarrow 10 and numba 0.56, which have no wheels for Python 3.11; these are the
nearest that install, the questdb client is its own 1.1.0). Both sides serialize into an in-memory buffer
only, nothing is sent. The original's 1-thread run serializes its whole frame in one ``dataframe()`` call,
its N-worker run deals 10,000-row slices round-robin to N threads; ours does as ``bench`` (no --send) does:
10,000-row chunks, one buffer per worker cleared after each chunk (``--chunk-rows`` sets both sides' size: each
``dataframe()`` call of these 21 columns costs about a millisecond whatever its rows, a tenth of a
10,000-row call). Same shape: 10 SYMBOL columns (``string[pyarrow]`` on both sides), 10 DOUBLE fields of
full-precision random-walk values, a timestamp.

Same rows by default (``--original-rows tsbs``): the rows ``bench`` serializes (TSBS's cpu-only, the same
seed) are written once to a feather file, and the original's run reads that frame in place of the one its
``gen_dataframe`` makes (one arrow chunk a column, index named ``cpu``, as its own); both then produce the
same ILP bytes. Its check of the split, outside its clock, sorts the slices by timestamp, which TSBS's rows
share a scale's worth at a time: the driver checks the same sorted by the row index. ``--original-rows own``
runs the original on the rows it generates itself: its own random walk, whose values format faster.
Ours runs on protocol 1 (text, the only one the original's client speaks) and on protocol 2 (binary
doubles), reported beside it. Each side's time is its own serialize clock (the original's printed
"Serialized: N rows in Xs", our record's serialize phase): generation and start-up are not counted.
Three runs of the original: with its own pins (``original``, the interpreter of --original-python); its
same loop on our client version (``original-6.0.0``, the interpreter of --original-current-client-python: the
same pins but questdb 6.0.0, whose ``Buffer`` needs a protocol version: the driver hands the original's
``Buffer()`` protocol 1, its only change to the original):

    python3 -m venv /tmp/original-6.0.0-venv
    /tmp/original-6.0.0-venv/bin/pip install questdb==6.0.0 pandas==2.0.3 numpy==1.26.4 pyarrow==14.0.2 \\
        numba==0.59.1 requests==2.31.0

and the same loop in our own interpreter (``original-our-deps``: our client, pandas, numpy and pyarrow; its
``requests`` import, which our interpreter lacks, is given an empty module: a serialize-only run makes no
HTTP call). Against that side, ours differs only in its own code.

Besides wall time, each side's client CPU seconds per million rows over its serialize call: ours the
record's serialize phase (the whole process, metering threads included), the original's the process's CPU
over the part of ``serialize_one``/``serialize_workers`` it times itself (the driver's only other change:
the CPU clock read where the original reads its wall clock).
The benchmark record (every run, medians, ratios to the original) goes to --json (alias --results).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from enum import StrEnum
from pathlib import Path

import typer

from benchmarks.alternate import alternate_groups, write_record
from harness.options.groups import DEFAULT_CHUNK_ROWS
from harness.records.benchmark_record import BenchmarkRecord, Comparison, Measurement
from harness.records.intervals import standings
from harness.run.bench_options import BenchOptions
from harness.tsbs.choices import SymbolDtype

ORIGINAL_SERIALIZED = re.compile(r"Serialized:\s+(\d+) rows in ([0-9.]+)s.*?ILP Buffer size: ([0-9.]+) MiB"
                                 r".*?Serialize CPU: ([0-9.]+)s", re.S)
# What runs in the original's interpreter: its own entry point (bench_pandas.main, its console script), with
# its own flags (without --send it only generates and serializes), the CPU time of the part its serialize
# calls time and, on a client that needs one (argv[1]: "1"), its Buffer() given a protocol version.
ORIGINAL_MAIN = """
import functools, importlib.util, os, sys, time, types
if importlib.util.find_spec("requests") is None:
    # Our interpreter has no requests, which the original imports for its HTTP calls: a serialize-only run
    # makes none.
    sys.modules["requests"] = types.ModuleType("requests")
from py_tsbs_benchmark import bench_pandas
protocol = sys.argv.pop(1)
if protocol:
    client = bench_pandas.qi
    bench_pandas.qi = types.SimpleNamespace(**{name: getattr(client, name) for name in dir(client)})
    bench_pandas.qi.Buffer = functools.partial(client.Buffer, protocol_version=int(protocol))
# Its serialize functions read time.monotonic() twice, around the part they time (after splitting the frame
# and checking the split): the process's CPU clock is read at the same two moments.
cpu_at_clock = []
def monotonic():
    cpu_at_clock.append(time.process_time())
    return time.monotonic()
bench_pandas.time = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("__")})
bench_pandas.time.monotonic = monotonic
def clocked(serialize):
    def call(*args, **kwargs):
        cpu_at_clock.clear()
        size = serialize(*args, **kwargs)
        print(f"Serialize CPU: {cpu_at_clock[-1] - cpu_at_clock[0]:.3f}s", flush=True)
        return size
    return call
if os.environ.get("PARITY_ROWS"):
    # Given rows (--original-rows tsbs): the frame is read from the file in place of the one it generates,
    # its tags as the string[pyarrow] columns it makes itself; the rest of its run is its own.
    import pandas, pyarrow, pyarrow.feather
    def gen_dataframe(seed, row_count, scale):
        # One arrow chunk a column, as its own pd.Series(list, dtype) makes (its client 1.1.0 crashes on a
        # slice across chunks).
        frame = pyarrow.feather.read_table(os.environ["PARITY_ROWS"]).combine_chunks().to_pandas(
            types_mapper={pyarrow.string(): pandas.StringDtype("pyarrow")}.get)
        assert len(frame) == row_count, (len(frame), row_count)
        frame.index.name = "cpu"  # the table name, as its own frame names it
        return frame
    bench_pandas.gen_dataframe = gen_dataframe
    def sanity_check_split2(df, dfs_by_worker):
        # Its own check sorts the dealt slices by timestamp, which its rows never share and TSBS's share a
        # scale's worth at a time: the same check, sorted by the row index.
        joined = pandas.concat([part for parts in dfs_by_worker for part in parts]).sort_index()
        assert len(df) == len(joined) and df.equals(joined)
    bench_pandas.sanity_check_split2 = sanity_check_split2
bench_pandas.serialize_one = clocked(bench_pandas.serialize_one)
bench_pandas.serialize_workers = clocked(bench_pandas.serialize_workers)
sys.argv[0] = "bench_pandas"
bench_pandas.main()
"""
# side: (whose code, our ILP protocol version or the original's Buffer protocol ("": its client's default),
# whose interpreter: the original's pins, those pins with our client, or ours)
SIDES = {"original": ("original", "", "original"), "original-6.0.0": ("original", "1", "original-6.0.0"),
         "original-our-deps": ("original", "1", "ours"), "ours-p1": ("ours", 1, "ours"), "ours-p2": ("ours", 2, "ours")}


class OriginalRows(StrEnum):
    """Whose rows the original's runs serialize."""

    tsbs = "tsbs"
    own = "own"


def run_original(python: Path, repo: Path, rows: int, seed: int, threads: int, chunk_rows: int,
                 protocol: str, given_rows: Path | None) -> tuple[float, float, float]:
    """The original's serialize: (seconds, MiB, client CPU seconds); of ``given_rows`` (a feather file) in
    place of the frame it generates, if given."""
    command = [str(python), "-c", ORIGINAL_MAIN, protocol, "--row-count", str(rows), "--seed", str(seed)]
    if threads > 1:
        command += ["--workers", str(threads), "--worker-chunk-row-count", str(chunk_rows)]
    environment = dict(os.environ, PYTHONPATH=str(repo))
    if given_rows is not None:
        environment["PARITY_ROWS"] = str(given_rows)
    result = subprocess.run(command, capture_output=True, text=True, env=environment)
    match = ORIGINAL_SERIALIZED.search(result.stdout)
    if result.returncode != 0 or not match:
        sys.exit(f"the original benchmark failed (exit {result.returncode}): {(result.stderr or result.stdout)[-500:]}")
    if int(match.group(1)) != rows:
        sys.exit(f"the original serialized {match.group(1)} rows, not {rows}")
    return float(match.group(2)), float(match.group(3)), float(match.group(4))


def run_ours(rows: int, seed: int, threads: int, chunk_rows: int, protocol: int,
             workdir: Path) -> tuple[float, float, float]:
    """``bench``'s serialize phase: (seconds, MiB, client CPU seconds)."""
    record_path = workdir / "record.json"
    command = [sys.executable, "-m", "harness", "bench", "--row-count", str(rows), "--seed", str(seed),
               "--protocol-version", str(protocol), "--symbol-dtype", SymbolDtype.string_pyarrow,
               "--worker-chunk-row-count", str(chunk_rows), "--reporting-period", "0", "--results", str(record_path)]
    if threads > 1:
        command += ["--workers", str(threads)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"harness bench failed (exit {result.returncode}): {result.stderr[-500:]}")
    serialize = json.loads(record_path.read_text())["phases"]["serialize"]
    if serialize["rows"] != rows:
        sys.exit(f"harness serialized {serialize['rows']} rows, not {rows}")
    return serialize["seconds"], serialize["bytes"] / 2**20, serialize["client_cpu_seconds"]


def write_tsbs_rows(rows: int, seed: int, path: Path) -> None:
    """The rows ``bench`` serializes (its own chunks, the same flags as ``run_ours``), as one frame in a feather
    file the original's interpreter reads: tags as arrow strings, fields, zone-less timestamps."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.feather

    plan = BenchOptions(row_count=rows, seed=seed, symbol_dtype=SymbolDtype.string_pyarrow).plan()
    frame = pd.concat([table for chunk in plan.chunks() for table in chunk.values()], ignore_index=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.cast(pa.schema([pa.field(field.name, pa.string() if pa.types.is_large_string(field.type)
                                           else field.type) for field in table.schema]))
    pyarrow.feather.write_feather(table, path, compression="uncompressed", chunksize=len(frame))


def main(
    original_python: Path = typer.Option(..., help="Interpreter with the original's pinned dependencies."),
    original_current_client_python: Path = typer.Option(
        ..., help="Interpreter with the original's pins but our questdb client (6.0.0)."),
    original_repo: Path = typer.Option(..., help="Checkout of questdb/py-tsbs-benchmark."),
    row_count: int = typer.Option(2_000_000, min=10_000),
    workers: int = typer.Option(2, min=2, help="N of the N-worker runs (both sides)."),
    rounds: int = typer.Option(6, min=1, help="Counted rounds: 6 is the fewest whose paired interval covers 95 % "
                                              "(docs/methodology.md)."),
    chunk_rows: int = typer.Option(DEFAULT_CHUNK_ROWS, min=1, help="Rows of each dataframe() call of the N-worker "
                                   "runs, both sides (the original's --worker-chunk-row-count, bench's); ours uses "
                                   "it at 1 thread too, where the original serializes its frame in one call."),
    seed: int = typer.Option(1),
    sides: list[str] = typer.Option(list(SIDES), "--side", help=f"Sides to run (repeat; of {', '.join(SIDES)}); the "
                                    "first is the baseline of the ratios."),
    one_thread: bool = typer.Option(True, help="Also the 1-thread runs (--no-one-thread: only the N-worker ones)."),
    original_rows: OriginalRows = typer.Option(OriginalRows.tsbs, help="tsbs: the original's runs serialize the rows "
                                               "ours does (TSBS's, written once to a file it reads in place of its "
                                               "own frame); own: the rows it generates itself (its random walk: "
                                               "other values)."),
    results: Path = typer.Option(Path("results/serialize-parity.json"), "--json", "--results",
                                 help="The benchmark record's path."),
) -> None:
    unknown = [side for side in sides if side not in SIDES]
    if unknown or not sides:
        sys.exit(f"--side: {', '.join(unknown) or 'none given'}: the sides are {', '.join(SIDES)}")
    if not (original_repo / "py_tsbs_benchmark" / "bench_pandas.py").is_file():
        sys.exit(f"{original_repo} is not a checkout of questdb/py-tsbs-benchmark (no py_tsbs_benchmark/bench_pandas.py)")
    record = BenchmarkRecord("serialize-parity", parameters=dict(row_count=row_count, workers=workers, rounds=rounds,
                                                                 chunk_rows=chunk_rows, seed=seed, sides=sides,
                                                                 one_thread=one_thread,
                                                                 original_rows=str(original_rows)))
    print(f"{record.system.get('cpu_model', '?')}, {os.cpu_count()} CPUs; {row_count:,} rows, 1 thread and {workers} "
          f"workers, {rounds} rounds, {chunk_rows:,}-row chunks; serialize only (in-memory buffers)", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        given_rows = None
        if original_rows == OriginalRows.tsbs and any(SIDES[side][0] == "original" for side in sides):
            given_rows = Path(scratch) / "tsbs-rows.feather"
            write_tsbs_rows(row_count, seed, given_rows)
            print(f"the original's runs serialize TSBS's rows, as ours: {given_rows.stat().st_size / 2**20:.0f} MiB "
                  f"feather file", flush=True)
        def serialize(side: str, threads: int):
            def measure(round_number: int) -> Measurement:
                code, protocol, interpreter = SIDES[side]
                if code == "original":
                    python = {"original": original_python, "original-6.0.0": original_current_client_python,
                              "ours": Path(sys.executable)}[interpreter]
                    seconds, mib, cpu = run_original(python, original_repo, row_count, seed, threads, chunk_rows,
                                                     protocol, given_rows)
                else:
                    seconds, mib, cpu = run_ours(row_count, seed, threads, chunk_rows, protocol, Path(scratch))
                print(f"round {round_number} {threads} thread(s) {side:17} {row_count / seconds / 1e6:6.3f} M rows/s "
                      f"({mib:7.1f} MiB in {seconds:.2f}s; {cpu / row_count * 1e6:.3f} CPU-s/M rows)", flush=True)
                return Measurement(seconds=seconds, rows=row_count, client_cpu_seconds=cpu, extra={"mib": mib})
            return measure

        # Each round serializes with 1 thread, then N workers; the sides' order rotates each round, so drift in
        # the machine's speed falls on every side alike.
        thread_counts = (1, workers) if one_thread else (workers,)
        comparisons = alternate_groups(
            {f"{threads} thread(s)": {side: serialize(side, threads) for side in sides} for threads in thread_counts},
            rounds, baseline=sides[0],
            parameters={f"{threads} thread(s)": {"threads": threads} for threads in thread_counts})
    record.comparisons.extend(comparisons)
    print_summary(comparisons, sides, row_count)
    write_record(record, results)


def print_summary(comparisons: list[Comparison], sides: list[str], row_count: int) -> None:
    """Per thread count and side, the medians of rate and client CPU and their ratios to the first side (each
    with the paired interval and where the side stands by it); then, per side, how many thread counts it is
    ahead, level or behind in."""
    print(f"\nmedians (M rows/s), range, ratio to {sides[0]} (paired [interval], standing); client CPU-s per "
          f"million rows, {sides[0]}'s over each side's (paired [interval], standing):")
    for comparison in comparisons:
        for side in sides:
            rate = comparison.summary[side]["rows_per_second"]
            cpu = comparison.summary[side]["client_cpu_seconds"]  # every round serializes row_count rows
            per_million = 1e6 / row_count
            print(f"{comparison.name} {side:17} {rate.median / 1e6:6.3f} ({rate.min / 1e6:.3f}-{rate.max / 1e6:.3f})  "
                  f"{rate.ratio:.2f}x ({rate.paired_text()})   {cpu.median * per_million:.3f} "
                  f"CPU-s/M ({cpu.min * per_million:.3f}-{cpu.max * per_million:.3f})  {1 / cpu.ratio:.2f}x "
                  f"({cpu.paired_text(higher_is_better=False, invert=True)})")
    for side in sides[1:]:
        for figure, higher in (("rows_per_second", True), ("client_cpu_seconds", False)):
            print(f"{side} {figure}: {standings((one.summary[side][figure], higher) for one in comparisons)}")


if __name__ == "__main__":
    typer.run(main)
