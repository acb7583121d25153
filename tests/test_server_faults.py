"""A real QuestDB that fails under a run: the run ends within the user's own timeout plus a few seconds
(one deadline for every later question, a frozen server adds no minute of its own), in one line that says
what the server knows. A server killed (SIGKILL) mid-send or mid-query ends the run in one line naming it,
and the record's count holds against what the server kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import assert_one_error_line, assert_one_line_error

from test_faults import (
    QUERY_DATA_SET, Listener, assert_failed_in_one_line, load_query_data_set, progress, query_progress, stop_when,
)
from harness.questdb.wal import wal_state

# Every test starts a QuestDB of its own (or a frozen listener) and waits out a fault.
pytestmark = [pytest.mark.slow, pytest.mark.serial]

# What the run may take after the pause beyond --flush-timeout: the bound.
AFTER_FLUSH_TIMEOUT_SECONDS = 15
FLUSH_TIMEOUT = 5


def wait_for_rows(client, table: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if client.table_columns(table) is not None and client.count(table) > 0:
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError(f"no rows reached {table} in {timeout}s")


@pytest.mark.parametrize("transport", ["tcp", "http"])
def test_a_paused_server_ends_the_run_within_the_flush_timeout(killable_questdb, tmp_path, transport):
    server = killable_questdb
    command = [sys.executable, "-m", "harness", "bench", "--send", "--stream", "--transport", transport,
               "--row-count", "50000000", "--host", server.host, "--http-port", str(server.http_port),
               "--ilp-port", str(server.ilp_port), "--reporting-period", "0",
               "--flush-timeout", str(FLUSH_TIMEOUT), "--results", str(tmp_path / "r.json")]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pid = server.server.pid()
    try:
        wait_for_rows(server.client, "cpu")
        os.kill(pid, signal.SIGSTOP)
        paused = time.monotonic()
        _, stderr = run.communicate(timeout=FLUSH_TIMEOUT + AFTER_FLUSH_TIMEOUT_SECONDS + 60)
        took = time.monotonic() - paused
    finally:
        os.kill(pid, signal.SIGCONT)
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, stderr
    assert_one_error_line(stderr, f"did not finish in {FLUSH_TIMEOUT}s (--flush-timeout)")
    assert took < FLUSH_TIMEOUT + AFTER_FLUSH_TIMEOUT_SECONDS, f"the run ended {took:.1f}s after the pause"
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "failed" and "--flush-timeout" in record["error"]


@pytest.fixture
def frozen():
    server = Listener("frozen")
    yield server
    server.close()


def test_every_question_shares_one_deadline(frozen):
    """Three questions to a server that accepts and never answers: together they end at the deadline, not
    after three request timeouts."""
    from harness.errors import RunError
    from harness.questdb.http import QuestDBSql
    from harness.run.tables import server_state
    from harness.tsbs.devops import generator as devops

    client = QuestDBSql("127.0.0.1", frozen.port, timeout=60)
    started = time.monotonic()
    line = server_state(client, devops.USE_CASE.schemas("double"))
    assert "does not answer" in line and time.monotonic() - started < 60
    with client.bounded(0.5), pytest.raises(RunError, match="did not answer"):
        for _ in range(3):
            client.count("cpu")



@pytest.mark.server
def test_a_refused_login_is_named(tmp_path):
    """A QuestDB whose HTTP server asks for a login (http.user/http.password): the run says so in one line."""
    import urllib.error
    import urllib.request

    from helpers import KILLABLE_PORTS, run_cli
    from harness.servers.questdb import NativeQuestDB

    class LoginQuestDB(NativeQuestDB):
        def healthy(self) -> bool:  # up when /status answers, if only to ask for the login
            try:
                with urllib.request.urlopen(f"http://{self.host}:{self.min_port}/status", timeout=2) as response:
                    return response.status == 200
            except urllib.error.HTTPError as exc:
                return exc.code == 401
            except OSError:
                return False

    server = LoginQuestDB(tmp_path / "root", **KILLABLE_PORTS,
                          extra_env={"QDB_HTTP_USER": "someone", "QDB_HTTP_PASSWORD": "secret"}).start()
    try:
        result = run_cli("bench", "--send", "--row-count", "100", "--host", server.host, "--http-port",
                         str(server.http_port), "--ilp-port", str(server.ilp_port),
                         "--results", str(tmp_path / "r.json"))
    finally:
        server.stop()
    assert_one_line_error(result, 1, "refused the login (HTTP 401)")


def settled_count(client, table: str, timeout: float = 60) -> int:
    """The table's rows once the server (restarted on its data) has applied its whole WAL."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = wal_state(client, table)
            if state is not None and state["writerTxn"] == state["sequencerTxn"]:
                return client.count(table)
        except Exception:
            pass  # still starting
        time.sleep(0.2)
    raise AssertionError(f"the WAL of {table} was not applied within {timeout}s")


def test_a_server_killed_mid_send_fails_the_run_with_an_upper_bound(tmp_path, killable_questdb):
    """Over TCP what was flushed is an upper bound of what arrived: restarted on its data, the server holds
    no more than the record says was sent."""
    server = killable_questdb
    command = [sys.executable, "-m", "harness", "bench", "--send", "--stream", "--scale", "1000",
               "--row-count", "50000000", "--host", server.host, "--ilp-port", str(server.ilp_port),
               "--http-port", str(server.http_port), "--reporting-period", "0.2",
               "--results", str(tmp_path / "r.json")]
    result = stop_when(command, progress("send"), lambda _: server.kill())
    record = assert_failed_in_one_line(result, 1, f"sending to {server.host}:{server.ilp_port} failed", tmp_path)
    assert "rows were sent (flushed) before the failure (over ILP/TCP: an upper bound of what arrived)" in result.stderr
    assert f"the server does not answer (QuestDB HTTP at {server.host}:{server.http_port}" in result.stderr
    flushed = record["phases"]["send"]["rows"]
    assert 0 < flushed < 50_000_000
    server.server.start()
    assert settled_count(server.client, "cpu") <= flushed


@pytest.mark.parametrize("protocol, lost", [
    pytest.param("pgwire", "the PGWire connection to {host}:{pg_port} was lost", id="pgwire"),
    pytest.param("http", "the HTTP connection to {host}:{http_port} was lost", id="http"),
])
def test_a_server_killed_mid_query_run_fails_it_with_the_queries_done(tmp_path, killable_questdb, protocol, lost):
    server = killable_questdb
    load_query_data_set(server, tmp_path / "load.json")
    command = [sys.executable, "-m", "harness", "queries", "run", "--generate", *QUERY_DATA_SET, "--queries", "1000",
               "--protocol", protocol, "--workers", "2", "--host", server.host, "--http-port", str(server.http_port),
               "--pg-port", str(server.pg_port), "--reporting-period", "0.2", "--results", str(tmp_path / "r.json")]
    result = stop_when(command, query_progress, lambda _: server.kill())
    named = lost.format(host=server.host, pg_port=server.pg_port, http_port=server.http_port)
    record = assert_failed_in_one_line(result, 1, named, tmp_path)
    done = record["phases"]["queries"]["rows"]
    assert 0 < done < record["parameters"]["query_count"]
    assert record["queries"]["statistics"]["all queries"]["count"] == done
