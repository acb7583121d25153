"""Faults a long run meets, each ending cleanly: a server that stops reading, a server that drops the
connection while chunks are still being generated, the sink killed mid-send, a busy metrics port, and
SIGINT (Ctrl-C) or SIGTERM in every phase of every command (generate; bench's serialize, send and
validation; queries run; read), with no worker thread or connection left behind in the process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from harness.commands.bench import run_bench

from harness.run.bench_options import BenchOptions
from harness.servers.sink import SocatSink
from helpers import assert_one_line_error, free_port

# However a run is stopped, it ends within this many seconds (most end in under one): the bound.
ENDS_WITHIN_SECONDS = 30
SIGNALS = [pytest.param(signal.SIGINT, 130, "interrupted", id="SIGINT"),
           pytest.param(signal.SIGTERM, 143, "terminated", id="SIGTERM")]


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
    assert_one_line_error(result, code, fragment)
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "failed" and fragment in record["error"]
    return record


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("listener", ["frozen"], indirect=True)
@pytest.mark.parametrize("workers", [(), ("--workers", "2")])
def test_a_server_that_stops_reading_ends_the_run(tmp_path, listener, workers):
    """ILP over TCP has no timeout: without --flush-timeout this run would block in a flush for ever."""
    result = bench(tmp_path, listener.port, "--row-count", "2000000", "--flush-timeout", "2", *workers)
    record = assert_failed_in_one_line(result, 1, "did not finish in 2s (--flush-timeout)", tmp_path)
    assert record["phases"]["send"]["rows"] < 2_000_000


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("listener", ["closing"], indirect=True)
def test_a_dropped_connection_while_streaming_ends_the_run(tmp_path, listener):
    """Two workers fail while the generator (large hosts count: slower than the workers) still produces:
    every worker must get its end, not wait for chunks that will never come."""
    result = bench(tmp_path, listener.port, "--stream", "--workers", "2", "--scale", "100000",
                   "--row-count", "20000000", "--worker-chunk-row-count", "20000", timeout=90)
    assert_failed_in_one_line(result, 1, f"127.0.0.1:{listener.port}", tmp_path)


@pytest.mark.slow
@pytest.mark.serial
def test_a_busy_metrics_port_is_one_line_and_a_record(tmp_path, socat_sink):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        result = bench(tmp_path, socat_sink.port, "--row-count", "1000", "--metrics-port", str(port))
    assert_failed_in_one_line(result, 2, f"--metrics-port {port}", tmp_path)


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.server
@pytest.mark.parametrize("workers", [(), ("--workers", "2")])
def test_the_sink_killed_mid_send_fails_the_run_with_the_rows_sent(tmp_path, workers):
    """The sink (socat and its per-connection copies) SIGKILLed while rows stream to it."""
    sink = SocatSink(free_port(), pid_file=tmp_path / "sink.pid").start()
    try:
        command = [sys.executable, "-m", "harness", "bench", "--send", "--target", "sink", "--stream", "--host",
                   sink.host, "--ilp-port", str(sink.port), "--row-count", "100000000", "--reporting-period", "0.2",
                   "--results", str(tmp_path / "r.json"), *workers]
        result = stop_when(command, progress("send"), lambda _: os.killpg(sink.pid(), signal.SIGKILL))
    finally:
        sink.stop()
    record = assert_failed_in_one_line(result, 1, f"sending to {sink.host}:{sink.port} failed", tmp_path)
    assert "rows were sent (flushed) before the failure" in result.stderr
    assert 0 < record["phases"]["send"]["rows"] < 100_000_000


# --- SIGINT and SIGTERM in every phase: the CLI's exit, and what the process keeps afterwards -----------

def progress(phase: str, at_least: int = 1) -> Callable[[str], bool]:
    """Whether a stdout line is a progress line of ``phase`` that shows ``at_least`` rows done."""
    def done(line: str) -> bool:
        fields = line.split(",")
        return len(fields) == 8 and fields[1] == phase and float(fields[3]) >= at_least
    return done


def sigint_default() -> None:
    """A child's SIGINT back to its default: a suite started in the background (``cmd &``) ignores SIGINT, a
    child would inherit that, and a run that starts with SIGINT ignored keeps ignoring it, by design."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def running(command: list[str], text: bool = True) -> Iterator[subprocess.Popen]:
    """``command`` running, its output piped; killed if it still runs when the block ends (a failed test)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text,
                               preexec_fn=sigint_default)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def stopped(process: subprocess.Popen, stop: Callable[[subprocess.Popen], None]) -> tuple:
    """``stop`` the running process (a signal to it, a kill of its server); its (rest of) stdout and stderr
    once it has ended, within its bound. ``communicate``'s timeout only guards against a hang."""
    stop(process)
    started = time.monotonic()
    stdout, stderr = process.communicate(timeout=2 * ENDS_WITHIN_SECONDS)
    took = time.monotonic() - started
    assert took < ENDS_WITHIN_SECONDS, f"the run ended {took:.1f}s after it was stopped"
    return stdout, stderr


