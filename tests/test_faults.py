"""Faults a long run meets, each ending cleanly: a server that stops reading, a server that drops the
connection while chunks are still being generated, a busy metrics port, and Ctrl-C in every phase, with
no worker thread or connection left behind in the process."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading

import pytest



class Listener:
    """A TCP server on 127.0.0.1 that accepts connections and then either never reads (``frozen``: a
    stopped server whose socket buffers fill) or closes each one at once (``closing``)."""

    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.socket.accept()
            except (TimeoutError, OSError):
                continue
            if self.behaviour == "frozen":
                self.held.append(connection)
            else:
                connection.close()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        for connection in self.held:
            connection.close()
        self.socket.close()


@pytest.fixture
def listener(request):
    server = Listener(request.param)
    yield server
    server.close()


def bench(tmp_path, port: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "harness", "bench", "--send", "--target", "sink", "--host", "127.0.0.1",
               "--ilp-port", str(port), "--reporting-period", "0", "--results", str(tmp_path / "r.json"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def assert_failed_in_one_line(result: subprocess.CompletedProcess, code: int, fragment: str, tmp_path) -> dict:
    assert result.returncode == code, (result.returncode, result.stdout[-2000:], result.stderr)
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert fragment in result.stderr, result.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "failed" and fragment in record["error"]
    return record


@pytest.mark.parametrize("listener", ["frozen"], indirect=True)
@pytest.mark.parametrize("workers", [(), ("--workers", "2")])
def test_a_server_that_stops_reading_ends_the_run(tmp_path, listener, workers):
    """ILP over TCP has no timeout: without --flush-timeout this run would block in a flush for ever."""
    result = bench(tmp_path, listener.port, "--row-count", "2000000", "--flush-timeout", "2", *workers)
    record = assert_failed_in_one_line(result, 1, "did not finish in 2s (--flush-timeout)", tmp_path)
    assert record["phases"]["send"]["rows"] < 2_000_000


@pytest.mark.parametrize("listener", ["closing"], indirect=True)
def test_a_dropped_connection_while_streaming_ends_the_run(tmp_path, listener):
    """Two workers fail while the generator (large hosts count: slower than the workers) still produces:
    every worker must get its end, not wait for chunks that will never come."""
    result = bench(tmp_path, listener.port, "--stream", "--workers", "2", "--scale", "100000",
                   "--row-count", "20000000", "--worker-chunk-row-count", "20000", timeout=90)
    assert_failed_in_one_line(result, 1, f"127.0.0.1:{listener.port}", tmp_path)


def test_a_busy_metrics_port_is_one_line_and_a_record(tmp_path, socat_sink):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = bench(tmp_path, socat_sink.port, "--row-count", "1000", "--metrics-port", str(port))
    assert_failed_in_one_line(result, 2, f"--metrics-port {port}", tmp_path)


# --- Ctrl-C in every phase: the CLI's exit, and what the process keeps afterwards ---------------------

@pytest.mark.parametrize("phase, args", [
    ("serialize", ["--row-count", "5000000"]),
    ("serialize", ["--row-count", "5000000", "--workers", "2"]),
    ("send", ["--send", "--target", "sink", "--row-count", "100000000", "--stream"]),
    ("send", ["--send", "--target", "sink", "--row-count", "100000000", "--stream", "--workers", "2"]),
])
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_in_each_phase_ends_the_run_there(tmp_path, socat_sink, phase, args, signum, code):
    """The signal ends the run in the phase it arrived in, its record interrupted with the rows done so far:
    fewer than asked (the run did not just finish). ``communicate``'s timeout only guards against a hang."""
    command = [sys.executable, "-m", "harness", "bench", "--host", socat_sink.host, "--ilp-port",
               str(socat_sink.port), "--reporting-period", "0.2", "--results", str(tmp_path / "r.json"), *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:  # until the phase shows progress
            fields = line.split(",")
            if len(fields) == 8 and fields[1] == phase and float(fields[3]) > 0:
                break
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == code, (process.returncode, stderr)
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "interrupted"
    asked = int(args[args.index("--row-count") + 1])
    assert phase in record["phases"] and 0 < record["phases"][phase]["rows"] < asked


# Runs in a process of its own, so that the interrupt can never reach the test session: the library call is
# interrupted like Ctrl-C does, then the process reports the threads and connections it still has.
INTERRUPTED_RUN = """
import json, sys, threading, time
import psutil
from harness.bench import BenchOptions, run_bench
options = BenchOptions(**json.loads(sys.argv[1]))
try:
    run_bench(options, out=sys.stderr)
    outcome = "finished"
except KeyboardInterrupt:
    outcome = "interrupted"
deadline = time.monotonic() + 5
while True:
    threads = [thread.name for thread in threading.enumerate() if thread is not threading.main_thread()]
    connections = [c for c in psutil.Process().net_connections("tcp") if c.raddr and c.raddr.port == options.ilp_port]
    if (not threads and not connections) or time.monotonic() > deadline:
        break
    time.sleep(0.1)
print(json.dumps({"outcome": outcome, "threads": threads, "connections": len(connections)}))
"""


@pytest.mark.parametrize("overrides", [dict(), dict(workers=2), dict(workers=2, stream=True)])
def test_an_interrupted_send_leaves_no_thread_or_connection(tmp_path, socat_sink, overrides):
    options = dict(send=True, target="sink", host=socat_sink.host, ilp_port=socat_sink.port, scale=1000,
                   row_count=100_000_000 if overrides.get("stream") else 3_000_000, reporting_period=0.2,
                   results=str(tmp_path / "r.json"), **overrides)
    process = subprocess.Popen([sys.executable, "-c", INTERRUPTED_RUN, json.dumps(options)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:  # until rows are being sent
            fields = line.split(",")
            if len(fields) == 8 and fields[1] == "send" and float(fields[3]) > 0:
                break
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert stdout, stderr[-2000:]
    left = json.loads(stdout)
    assert left == {"outcome": "interrupted", "threads": [], "connections": 0}, left
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "interrupted" and record["phases"]["send"]["rows"] > 0
