"""Start-up of the `generate` command (a script that prints figures, not a test).

Runs the whole command N times warm (after one untimed run that fills numba's cache) and prints, as
median and min:
  - time to the first byte on stdout, and the CPU seconds the process had used by then (its utime + stime
    from /proc, read the moment the byte arrives: less sensitive than wall time to other jobs on the host);
  - the whole command's wall and CPU seconds;
then a breakdown of one more run under `python -X importtime`: its time to the first byte, how much of it
went to imports, the heaviest top-level imports (cumulative, wherever in the run they happen, lazy ones
included) and the heaviest packages.

    .venv/bin/python benchmarks/generate_startup.py [--runs 5] [--rows 0] [--top 12] [--json PATH]
        [-- extra generate flags]

Default flags: cpu-only, seed 123, scale 4000, three hours (4.32M rows), --fields long, to stdout; --rows N
caps it with --max-data-points (0: the whole range). CPU seconds come in the kernel's ticks (10 ms). "Warm" is after `make setup` (which builds cpu-only's kernels ahead
of time; it says which kernels ran) and one untimed run (bytecode, numba's cache, the page cache).
The benchmark record (every run, medians, the import breakdown) goes to --json (default
results/<UTC time>-generate-startup.json).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

from benchmarks.alternate import alternate, write_record
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.tsbs import kernel_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = ["--seed", "123", "--scale", "4000", "--fields", "long", "--timestamp-end", "2016-01-01T03:00:00Z",
         "--file", "-"]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The printed name of each figure of a run, and its name in the benchmark record.
FIGURES = {"first byte": "first_byte_seconds", "first byte CPU": "first_byte_cpu_seconds",
           "whole command": "seconds", "whole command CPU": "client_cpu_seconds"}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a running process (all its threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def run_once(command: list[str], stderr=None, env: dict | None = None) -> Measurement:
    """One run: wall and CPU seconds to the first byte on stdout, and of the whole command."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, env=env)
    first = process.stdout.read(1)
    first_byte = time.perf_counter() - started
    if not first:
        raise SystemExit(f"no output from {' '.join(command)}")
    first_byte_cpu = cpu_seconds(process.pid)
    while process.stdout.read(1 << 20):
        pass
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"exit code {process.returncode} from {' '.join(command)}")
    return Measurement(seconds=time.perf_counter() - started, client_cpu_seconds=usage.ru_utime + usage.ru_stime,
                       extra={"first_byte_seconds": first_byte, "first_byte_cpu_seconds": first_byte_cpu})


def import_times(command: list[str]) -> tuple[list[tuple[int, str, float]], float]:
    """(depth, module, cumulative seconds) of every import of one run under ``python -X importtime``, in the
    order the interpreter finished them (an import's own imports come before it), and that run's seconds
    to its first byte."""
    with tempfile.TemporaryFile("w+") as log:  # a pipe could fill while stdout is read, and block the run
        first_byte = run_once([command[0], "-X", "importtime", *command[1:]], stderr=log).extra["first_byte_seconds"]
        log.seek(0)
        lines = log.read().splitlines()
    # "import time: self [us] | cumulative | imported package"; two spaces of indentation per level.
    line = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| ( *)(\S+)$")
    imports = [(len(match.group(2)) // 2, match.group(3), int(match.group(1)) / 1e6)
               for match in map(line.match, lines) if match]
    return imports, first_byte


def print_breakdown(imports: list[tuple[int, str, float]], first_byte: float, top: int) -> dict:
    """Print where the run's time to its first byte went; returns the same figures for the record."""
    top_level = [(name, seconds) for depth, name, seconds in imports if depth == 0]
    total = sum(seconds for _, seconds in top_level)
    print(f"one more run under python -X importtime (slower): first byte after {first_byte:.3f} s, of which "
          f"imports {total:.3f} s (cumulative) and {first_byte - total:.3f} s the rest (the interpreter, numba's "
          f"cached kernels, option parsing, the first chunk)")
    print("  heaviest top-level imports (whoever imported them, lazy ones included):")
    heaviest = sorted(top_level, key=lambda item: -item[1])[:top]
    for name, seconds in heaviest:
        print(f"    {seconds:6.3f} s  {name}")
    # A package counts from its first import, with whatever it imports that was not loaded before.
    packages = {}
    for _, name, seconds in imports:
        if "." not in name and not name.startswith("_"):
            packages.setdefault(name, seconds)
    print("  heaviest packages, at any depth (one's time includes the packages it imports first):")
    heaviest_packages = sorted(packages.items(), key=lambda item: -item[1])[:top]
    for name, seconds in heaviest_packages:
        print(f"    {seconds:6.3f} s  {name}")
    return {"first_byte_seconds": first_byte, "imports_seconds": total, "top_level_imports": dict(heaviest),
            "packages": dict(heaviest_packages)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed runs (after one untimed warm-up)")
    parser.add_argument("--rows", type=int, default=0, help="--max-data-points of each run; 0: the whole range")
    parser.add_argument("--top", type=int, default=12, help="imports listed in the breakdown")
    parser.add_argument("--json", help="the benchmark record's path")
    parser.add_argument("extra", nargs="*", help="more `generate` flags (after --)")
    options = parser.parse_args()
    command = [sys.executable, "-m", "harness", "generate", *FLAGS, *options.extra]
    if options.rows:
        command.append(f"--max-data-points={options.rows}")
    record = BenchmarkRecord("generate-startup", parameters=dict(runs=options.runs, rows=options.rows,
                                                                 command=["python", *command[1:]]))

    print(f"{len(os.sched_getaffinity(0))} CPUs available, load average {os.getloadavg()[0]:.1f}, "
          f"Python {platform.python_version()}")
    print("command:", " ".join(["python", *command[1:]]))
    record.extra["cpu_only_kernels"] = kernel_cache.describe()
    print(f"cpu-only kernels: {record.extra['cpu_only_kernels']}")
    # Warm-up (round 0): numba's cache, the page cache, and Python's bytecode cache (written even where the
    # environment says not to, as Python does by default).
    warm_up_env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    comparison = alternate({"generate": lambda round_number: run_once(command, env=None if round_number else
                                                                      warm_up_env)}, options.runs, warm_up=True)
    record.comparisons.append(comparison)
    summary = comparison.summary["generate"]
    for printed, figure in FIGURES.items():
        values = [one.measurements["generate"].figures()[figure] for one in comparison.counted_rounds()]
        print(f"{printed:18}: median {summary[figure].median:6.3f} s, min {summary[figure].min:6.3f} s"
              f"  ({', '.join(f'{value:.3f}' for value in values)})")

    record.extra["importtime"] = print_breakdown(*import_times(command), options.top)
    write_record(record, options.json)


if __name__ == "__main__":
    main()
