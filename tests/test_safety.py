"""A run against a real server never destroys what it did not make: a table of the run's name with another
schema (a user's own ``cpu``, say Telegraf's) is refused in one line, nothing dropped, unless the user says
--replace-table."""

from __future__ import annotations

import pytest

from harness.commands.bench import run_bench
from harness.errors import UsageError
from harness.tsbs.cpu_only import generator as cpu_only
from test_bench import options
from helpers import assert_one_line_error, run_cli
from harness.questdb.claims import add_claim, create_claims, recent_claims


@pytest.fixture
def users_table(questdb):
    """A table ``victim`` of the user's own (``x INT``, one row), dropped after the test."""
    client = questdb.client
    client.drop_table("victim")
    client.exec("create table victim (x INT)")
    client.exec("insert into victim values (42)")
    yield client
    client.drop_table("victim")


def server_args(server) -> list[str]:
    return ["--host", server.host, "--http-port", str(server.http_port), "--ilp-port", str(server.ilp_port)]


@pytest.mark.slow
def test_a_table_of_another_schema_is_refused_and_kept(questdb, users_table, tmp_path):
    result = run_cli("bench", "--send", "--table", "victim", "--row-count", "100", "--scale", "10",
                     *server_args(questdb), "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "table victim exists and is not the benchmark's", "hostname",
                          "nothing was dropped", "--replace-table")
    assert users_table.table_columns("victim") == [("x", "INT")]
    assert users_table.count("victim") == 1


@pytest.mark.parametrize("difference, fragment", [
    ("usage_user INT", "usage_user is INT, the benchmark's is DOUBLE"),
    ("extra", "column extra"),
    ("partition", "partitioned by MONTH"),
])
def test_the_first_difference_is_named(questdb, tmp_path, devnull, difference, fragment):
    client = questdb.client
    schema = cpu_only.schema("double", "cpu")
    columns = [f"{name} {sql_type}" for name, sql_type in schema.columns]
    if difference == "usage_user INT":
        columns = [column.replace("usage_user DOUBLE", "usage_user INT") for column in columns]
    if difference == "extra":
        columns.append("extra INT")
    partition = "MONTH" if difference == "partition" else "DAY"
    client.exec(f"create table cpu ({', '.join(columns)}) timestamp(timestamp) partition by {partition} WAL")
    with pytest.raises(UsageError, match=fragment):
        run_bench(options(tmp_path, questdb, send=True, row_count=100), out=devnull)
    assert client.table_columns("cpu") is not None and client.count("cpu") == 0


@pytest.mark.slow
def test_replace_table_drops_it_when_asked(questdb, users_table, tmp_path, devnull):
    record = run_bench(options(tmp_path, questdb, send=True, row_count=100, table="victim", replace_table=True),
                       out=devnull)
    assert record.status == "ok" and users_table.count("victim") == 100


@pytest.mark.slow
def test_the_benchmarks_own_table_is_dropped_as_before(questdb, tmp_path, devnull):
    run_bench(options(tmp_path, questdb, send=True, row_count=100), out=devnull)
    record = run_bench(options(tmp_path, questdb, send=True, row_count=200), out=devnull)
    assert record.status == "ok" and questdb.client.count("cpu") == 200


@pytest.mark.slow
@pytest.mark.parametrize("made_by", [dict(fields="long"), dict(use_case="devops", row_count=90)])
def test_a_table_another_harness_run_made_is_dropped(questdb, tmp_path, devnull, made_by):
    run_bench(options(tmp_path, questdb, send=True, **{"row_count": 100, "scale": 10, **made_by}), out=devnull)
    record = run_bench(options(tmp_path, questdb, send=True, row_count=200), out=devnull)
    assert record.status == "ok" and questdb.client.count("cpu") == 200


@pytest.mark.slow
def test_devops_checks_every_table_before_touching_any(questdb, tmp_path):
    client = questdb.client
    for table in ("cpu", "mem"):
        client.drop_table(table)
    client.exec("create table mem (x INT)")
    try:
        result = run_cli("bench", "--send", "--use-case", "devops", "--row-count", "100", "--scale", "10",
                         *server_args(questdb), "--results", str(tmp_path / "r.json"))
        assert_one_line_error(result, 2, "table mem exists and is not the benchmark's")
        assert client.table_columns("mem") == [("x", "INT")]
        assert client.table_columns("cpu") is None, "a table before mem was made"
    finally:
        client.drop_table("mem")


