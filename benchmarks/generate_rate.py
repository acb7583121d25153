"""Benchmark of the generator (a script that prints figures, not a test).

Prints, for the TSBS cpu-only data (or, with --use-case devops, the devops data) at scale 4000:
  1. DataFrame generation rate on one core (the process pinned to a single CPU), double and long;
  2. the `generate` command's ILP output rate to /dev/null (a fresh process, start-up included, and
     without it: the time of a one-row run subtracted);
  3. the peak RSS of generating many rows chunk by chunk;
  4. with --tsbs-binary PATH (a tsbs_generate_data you built yourself), the Go tool's rate for the same
     flags in the same run, the ratio, and whether both print the same bytes (every row, by md5).

    .venv/bin/python benchmarks/generate_rate.py [--use-case devops] [--rows 10000000] [--rss-rows 100000000]
        [--tsbs-binary PATH] [--repeat 3]

With --repeat N each whole command runs N times, ours and Go's alternating, and the median and best are
printed. It also says which cpu-only kernels `generate` runs: the ahead-of-time build (`make setup`) or
numba's just-in-time ones.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import platform
import subprocess
import sys
import time

from harness.results import system_info

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dataframe_rate(rows: int, fields: str, chunk_rows: int, use_case: str = "cpu-only") -> float:
    from harness.tsbs import cpu_only, devops
    from harness.tsbs.params import make_spec

    def frames(spec, chunk_rows):
        if use_case == "devops":
            return (frame for chunk in devops.chunks(spec, chunk_rows, fields) for frame in chunk.values())
        return cpu_only.frames(spec, chunk_rows, fields)

    spec = make_spec(use_case=use_case, seed=1, scale=4000, timestamp_end=None, row_limit=rows)
    next(frames(make_spec(use_case=use_case, seed=1, scale=10, timestamp_end=None, row_limit=10), 10))  # JIT warm-up
    started = time.perf_counter()
    produced = sum(len(frame) for frame in frames(spec, chunk_rows))
    assert produced == rows
    return rows / (time.perf_counter() - started)


TSBS_FLAGS = ["--use-case=cpu-only", "--seed=1", "--scale=4000", "--timestamp-start=2016-01-01T00:00:00Z",
              "--timestamp-end=2017-01-01T00:00:00Z", "--log-interval=10s", "--format=questdb"]


def ours(rows: int, fields: str) -> list[str]:
    return [sys.executable, "-m", "harness", "generate", *TSBS_FLAGS, f"--max-data-points={rows}", "--fields", fields]


def theirs(binary: str, rows: int) -> list[str]:
    return [binary, *TSBS_FLAGS, f"--max-data-points={rows}"]


REPEAT = 1


def command_seconds(command: list[str]) -> float:
    """Wall seconds of one whole command writing to /dev/null (process start included)."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(command, check=True, cwd=ROOT, stdout=sink)
    return time.perf_counter() - started


def alternating(commands: list[list[str]]) -> list[list[float]]:
    """Each command's seconds over REPEAT rounds, the commands taking turns within each round."""
    runs: list[list[float]] = [[] for _ in commands]
    for _ in range(REPEAT):
        for seconds, command in zip(runs, commands):
            seconds.append(command_seconds(command))
    return runs


def report_command(label: str, runs: list[float], start_up: list[float], rows: int) -> tuple[float, float]:
    """Print a command's rows/s (median and best of its runs), and the same without its start-up (a run of one
    row); returns (median, best) rows/s."""
    seconds, best, start_up_seconds = statistics.median(runs), min(runs), statistics.median(start_up)
    print(f"{label} > /dev/null: {rows} rows in {seconds:.2f} s (median of {len(runs)}; best {best:.2f} s), "
          f"{rows / seconds / 1e6:.2f} M rows/s; without its {start_up_seconds:.2f} s start-up: "
          f"{rows / (seconds - start_up_seconds) / 1e6:.2f} M rows/s")
    return rows / seconds, rows / best


def output_md5(command: list[str]) -> str:
    digest = hashlib.md5()
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE) as process:
        while block := process.stdout.read(1 << 20):
            digest.update(block)
    if process.returncode:
        raise SystemExit(f"exit code {process.returncode} from {' '.join(command)}")
    return digest.hexdigest()


def peak_rss_mib(rows: int, use_case: str = "cpu-only") -> tuple[float, float]:
    """Peak RSS (MiB) and seconds of a fresh process that generates ``rows`` rows, 100k at a time.

    The peak is the child's own VmHWM: getrusage's ru_maxrss would carry this parent's peak across
    fork and exec, as Linux keeps it."""
    code = (
        "import re\n"
        "from harness.tsbs import cpu_only, devops; from harness.tsbs.params import make_spec\n"
        f"spec = make_spec(use_case={use_case!r}, seed=1, scale=4000, timestamp_end=None, row_limit={rows})\n"
        + ("n = sum(len(f) for c in devops.chunks(spec, 100_000, 'double') for f in c.values())\n"
           if use_case == "devops" else "n = sum(len(f) for f in cpu_only.frames(spec, 100_000, 'double'))\n") +
        f"assert n == {rows}, n\n"
        "print(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1))\n"
    )
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    return int(result.stdout.split()[-1]) / 1024, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rss-rows", type=int, default=100_000_000, help="0 to skip the RSS measurement")
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--tsbs-binary", help="a tsbs_generate_data binary to compare with, side by side")
    parser.add_argument("--use-case", choices=("cpu-only", "devops"), default="cpu-only")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each whole command; the median is printed")
    options = parser.parse_args()
    global REPEAT
    REPEAT = options.repeat
    TSBS_FLAGS[0] = f"--use-case={options.use_case}"

    cpus = sorted(os.sched_getaffinity(0))
    print(f"host: {system_info()['cpu_model']}, {len(cpus)} CPUs available, Python {platform.python_version()}")
    os.sched_setaffinity(0, {cpus[-1]})
    for fields in ("double", "long"):
        rate = dataframe_rate(options.rows, fields, options.chunk_rows, options.use_case)
        print(f"DataFrame generation, 1 core, {fields:6}: {options.rows} rows, {rate / 1e6:.2f} M rows/s")
    os.sched_setaffinity(0, set(cpus))
    cores = f"{len(cpus)} cores"
    from harness.tsbs import kernel_cache

    print(f"cpu-only kernels: {kernel_cache.describe()}")
    for fields in ("long", "double"):
        commands = [ours(options.rows, fields), ours(1, fields)]
        if fields == "long" and options.tsbs_binary:
            commands += [theirs(options.tsbs_binary, options.rows), theirs(options.tsbs_binary, 1)]
        runs = alternating(commands)
        rate, best = report_command(f"generate --fields {fields:6}, {cores}", runs[0], runs[1], options.rows)
        if len(runs) > 2:
            go_rate, go_best = report_command(f"tsbs_generate_data    , {cores}", runs[2], runs[3], options.rows)
            print(f"ours / Go = {rate / go_rate:.2f} by medians, {best / go_best:.2f} best vs best (whole commands)")
            identical = output_md5(ours(options.rows, "long")) == output_md5(theirs(options.tsbs_binary, options.rows))
            print(f"same bytes as tsbs_generate_data, all {options.rows} rows (md5): {identical}")
    if options.rss_rows:
        rss, seconds = peak_rss_mib(options.rss_rows, options.use_case)
        print(f"peak RSS generating {options.rss_rows} rows chunk by chunk: {rss:.0f} MiB ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