def stop_when(command: list[str], ready: Callable[[str], bool],
              stop: Callable[[subprocess.Popen], None]) -> subprocess.CompletedProcess:
    """Run ``command``; at the first line of its stdout that is ``ready``, ``stop`` it; return how it ended
    (its stdout from after that line)."""
    with running(command) as process:
        if not any(map(ready, process.stdout)):
            pytest.fail(f"the run ended before it was stopped: {process.communicate()[1][-2000:]}")
        stdout, stderr = stopped(process, stop)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def assert_interrupted(result: subprocess.CompletedProcess, code: int, word: str, results) -> dict:
    """The exit code of the signal, its one line, and the record: interrupted."""
    assert result.returncode == code, (result.returncode, result.stderr)
    assert result.stderr == f"error: {word}\n", result.stderr
    record = json.loads(results.read_text())
    assert record["status"] == "interrupted" and record["error"] == "interrupted"
    return record


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("phase, args", [
    ("serialize", ["--row-count", "5000000"]),
    ("serialize", ["--row-count", "5000000", "--workers", "2"]),
    ("send", ["--send", "--target", "sink", "--row-count", "100000000", "--stream"]),
    ("send", ["--send", "--target", "sink", "--row-count", "100000000", "--stream", "--workers", "2"]),
])
@pytest.mark.parametrize("signum, code, word", SIGNALS)
def test_a_signal_in_each_phase_ends_the_run_there(tmp_path, socat_sink, phase, args, signum, code, word):
    """The signal ends the run in the phase it arrived in, its record interrupted with the rows done so far:
    fewer than asked (the run did not just finish)."""
    command = [sys.executable, "-m", "harness", "bench", "--host", socat_sink.host, "--ilp-port",
               str(socat_sink.port), "--reporting-period", "0.2", "--results", str(tmp_path / "r.json"), *args]
    result = stop_when(command, progress(phase), lambda run: run.send_signal(signum))
    record = assert_interrupted(result, code, word, tmp_path / "r.json")
    asked = int(args[args.index("--row-count") + 1])
    assert phase in record["phases"] and 0 < record["phases"][phase]["rows"] < asked


VALIDATED_ROWS = 50_000


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("signum, code, word", SIGNALS)
def test_a_signal_while_validating_ends_the_run_with_every_row_sent(tmp_path, questdb_server, signum, code, word):
    """Validation waits for rows that cannot come: the table deduplicates, and already holds this data set
    (an --exactly-once run loaded it), so the second send's rows replace the first's instead of adding to them.
    The signal, sent once the send phase is over, ends the run in its validation."""
    client, table = questdb_server.client, "faults_validation"
    server = ["--host", questdb_server.host, "--http-port", str(questdb_server.http_port),
              "--ilp-port", str(questdb_server.ilp_port)]
    data_set = dict(seed=3, scale=100, row_count=VALIDATED_ROWS, table=table)
    client.drop_table(table)
    try:
        with open(os.devnull, "w") as devnull:
            run_bench(BenchOptions(send=True, exactly_once=True, transport="http", host=questdb_server.host,
                                   http_port=questdb_server.http_port, reporting_period=0, sample_interval=0,
                                   results=str(tmp_path / "load.json"), **data_set), out=devnull)
        command = [sys.executable, "-m", "harness", "bench", "--send", "--keep-table", "--seed", "3", "--scale",
                   "100", "--row-count", str(VALIDATED_ROWS), "--table", table, *server, "--reporting-period", "0",
                   "--results", str(tmp_path / "r.json")]
        result = stop_when(command, lambda line: line.startswith("Sent:"), lambda run: run.send_signal(signum))
        record = assert_interrupted(result, code, word, tmp_path / "r.json")
        assert record["phases"]["send"]["rows"] == VALIDATED_ROWS and record["validation"] is None
        assert client.count(table) == VALIDATED_ROWS  # what validation was waiting on: never twice as many
    finally:
        client.drop_table(table)


