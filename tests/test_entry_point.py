"""The process's entry point (`python -m harness`, the `harness` script), each case in a process of its own:
numpy imported under it starts no BLAS threads (they spin on the cores the server needs), a thread count the
user set is kept, a command's outcome and exit code are main's, and a refusal ends in its exit code every time,
never in a native library's abort, with both cores loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

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


# Refusals a run makes of a file the whole way through, both cores taken by spinning processes beside it: 50 of them.
REFUSALS = 50
SPIN = "while True: pass"


@pytest.mark.slow
@pytest.mark.serial
def test_a_refusal_ends_with_its_exit_code_every_time_under_load(questdb, tmp_path):
    # A ragged line deep in a file: found by the reading as the run starts, the senders and the reader's threads
    # made, then refused. Native threads still running at exit once made a C++ library abort (exit 134).
    lines = ["ts,a,b"] + [f"2024-01-01T00:{minute:02d}:{second:02d},{index},{index * 0.5}"
                          for index, (minute, second) in enumerate((m, s) for m in range(60) for s in range(60))]
    lines[3000] += ",extra"
    data = tmp_path / "ragged.csv"
    data.write_text("\n".join(lines) + "\n")
    server = ["--host", questdb.host, "--http-port", str(questdb.http_port), "--ilp-port", str(questdb.ilp_port),
              "--server-metrics-port", str(questdb.server.min_port), "--reporting-period", "0"]

    def refuse(index: int) -> subprocess.CompletedProcess:
        return run_cli("bench", "--send", "--data", str(data), *server, "--worker-chunk-row-count", "500",
                       "--results", str(tmp_path / f"r{index}.json"), timeout=120)

    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(os.cpu_count() or 2)]
    try:
        with ThreadPoolExecutor(2) as pool:  # two at a time: the runs load the cores too
            results = list(pool.map(refuse, range(REFUSALS)))
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert [result.returncode for result in results] == [2] * REFUSALS, [
        result.stderr for result in results if result.returncode != 2][:1]
    for result in results:
        assert_one_line_error(result, 2, "line 3001 has 4 fields, the header 3")
    assert questdb.client.show_columns("ragged") is None
