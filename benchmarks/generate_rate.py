"""Benchmark of the generator (a script that prints figures, not a test).

Prints, for the TSBS cpu-only data (or, with --use-case devops, the devops data) at scale 4000:
  1. DataFrame generation rate on one core (the process pinned to a single CPU), double and long;
  2. the `generate` command's ILP output rate to /dev/null (a fresh process, start-up included, and
     without it: the time of a one-row run subtracted);
  3. the peak RSS of generating many rows chunk by chunk;
  4. with --tsbs-binary PATH (a tsbs_generate_data you built yourself), the Go tool's rate for the same
     flags in the same run, the ratio, and whether both print the same bytes (every row, by md5).

    .venv/bin/python benchmarks/generate_rate.py [--use-case devops] [--rows 10000000] [--rss-rows 100000000]
        [--tsbs-binary PATH] [--repeat 3] [--json PATH]

With --repeat N each whole command runs N times, ours and Go's alternating, and the median and best are
printed. It also says which cpu-only kernels `generate` runs: the ahead-of-time build (`make setup`) or
numba's just-in-time ones. The benchmark record (every run, medians, ratios to Go, the byte check) goes to
--json (default results/<UTC time>-generate-rate.json).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import subprocess
import sys
import time

from benchmarks.alternate import alternate, write_record
from harness.records.benchmark_record import BenchmarkRecord, Comparison, Measurement

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dataframe_generation(rows: int, fields: str, chunk_rows: int, use_case: str = "cpu-only") -> Measurement:
    from harness.tsbs.cpu_only import generator as cpu_only
    from harness.tsbs.devops import generator as devops
    from harness.tsbs.use_cases import make_spec

    def frames(spec, chunk_rows):
        if use_case == "devops":
            return (frame for chunk in devops.chunks(spec, chunk_rows, fields) for frame in chunk.values())
        return cpu_only.frames(spec, chunk_rows, fields)

    spec = make_spec(use_case=use_case, seed=1, scale=4000, timestamp_end=None, row_limit=rows)
    next(frames(make_spec(use_case=use_case, seed=1, scale=10, timestamp_end=None, row_limit=10), 10))  # JIT warm-up
    started = time.perf_counter()
    produced = sum(len(frame) for frame in frames(spec, chunk_rows))
    assert produced == rows
    return Measurement(seconds=time.perf_counter() - started, rows=rows)


TSBS_FLAGS = ["--use-case=cpu-only", "--seed=1", "--scale=4000", "--timestamp-start=2016-01-01T00:00:00Z",
              "--timestamp-end=2017-01-01T00:00:00Z", "--log-interval=10s", "--format=questdb"]


def ours(rows: int, fields: str) -> list[str]:
    return [sys.executable, "-m", "harness", "generate", *TSBS_FLAGS, f"--max-data-points={rows}", "--fields", fields]


def theirs(binary: str, rows: int) -> list[str]:
    return [binary, *TSBS_FLAGS, f"--max-data-points={rows}"]


def command_seconds(command: list[str]) -> float:
    """Wall seconds of one whole command writing to /dev/null (process start included)."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(command, check=True, cwd=ROOT, stdout=sink)
    return time.perf_counter() - started


def whole_command(command: list[str], rows: int) -> Measurement:
    return Measurement(seconds=command_seconds(command), rows=rows)


