"""--exactly-once against a real QuestDB that is killed (SIGKILL) and restarted on its data mid-send:
every generated row arrives exactly once, and the run says what it re-sent."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pandas as pd
import pytest
from helpers import run_cli

from harness.tsbs.cpu_only import generator as cpu_only
from harness.tsbs.use_cases import make_spec
from test_faults import assert_failed_in_one_line, progress, stop_when
from test_server_faults import settled_count

ROWS, SCALE, SEED, CHUNK_ROWS = 1_500_000, 1000, 11, 5000


# The wires whose commits the server answers, each on a server of its own that the test kills.
SERVERS = {"http": "killable_questdb", "qwp": "killable_qwp_questdb"}
# QuestDB rewrites a table's _meta when a symbol column's capacity grows (256, 512, 1024 as hosts appear); a SIGKILL
# in that moment once left the QWP server's table unreadable after its restart ("File is too small"): a server fault,
# not the client's. Over QWP the hosts stay within the first capacity, so that a kill tests the re-sends alone.
SCALES = {"http": SCALE, "qwp": 200}


def bench_command(server, results, *extra: str, transport: str = "http") -> list[str]:
    return [sys.executable, "-m", "harness", "bench", "--send", "--exactly-once", "--transport", transport,
            "--scale", str(SCALES[transport]), "--seed", str(SEED), "--row-count", str(ROWS), "--fields", "long",
            "--worker-chunk-row-count", str(CHUNK_ROWS), "--host", server.host, "--http-port", str(server.http_port),
            "--ilp-port", str(server.ilp_port), "--reporting-period", "0.2", "--results", str(results), *extra]


def wait_for_sent_rows(process: subprocess.Popen, at_least: int) -> None:
    if not any(map(progress("send", at_least), process.stdout)):
        raise AssertionError("the run ended before sending")


@pytest.mark.slow
@pytest.mark.serial
# One restart alone is the first of two: the suite's time is kept for the cases that add something.
# Over QWP a failed dataframe() call may have committed a prefix of its batches: the deduplicating table makes the
# re-sent chunk replace it.
@pytest.mark.server  # its server is the transport's (SERVERS)
@pytest.mark.parametrize("transport, workers, restarts", [("http", (), 2), ("http", ("--workers", "2"), 1),
                                                          ("qwp", ("--workers", "2"), 2)])
def test_restarts_mid_send_lose_and_double_nothing(tmp_path, request, transport, workers, restarts):
    server = request.getfixturevalue(SERVERS[transport])
    results = tmp_path / "r.json"
    process = subprocess.Popen(bench_command(server, results, *workers, transport=transport),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for restart in range(restarts):
            wait_for_sent_rows(process, (restart + 1) * 100_000)
            server.kill()
            time.sleep(3)  # the server is away for a while, not just a blip
            server.server.start()
        stdout, stderr = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, (stdout[-2000:], stderr)
    assert server.client.count("cpu") == ROWS
    # No (host, timestamp) twice, and sampled rows equal the generator's.
    _, distinct = server.client.query("select count() from (select distinct hostname, timestamp from cpu)")
    assert distinct == [[ROWS]]
    spec = make_spec(seed=SEED, scale=SCALES[transport], timestamp_end=None, row_limit=ROWS)
    expected = pd.concat(cpu_only.frames(spec, 100_000, "long"), ignore_index=True)
    expected = expected[expected["hostname"] == "host_7"].reset_index(drop=True)
    columns, rows = server.client.query("select * from cpu where hostname = 'host_7' order by timestamp")
    stored = pd.DataFrame(rows, columns=columns)
    assert len(stored) == len(expected)
    for field in cpu_only.FIELD_COLUMNS:
        assert stored[field].tolist() == expected[field].tolist(), field
    record = json.loads(results.read_text())
    send = record["phases"]["send"]
    assert record["status"] == "ok" and record["validation"]["visible_rows"] == ROWS
    assert send["resent_chunks"] >= restarts and send["outage_seconds"] > 0
    assert "Re-sent:" in stdout


@pytest.mark.slow
@pytest.mark.serial
def test_without_exactly_once_a_restart_fails_the_run_clearly(tmp_path, killable_questdb):
    server = killable_questdb
    command = [arg for arg in bench_command(server, tmp_path / "r.json") if arg != "--exactly-once"]
    result = stop_when(command, progress("send", 100_000), lambda _: server.kill())
    record = assert_failed_in_one_line(result, 1, "rows were sent (flushed) before the failure", tmp_path)
    flushed = record["phases"]["send"]["rows"]
    assert f"{ROWS - flushed} of the {ROWS} rows were never sent" in record["error"]
    assert "would double the rows that arrived" in record["error"]
    # Over HTTP what was flushed was acknowledged: restarted on its data, the server holds all of it, and at
    # most the one chunk in flight besides (committed, its acknowledgement lost).
    server.server.start()
    assert flushed <= settled_count(server.client, "cpu") <= flushed + CHUNK_ROWS


@pytest.mark.slow
@pytest.mark.serial
def test_without_exactly_once_qwp_says_what_may_be_in_doubt(tmp_path, killable_qwp_questdb):
    """Over QWP a dataframe() call that failed midway may have committed a prefix: the run says how many rows are in
    doubt, and the server, restarted on its data, holds at most those beyond what was acknowledged."""
    server = killable_qwp_questdb
    command = [arg for arg in bench_command(server, tmp_path / "r.json", transport="qwp") if arg != "--exactly-once"]
    result = stop_when(command, progress("send", 100_000), lambda _: server.kill())
    record = assert_failed_in_one_line(result, 1, "rows were sent (flushed) before the failure", tmp_path)
    flushed = record["phases"]["send"]["rows"]
    assert f"up to {CHUNK_ROWS} rows of the call that failed may have landed (in doubt)" in record["error"]
    server.server.start()
    assert flushed <= settled_count(server.client, "cpu") <= flushed + CHUNK_ROWS


@pytest.mark.slow
@pytest.mark.serial
# Single-threaded: several workers' acknowledged chunks are the restarts' test above, with --workers 2.
@pytest.mark.parametrize("workers", [()])
def test_a_killed_client_resumes_to_an_exact_table(tmp_path, killable_questdb, workers):
    """The client SIGKILLed mid-send; `bench --resume` on its record finishes the data set exactly."""
    server = killable_questdb
    results = tmp_path / "r.json"
    process = subprocess.Popen(bench_command(server, results, *workers), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_for_sent_rows(process, 200_000)
        time.sleep(1.5)  # at least one checkpoint after rows were acknowledged
        process.kill()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    died = json.loads(results.read_text())
    assert died["status"] == "running" and died["acknowledged_chunks"] > 0
    assert server.client.count("cpu") < ROWS
    resumed = run_cli("bench", "--resume", str(results), "--reporting-period", "0", timeout=600)
    assert resumed.returncode == 0, (resumed.stdout[-2000:], resumed.stderr)
    assert server.client.count("cpu") == ROWS
    _, distinct = server.client.query("select count() from (select distinct hostname, timestamp from cpu)")
    assert distinct == [[ROWS]]
    record = json.loads(results.read_text())
    assert record["status"] == "ok" and record["validation"]["visible_rows"] == ROWS
    assert record["parameters"]["first_chunk"] == died["acknowledged_chunks"]


def test_resume_refuses_what_it_cannot_finish_exactly(tmp_path, capsys):
    from harness.cli import main

    finished = {"schema_version": 2, "kind": "bench", "mode": "send", "status": "ok", "acknowledged_chunks": 3,
                "parameters": {"exactly_once": True}, "phases": {}}
    plain = dict(finished, status="running", parameters={"exactly_once": False})
    for name, record, fragment in (("finished", finished, "finished"), ("plain", plain, "--exactly-once")):
        (tmp_path / f"{name}.json").write_text(json.dumps(record))
        with pytest.raises(SystemExit) as exit_:
            main(["bench", "--resume", str(tmp_path / f"{name}.json")])
        assert exit_.value.code == 2 and fragment in capsys.readouterr().err
