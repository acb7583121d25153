"""The process's entry point (`python -m harness`, the `harness` script), each case in a process of its own:
numpy imported under it starts no BLAS threads (they spin on the cores the server needs), a thread count the
user set is kept, and a command's outcome and exit code are main's."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import assert_one_line_error, run_cli

# Stands in for main() in a process of its own (main is what the command runs; the entry point is under test):
# imports numpy as the commands do, then prints the process's threads and the BLAS setting it saw.
PROBE = """
import os
from harness import cli

def probe():
    import numpy  # noqa: F401  (OpenBLAS starts its threads as numpy loads)
    print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS"))

cli.main = probe
cli.entry_point()
"""


def run_probe(**env: str) -> tuple[int, str]:
    environment = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"} | env
    finished = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=environment,
                              timeout=60, check=True)
    threads, setting = finished.stdout.split()
    return int(threads), setting


def test_numpy_starts_no_blas_threads_under_the_entry_point():
    assert run_probe() == (1, "1")


def test_a_blas_thread_count_the_user_set_is_kept():
    threads, setting = run_probe(OPENBLAS_NUM_THREADS="2")
    assert setting == "2"
    assert threads == min(2, len(os.sched_getaffinity(0)))


def test_a_command_through_the_entry_point_keeps_its_output_and_exit_code():
    ok = run_cli("version", timeout=60)
    assert ok.returncode == 0 and ok.stdout.strip()
    assert_one_line_error(run_cli("generate", "--scale", "0", timeout=60), 2)