def report_command(label: str, comparison: Comparison, variant: str, start_up: str, rows: int) -> None:
    """Print a command's rows/s (median and best of its runs), and the same without its start-up (the
    median of its one-row runs)."""
    seconds = comparison.summary[variant]["seconds"]
    start_up_seconds = comparison.summary[start_up]["seconds"].median
    print(f"{label} > /dev/null: {rows} rows in {seconds.median:.2f} s (median of "
          f"{len(comparison.counted_rounds())}; best {seconds.min:.2f} s), {rows / seconds.median / 1e6:.2f} M rows/s; "
          f"without its {start_up_seconds:.2f} s start-up: {rows / (seconds.median - start_up_seconds) / 1e6:.2f} M rows/s")


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
        "from harness.tsbs import cpu_only, devops; from harness.tsbs.use_cases import make_spec\n"
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
    parser.add_argument("--json", help="the benchmark record's path")
    options = parser.parse_args()
    TSBS_FLAGS[0] = f"--use-case={options.use_case}"
    record = BenchmarkRecord("generate-rate", parameters={
        name: value for name, value in vars(options).items() if name != "json"})
    rows = options.rows

    cpus = sorted(os.sched_getaffinity(0))
    print(f"host: {record.system['cpu_model']}, {len(cpus)} CPUs available, Python {platform.python_version()}")
    os.sched_setaffinity(0, {cpus[-1]})

    def dataframes(fields: str):
        def measure(_: int) -> Measurement:
            measurement = dataframe_generation(rows, fields, options.chunk_rows, options.use_case)
            print(f"DataFrame generation, 1 core, {fields:6}: {rows} rows, "
                  f"{measurement.figures()['rows_per_second'] / 1e6:.2f} M rows/s")
            return measurement
        return measure

    record.comparisons.append(alternate({"double": dataframes("double"), "long": dataframes("long")}, 1,
                                        name="DataFrame generation, 1 core", parameters={"cpus": [cpus[-1]]}))
    os.sched_setaffinity(0, set(cpus))
    cores = f"{len(cpus)} cores"
    from harness.tsbs import kernel_cache

    record.extra["cpu_only_kernels"] = kernel_cache.describe()
    print(f"cpu-only kernels: {record.extra['cpu_only_kernels']}")
    for fields in ("long", "double"):
        ours_name, go_name = f"generate --fields {fields}", "tsbs_generate_data"
        # name: (command, rows it prints); a command's one-row run is its start-up.
        commands = {ours_name: (ours(rows, fields), rows), f"{ours_name}, 1 row": (ours(1, fields), 1)}
        if fields == "long" and options.tsbs_binary:
            commands |= {go_name: (theirs(options.tsbs_binary, rows), rows),
                         f"{go_name}, 1 row": (theirs(options.tsbs_binary, 1), 1)}
        # Each round runs every command once, in the same order.
        comparison = alternate({name: lambda _, run=run: whole_command(*run) for name, run in commands.items()},
                               options.repeat, name=f"whole command, --fields {fields}", rotate=False,
                               baseline=go_name if go_name in commands else None, parameters={"fields": fields})
        record.comparisons.append(comparison)
        report_command(f"generate --fields {fields:6}, {cores}", comparison, ours_name, f"{ours_name}, 1 row", rows)
        if go_name in commands:
            report_command(f"tsbs_generate_data    , {cores}", comparison, go_name, f"{go_name}, 1 row", rows)
            ours_seconds, go_seconds = comparison.summary[ours_name]["seconds"], comparison.summary[go_name]["seconds"]
            print(f"ours / Go = {1 / ours_seconds.ratio:.2f} by medians, {go_seconds.min / ours_seconds.min:.2f} "
                  f"best vs best (whole commands)")
            identical = output_md5(ours(rows, "long")) == output_md5(theirs(options.tsbs_binary, rows))
            record.extra["same_bytes_as_tsbs_generate_data"] = identical
            print(f"same bytes as tsbs_generate_data, all {rows} rows (md5): {identical}")
    if options.rss_rows:
        def peak_rss(_: int) -> Measurement:
            rss, seconds = peak_rss_mib(options.rss_rows, options.use_case)
            print(f"peak RSS generating {options.rss_rows} rows chunk by chunk: {rss:.0f} MiB ({seconds:.1f} s)")
            return Measurement(seconds=seconds, rows=options.rss_rows, peak_rss_bytes=round(rss * 1024 * 1024))
        record.comparisons.append(alternate({"generate chunk by chunk": peak_rss}, 1, name="peak RSS"))
    write_record(record, options.json)


if __name__ == "__main__":
    main()