# Runs in a process of its own, so that the interrupt can never reach the test session: the library call is
# interrupted like Ctrl-C does, then the process reports the threads and connections it still has.
INTERRUPTED_RUN = """
import json, sys, threading, time
import psutil
from harness.commands.bench import run_bench
from harness.run.bench_options import BenchOptions
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


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("overrides", [dict(), dict(workers=2), dict(workers=2, stream=True)])
def test_an_interrupted_send_leaves_no_thread_or_connection(tmp_path, socat_sink, overrides):
    options = dict(send=True, target="sink", host=socat_sink.host, ilp_port=socat_sink.port, scale=1000,
                   row_count=100_000_000 if overrides.get("stream") else 3_000_000, reporting_period=0.2,
                   results=str(tmp_path / "r.json"), **overrides)
    process = subprocess.Popen([sys.executable, "-c", INTERRUPTED_RUN, json.dumps(options)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
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


# The query data set: 10 hosts over 25 hours (90,000 rows), enough for every query type but the one that needs
# 32 hosts; loaded once into table cpu of the session's QuestDB.
QUERY_DATA = dict(seed=7, scale=10, timestamp_start="2016-01-01T00:00:00Z", timestamp_end="2016-01-02T01:00:00Z")
QUERY_DATA_SET = [text for name, value in QUERY_DATA.items() for text in (f"--{name.replace('_', '-')}", str(value))]
QUERY_DATA_ROWS = 90_000


def load_query_data_set(server, results) -> None:
    with open(os.devnull, "w") as devnull:
        run_bench(BenchOptions(send=True, transport="http", host=server.host, http_port=server.http_port,
                               reporting_period=0, sample_interval=0, results=str(results), **QUERY_DATA),
                  out=devnull)
    assert server.client.count("cpu") == QUERY_DATA_ROWS


@pytest.fixture(scope="module")
def query_data(questdb_server, tmp_path_factory):
    load_query_data_set(questdb_server, tmp_path_factory.mktemp("load") / "load.json")
    return questdb_server


def query_progress(line: str) -> bool:
    """Whether a stdout line is a query run's progress line (time,queries,failed,...) with queries done."""
    fields = line.split(",")
    return len(fields) == 5 and fields[0].isdigit() and int(fields[1]) > 0


