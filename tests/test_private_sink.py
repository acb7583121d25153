"""A run into the no-op sink where nothing listens: ``tune``, ``bench --data --target sink`` and the notebook API
start a private sink on a free loopback port (socat; a child Python process where socat is missing), send
into it, record it, and stop it however they end (SIGINT, SIGTERM; killed with the harness on SIGKILL); where
something listens, they use it and start nothing. Real socat, real processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest

import harness
from harness.run.tune import AS_IS, Setting
from harness.servers.process import port_in_use
from helpers import free_port, run_cli

pytestmark = pytest.mark.server  # the runs start their sinks themselves
ROWS = 20_000
STARTED = re.compile(r"^nothing listened at (\S+): started a private no-op sink \((.+)\) on 127\.0\.0\.1:(\d+)$",
                     re.MULTILINE)


def frame(rows: int = ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"ts": pd.date_range("2024-05-01", periods=rows, freq="s"),
                         "host": [f"host_{index % 50}" for index in range(rows)],
                         "value": rng.random(rows)})


@pytest.fixture
def parquet_file(tmp_path) -> str:
    path = tmp_path / "trades.parquet"
    frame().to_parquet(path, row_group_size=5_000)
    return str(path)


@pytest.fixture
def csv_file(tmp_path) -> str:
    path = tmp_path / "trades.csv"
    frame().to_csv(path, index=False)
    return str(path)


def started_sink(stdout: str, asked: int) -> tuple[str, int]:
    """The one private sink the run said it started, for ``asked`` (where nothing listened): its kind, its port."""
    found = STARTED.findall(stdout)
    assert len(found) == 1, stdout
    (where, kind, port), = found
    assert where == f"localhost:{asked}", stdout
    assert stdout.count(f"stopped the private no-op sink on 127.0.0.1:{port}\n") == 1, stdout
    return kind, int(port)


def sink_processes(port: int) -> list[psutil.Process]:
    """socat or the Python sink listening on ``port`` (by their command lines)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or ())
        python_sink = "harness.servers.python_sink" in command and f"--port {port}" in command
        if f"TCP-LISTEN:{port}," in command or python_sink:
            found.append(process)
    return found


def assert_gone(*ports: int, within: float = 0.0) -> None:
    """No sink of ours runs on these ports and nothing listens there (after up to ``within`` seconds)."""
    deadline = time.monotonic() + within
    while True:
        left = [(port, [process.pid for process in sink_processes(port)], port_in_use(port)) for port in ports]
        if not any(processes or listening for _, processes, listening in left):
            return
        if time.monotonic() >= deadline:
            pytest.fail(f"left behind (port, sink pids, listening): {left}")
        time.sleep(0.1)


def without_socat() -> dict:
    """The environment with a PATH that holds no socat (this interpreter is named by its full path)."""
    return {**os.environ, "PATH": str(Path(sys.executable).parent)}