@pytest.mark.slow
def test_replay_refuses_the_users_table_too(questdb, users_table, tmp_path):
    from helpers import GOLDEN_DIR

    result = run_cli("replay", str(GOLDEN_DIR / "cpu-only_seed123_scale10_1h_10s.ilp.gz"), "--table", "victim",
                     *server_args(questdb), "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "table victim exists and is not the benchmark's")
    assert users_table.count("victim") == 1


@pytest.mark.slow
def test_a_second_run_on_a_held_table_is_refused_and_the_first_stays_exact(questdb, tmp_path):
    import subprocess
    import sys
    import time

    from harness.questdb.claims import REGISTRY

    first = subprocess.Popen([sys.executable, "-m", "harness", "bench", "--send", "--stream", "--row-count", "1000000",
                              *server_args(questdb), "--reporting-period", "0", "--results", str(tmp_path / "a.json")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # The first run's own beat (an earlier test's run may have beaten on this server a moment ago).
        while not any(row["state"] == "beat" and row["owner"].startswith(f"pid {first.pid} ")
                      for row in recent_claims(questdb.client, REGISTRY, 5)):
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.1)
        second = run_cli("bench", "--send", "--keep-table", "--row-count", "1000", *server_args(questdb),
                         "--results", str(tmp_path / "b.json"))
        stdout, stderr = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert_one_line_error(second, 2, "table cpu is held by another harness run", "nothing was touched")
    assert first.returncode == 0, stderr
    assert "1000000 rows visible in table cpu" in stdout
    assert questdb.client.count("cpu") == 1_000_000


@pytest.mark.slow
def test_two_runs_started_together_do_not_both_go_on(questdb, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    def run(name: str):
        return run_cli("bench", "--send", "--row-count", "200000", "--scale", "10", *server_args(questdb),
                       "--reporting-period", "0", "--results", str(tmp_path / f"{name}.json"))

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, ["a", "b"]))
    codes = sorted(result.returncode for result in results)
    assert codes in ([0, 0], [0, 2]), [result.stderr for result in results]
    if codes == [0, 2]:
        refused = next(result for result in results if result.returncode == 2)
        assert_one_line_error(refused, 2, "held by another harness run")
    assert questdb.client.count("cpu") == 200_000  # never the two runs' rows together


@pytest.mark.slow
def test_a_killed_run_frees_its_tables_at_once(questdb, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from harness.questdb.claims import REGISTRY

    first = subprocess.Popen([sys.executable, "-m", "harness", "bench", "--send", "--stream", "--row-count", "5000000",
                              *server_args(questdb), "--reporting-period", "0", "--results", str(tmp_path / "a.json")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        # The first run's own beat (an earlier test's run may have beaten on this server a moment ago).
        while not any(row["state"] == "beat" and row["owner"].startswith(f"pid {first.pid} ")
                      for row in recent_claims(questdb.client, REGISTRY, 5)):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    second = run_cli("bench", "--send", "--row-count", "1000", *server_args(questdb),
                     "--results", str(tmp_path / "b.json"))
    assert second.returncode == 0, second.stderr


@pytest.mark.slow
@pytest.mark.parametrize("word", ["go", "done", None])
def test_a_run_first_by_its_stamp_waits_for_the_word_of_a_claim_it_sees_later(questdb, word):
    """The race two runs started together can hit: run A's claim carries the earlier stamp (taken before its
    insert waited for the registry's writer), run B's read missed it and went on. A, first by the order,
    must not go on too: it waits for B's word (emulated here by rows in B's name) and refuses on ``go``,
    goes on after ``done``, and refuses if B says nothing."""
    import os
    import socket
    import threading
    import time
    import uuid

    from harness.questdb.claims import DECISION_SECONDS, REGISTRY, TableClaim

    client = questdb.client
    create_claims(client, REGISTRY)
    b_id, owner = f"b-{uuid.uuid4().hex[:8]}", f"pid {os.getpid()} on {socket.gethostname()}"
    add_claim(client, REGISTRY, b_id, ["claimrace"], "claim", None, owner)
    a = TableClaim(client, f"a-{uuid.uuid4().hex[:8]}", ["claimrace"])
    a.claimed = "2000-01-01T00:00:00.000000Z"  # A's stamp: before B's
    outcome: list = []

    def take():
        try:
            a.take()
            outcome.append("went on")
        except UsageError as exc:
            outcome.append(str(exc))

    started = time.monotonic()
    taker = threading.Thread(target=take)
    taker.start()
    # A has read B's claim and waits for its word.
    while not any(row["run_id"] == a.run_id for row in recent_claims(client, REGISTRY, 10)):
        time.sleep(0.05)
    time.sleep(0.3)
    assert not outcome
    if word is not None:
        add_claim(client, REGISTRY, b_id, ["claimrace"], word, None, owner)
    taker.join(DECISION_SECONDS + 10)
    a.release()
    if word == "done":
        assert outcome == ["went on"]
    else:
        assert outcome and f"table claimrace is held by another harness run ({b_id}" in outcome[0]
        assert ("has not said" in outcome[0]) == (word is None)
        assert time.monotonic() - started < DECISION_SECONDS + 5
    if word is not None:
        add_claim(client, REGISTRY, b_id, ["claimrace"], "done", None, owner)