def test_a_connection_lost_after_a_signal_adds_nothing_to_the_runs_one_line(caplog):
    # A signal mid-query may leave asyncpg a future holding the loss of its closed connection, logged when
    # collected; only that one is kept quiet, any other unretrieved exception is still logged.
    import asyncio
    import gc

    import asyncpg

    from harness.queries.clients import quiet_orphaned_losses

    async def orphan(exception: BaseException) -> None:
        quiet_orphaned_losses(asyncio.get_running_loop())
        asyncio.get_running_loop().create_future().set_exception(exception)
        gc.collect()

    with caplog.at_level("ERROR", logger="asyncio"):
        asyncio.run(orphan(asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")))
        assert caplog.records == []
        asyncio.run(orphan(ValueError("something else")))
    (logged,) = caplog.records
    assert logged.getMessage().startswith("Future exception was never retrieved") and "something else" in logged.getMessage()


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("signum, code, word", SIGNALS)
@pytest.mark.parametrize("protocol", ["pgwire", "http"])
def test_a_signal_mid_query_run_ends_it_with_the_queries_done(tmp_path, query_data, protocol, signum, code, word):
    # Enough queries that the run still goes on when the signal arrives (1,000 over PGWire could all be done).
    command = [sys.executable, "-m", "harness", "queries", "run", "--generate", *QUERY_DATA_SET, "--queries", "5000",
               "--protocol", protocol, "--host", query_data.host, "--http-port", str(query_data.http_port),
               "--pg-port", str(query_data.pg_port), "--reporting-period", "0.2", "--results", str(tmp_path / "r.json")]
    result = stop_when(command, query_progress, lambda run: run.send_signal(signum))
    record = assert_interrupted(result, code, word, tmp_path / "r.json")
    done, asked = record["phases"]["queries"]["rows"], record["parameters"]["query_count"]
    assert 0 < done < asked
    assert record["queries"]["statistics"]["all queries"]["count"] == done


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("signum, code, word", SIGNALS)
@pytest.mark.parametrize("protocol", ["asyncpg", "http-csv"])
def test_a_signal_mid_read_ends_it_with_the_rows_read(tmp_path, query_data, protocol, signum, code, word):
    """Chunks of 20 rows make the read of the 90,000 long enough to be caught in it."""
    command = [sys.executable, "-m", "harness", "read", "--protocol", protocol, "--chunk-rows", "20", "--host",
               query_data.host, "--http-port", str(query_data.http_port), "--pg-port", str(query_data.pg_port),
               "--server-metrics-port", str(query_data.min_port), "--reporting-period", "0.2",
               "--results", str(tmp_path / "r.json")]
    result = stop_when(command, progress("read"), lambda run: run.send_signal(signum))
    record = assert_interrupted(result, code, word, tmp_path / "r.json")
    assert 0 < record["phases"]["read"]["rows"] < QUERY_DATA_ROWS
    assert record["read"]["expected_rows"] == QUERY_DATA_ROWS


GENERATE = [sys.executable, "-m", "harness", "generate", "--seed", "1", "--scale", "100"]
GENERATED_ROWS = 100 * 8640  # a day of 10 s epochs


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("signum, code, word", SIGNALS)
@pytest.mark.parametrize("fields", ["double", "long"])
def test_a_signal_while_generating_to_stdout_leaves_a_true_prefix(fields, signum, code, word):
    """The signal arrives while generate waits for its reader (the pipe is full): what it wrote up to the last
    whole line is the data set's first lines, byte for byte, and fewer than all."""
    command = [*GENERATE, "--fields", fields]
    with running(command, text=False) as process:
        head = process.stdout.read(1 << 20)
        rest, stderr = stopped(process, lambda run: run.send_signal(signum))
    assert process.returncode == code and stderr == f"error: {word}\n".encode(), (process.returncode, stderr)
    written = head + rest
    lines = written[:written.rindex(b"\n") + 1]
    count = lines.count(b"\n")
    assert 0 < count < GENERATED_ROWS
    first = subprocess.run([*command, "--max-data-points", str(count)], capture_output=True, timeout=120)
    assert first.returncode == 0 and first.stdout == lines


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("signum, code, word", SIGNALS)
def test_a_signal_while_generating_to_a_file_leaves_no_file(tmp_path, signum, code, word):
    """Caught while the file is being written (its temporary file has bytes): neither it nor a partial file
    stays."""
    with running([*GENERATE, "--workers", "1", "--file", str(tmp_path / "out.ilp")]) as process:
        deadline = time.monotonic() + 2 * ENDS_WITHIN_SECONDS
        while not any(partial.stat().st_size for partial in tmp_path.glob(".out.ilp.*.partial")):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.01)
        _, stderr = stopped(process, lambda run: run.send_signal(signum))
    assert process.returncode == code and stderr == f"error: {word}\n", (process.returncode, stderr)
    assert list(tmp_path.iterdir()) == []


def test_a_signal_whose_interrupt_was_lost_still_ends_the_query_workers():
    """The handler's KeyboardInterrupt can be caught inside a driver's callbacks and lost; the query workers
    also ask whether a signal arrived, before each query."""
    import asyncio

    from harness.errors import clear_interrupt, interrupt_requested, request_interrupt
    from harness.queries.pool import _worker

    class NoQueryMayRun:
        async def run(self, *args):
            raise AssertionError("a query ran after the signal")

    request_interrupt()
    try:
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(_worker(NoQueryMayRun(), iter([(0, None, None)]), None, None, None))
    finally:
        clear_interrupt()
    assert not interrupt_requested()
