"""The native-server commands (make native-up/down/status), results records and the compare command."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from harness.bench import BenchOptions, run_bench
from harness.results import PhaseResult, comparison_table, format_phase, load_results, system_info

PORTS = ["--http-port", "19200", "--ilp-port", "19209", "--pg-port", "18922", "--min-port", "19203",
         "--sink-port", "19210"]


def native(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.native", *args], capture_output=True, text=True,
                          timeout=timeout)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_native_up_status_down(tmp_path):
    root = ["--root", str(tmp_path / "root")]
    up = native("up", *root, *PORTS)
    try:
        assert up.returncode == 0, up.stderr
        assert "QuestDB 9.3.4 up" in up.stdout
        assert listening(19200) and listening(19209) and listening(19210)
        status = native("status", *root, *PORTS)
        assert status.returncode == 0 and "healthy" in status.stdout
        # The server runs with the project's configuration.
        metrics = subprocess.run(["curl", "-s", "http://127.0.0.1:19203/metrics"], capture_output=True, text=True)
        assert "questdb" in metrics.stdout
        assert (tmp_path / "root" / "conf" / "server.conf").read_text().count("shared.worker.count=6") == 1
    finally:
        down = native("down", *root, *PORTS)
    assert down.returncode == 0
    assert not listening(19200) and not listening(19210)
    assert native("status", *root, *PORTS).returncode == 3


def test_native_up_on_a_busy_port_is_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 19300))
        holder.listen()
        result = native("up", "--questdb-only", "--root", str(tmp_path / "root"), "--http-port", "19300",
                        "--ilp-port", "19309", "--pg-port", "18932", "--min-port", "19303")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "19300" in result.stderr and "Traceback" not in result.stderr


def test_format_phase_is_the_original_format():
    text = format_phase("Serialized", PhaseResult(rows=10_000_000, bytes=int(4652.50 * 2**20), seconds=8.57))
    assert text == (
        "Serialized:\n"
        "  10000000 rows in 8.57s: 1.17 mil rows/sec.\n"
        "  ILP Buffer size: 4652.50 MiB: 542.88 MiB/sec."
    )


def test_system_info_names_the_machine():
    info = system_info()
    assert info["cpu_count"] >= 1 and info["cpu_affinity"]
    assert info["versions"]["questdb_client"] == "6.0.0"
    assert info["cpu_model"]


def test_compare_prints_one_row_per_file_with_ratios(tmp_path):
    paths = []
    for workers in (None, 2):
        path = tmp_path / f"run-{workers}.json"
        run_bench(BenchOptions(scale=50, seed=1, row_count=5_000, worker_chunk_row_count=500, workers=workers,
                               reporting_period=0, results=str(path)), out=open("/dev/null", "w"))
        paths.append(str(path))
    result = subprocess.run([sys.executable, "-m", "harness", "compare", *paths], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[0] == "file" and len(lines) == 4
    assert "run-None.json" in lines[2] and lines[2].rstrip().endswith("1.00x")
    assert "run-2.json" in lines[3]
    table = comparison_table(load_results(paths))
    assert table == result.stdout.rstrip("\n")


def test_compare_refuses_a_file_that_is_not_a_result(tmp_path):
    bogus = tmp_path / "bogus.json"
    bogus.write_text(json.dumps({"hello": 1}))
    result = subprocess.run([sys.executable, "-m", "harness", "compare", str(bogus)], capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "bogus.json" in result.stderr


def test_a_failed_run_still_leaves_a_record(tmp_path):
    path = tmp_path / "failed.json"
    with pytest.raises(Exception):
        run_bench(BenchOptions(row_count=1_000, send=True, host="127.0.0.1", http_port=1, ilp_port=1,
                               results=str(path), reporting_period=0), out=open("/dev/null", "w"))
    record = json.loads(path.read_text())
    assert record["status"] == "failed" and "127.0.0.1:1" in record["error"]
