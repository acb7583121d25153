"""Benchmark of the generator (a script that prints figures, not a test).

Prints, for the TSBS cpu-only data at scale 4000:
  1. DataFrame generation rate on one core (the process pinned to a single CPU), double and long;
  2. the `generate` command's ILP output rate to /dev/null (a fresh process, startup included);
  3. the peak RSS of generating many rows chunk by chunk.

    .venv/bin/python bench/generate_rate.py [--rows 10000000] [--rss-rows 100000000]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dataframe_rate(rows: int, fields: str, chunk_rows: int) -> float:
    from harness.tsbs import cpu_only
    from harness.tsbs.params import make_spec

    spec = make_spec(seed=1, scale=4000, timestamp_end=None, row_limit=rows)
    next(cpu_only.frames(make_spec(seed=1, scale=10, timestamp_end=None, row_limit=10), 10, fields))  # JIT warm-up
    started = time.perf_counter()
    produced = sum(len(frame) for frame in cpu_only.frames(spec, chunk_rows, fields))
    assert produced == rows
    return rows / (time.perf_counter() - started)


def generate_command_rate(rows: int, fields: str) -> float:
    command = [
        sys.executable, "-m", "harness", "generate", "--seed", "1", "--scale", "4000",
        "--timestamp-end", "2017-01-01T00:00:00Z", "--max-data-points", str(rows),
        "--fields", fields, "--file", "/dev/null",
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT)
    return rows / (time.perf_counter() - started)


def peak_rss_mib(rows: int) -> tuple[float, float]:
    """Peak RSS (MiB) and seconds of a fresh process that generates ``rows`` rows, 100k at a time."""
    code = (
        "from harness.tsbs import cpu_only; from harness.tsbs.params import make_spec\n"
        f"spec = make_spec(seed=1, scale=4000, timestamp_end=None, row_limit={rows})\n"
        "n = sum(len(f) for f in cpu_only.frames(spec, 100_000, 'double'))\n"
        f"assert n == {rows}, n\n"
    )
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rss-rows", type=int, default=100_000_000, help="0 to skip the RSS measurement")
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    options = parser.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    print(f"host: {platform.processor() or platform.machine()}, {len(cpus)} CPUs available, Python {platform.python_version()}")
    os.sched_setaffinity(0, {cpus[-1]})
    for fields in ("double", "long"):
        rate = dataframe_rate(options.rows, fields, options.chunk_rows)
        print(f"DataFrame generation, 1 core, {fields:6}: {options.rows} rows, {rate / 1e6:.2f} M rows/s")
    os.sched_setaffinity(0, set(cpus))
    for fields in ("long", "double"):
        rate = generate_command_rate(options.rows, fields)
        print(f"generate --fields {fields:6} > /dev/null, {len(cpus)} cores: {options.rows} rows, {rate / 1e6:.2f} M rows/s")
    if options.rss_rows:
        rss, seconds = peak_rss_mib(options.rss_rows)
        print(f"peak RSS generating {options.rss_rows} rows chunk by chunk: {rss:.0f} MiB ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