@pytest.mark.slow
def test_tune_starts_a_private_sink_where_nothing_listens(csv_file, tmp_path):
    asked = free_port()
    result = run_cli("tune", "--data", csv_file, "--sink-port", str(asked), "--rounds", "1", "--budget", "60",
                     "--results", str(tmp_path / "tune.json"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Recommendation: " in result.stdout and result.stderr == ""
    kind, port = started_sink(result.stdout, asked)
    assert kind == "socat" and port != asked
    parameters = json.loads((tmp_path / "tune.json").read_text())["parameters"]
    assert parameters["private_sink"] == "socat" and parameters["ilp_port"] == port
    assert parameters["sender_address"] == f"127.0.0.1:{port}"
    # The code sends where the user's own setting points, never to the private sink.
    assert "addr=localhost:9009;" in json.loads((tmp_path / "tune.json").read_text())["extra"]["code"]
    assert_gone(port, asked)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["socat", "python"])
def test_bench_data_into_a_private_sink_counts_every_row_and_stops_it(parquet_file, tmp_path, kind):
    """socat where it is installed; a child Python process where it is not (no socat on PATH)."""
    asked = free_port()
    result = run_cli("bench", "--send", "--data", parquet_file, "--target", "sink", "--ilp-port", str(asked),
                     "--results", str(tmp_path / "r.json"), timeout=60,
                     env=without_socat() if kind == "python" else None)
    assert result.returncode == 0, result.stderr
    said, port = started_sink(result.stdout, asked)
    assert said == ("socat" if kind == "socat" else "a Python process: socat is not installed")
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "ok" and record["phases"]["send"]["rows"] == ROWS
    parameters = record["parameters"]
    assert parameters["private_sink"] == kind and parameters["ilp_port"] == port
    assert parameters["host"] == "127.0.0.1" and parameters["sender_address"] == f"127.0.0.1:{port}"
    assert_gone(port, asked)


def test_what_listens_is_used_and_no_sink_started(parquet_file, tmp_path, socat_sink, capsys):
    record = harness.measure(parquet_file, target="sink", host="localhost", ilp_port=socat_sink.port,
                             results=str(tmp_path / "r.json"), sample_interval=0)
    out = capsys.readouterr().out
    assert "private no-op sink" not in out
    assert record.phases["send"].rows == ROWS
    assert record.parameters["private_sink"] is None and record.parameters["ilp_port"] == socat_sink.port


@pytest.mark.slow
def test_the_notebook_functions_start_and_stop_a_private_sink(tmp_path, capsys):
    asked = free_port()
    record = harness.measure(frame(5_000), table="api_sink", target="sink", host="localhost", ilp_port=asked,
                             results=str(tmp_path / "r.json"), sample_interval=0)
    kind, port = started_sink(capsys.readouterr().out, asked)
    assert kind == "socat" and record.parameters["private_sink"] == "socat"
    assert record.parameters["ilp_port"] == port and record.phases["send"].rows == 5_000
    assert_gone(port, asked)
    sweep = harness.tune(frame(5_000), sink_port=asked, host="localhost", rounds=1, budget=60, quiet=True,
                         results=str(tmp_path / "tune.json"),
                         settings=[Setting(AS_IS, {}), Setting("2 workers", {"workers": 2})])
    assert sweep.parameters["private_sink"] == "socat" and sweep.parameters["ilp_port"] != asked
    assert all(summary["rows"].median == 5_000 for summary in sweep.comparisons[0].summary.values())
    assert_gone(sweep.parameters["ilp_port"], asked)


def sigint_default() -> None:
    """SIGINT back to its default in the child: a suite started in the background ignores it (test_faults.py)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("signum, code, kind", [(signal.SIGINT, 130, "socat"), (signal.SIGTERM, 143, "socat"),
                                                (signal.SIGKILL, -9, "socat"), (signal.SIGKILL, -9, "python")],
                         ids=["SIGINT", "SIGTERM", "SIGKILL", "SIGKILL-python"])
def test_a_stopped_sweep_leaves_no_sink_behind(tmp_path, signum, code, kind):
    """Signalled mid-sweep, the sweep stops its sink as it ends; SIGKILLed, its sink dies with it."""
    path = tmp_path / "big.parquet"
    frame(200_000).to_parquet(path)
    asked = free_port()
    command = [sys.executable, "-m", "harness", "tune", "--data", str(path), "--sink-port", str(asked), "--rounds",
               "50", "--budget", "600", "--results", str(tmp_path / "tune.json")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=sigint_default, env=without_socat() if kind == "python" else None)
    try:
        first = process.stdout.readline()
        match = STARTED.match(first.rstrip("\n"))
        assert match and (match.group(2) == "socat") == (kind == "socat"), first + process.stderr.read()
        port = int(match.group(3))
        assert sink_processes(port)
        for line in process.stdout:  # a trial under way
            if line.startswith("  round warm-up: "):
                break
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == code, stderr
    if signum != signal.SIGKILL:
        assert stderr == f"error: {'interrupted' if signum == signal.SIGINT else 'terminated'}\n", stderr
        assert stdout.endswith(f"stopped the private no-op sink on 127.0.0.1:{port}\n"), stdout
        assert json.loads((tmp_path / "tune.json").read_text())["extra"]["status"] == "interrupted"
    assert_gone(port, asked, within=5.0)
