"""Scale-out runs against a real QuestDB and the real socat sink: the clients' meeting at the server or in a
folder (harness.scaleout.meeting), N client processes on this machine (`bench --clients N`: TSBS's interleaved
groups, one record each, merged), `harness merge` of records, including its refusals, and of the records the
clients delivered to the server (`merge --from-server`, harness.scaleout.delivery), a lost client among them."""

from __future__ import annotations

import json
import threading
import time

import pytest

from harness.scaleout.meeting import READY, SENT, FolderPlace, Meeting, TablePlace, run_seed
from harness.commands.bench import run_bench
from harness.run.bench_options import BenchOptions
from harness.errors import RunError, UsageError
from harness.scaleout.delivery import PIECE_CHARS, RecordsTable
from harness.scaleout.merge import merge_records
from harness.records.store import load_results
from harness.scaleout.clients import cpu_shares
from harness.tsbs.iot.schema import TABLES as IOT_TABLES
from helpers import assert_one_line_error, run_cli


@pytest.fixture(params=["server", "folder"])
def place(request, tmp_path):
    """Where the clients meet: table harness_clients of the test QuestDB, or a folder."""
    if request.param == "folder":
        return FolderPlace(tmp_path / "meeting")
    return TablePlace(request.getfixturevalue("questdb").client)


@pytest.mark.slow
def test_clients_meet_and_a_failure_ends_every_wait_at_once(place):
    meetings = [Meeting(place, "meet-1", client, 3, timeout=30) for client in range(3)]
    released = {}

    def client(index: int) -> None:
        time.sleep(0.3 * index)  # staggered arrivals
        meetings[index].say(READY)
        meetings[index].wait_for(READY)
        released[index] = time.monotonic()

    threads = [threading.Thread(target=client, args=(index,)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Nobody leaves before the last arrives (0.6 s after the first): all leave within a few polls.
    assert len(released) == 3 and max(released.values()) - min(released.values()) < 0.5

    first, second = (Meeting(place, "meet-2", client, 2, timeout=60) for client in range(2))
    second.failed(RunError("the disk is full"))
    started = time.monotonic()
    with pytest.raises(RunError, match="client 1 of run meet-2 failed: the disk is full"):
        first.wait_for(SENT)
    assert time.monotonic() - started < 30  # not the 60 s timeout

    alone = Meeting(place, "meet-3", 0, 2, timeout=0.5)
    with pytest.raises(RunError, match=r"clients 0, 1 did not say 'sent' within 0.5s"):
        alone.wait_for(SENT)


def test_cpu_shares():
    assert cpu_shares([0, 1, 2, 3, 4], 2) == [[0, 1, 2], [3, 4]]
    assert cpu_shares([0, 1], 2) == [[0], [1]]
    assert cpu_shares([0, 1], 3) == [[0], [1], [0]]


def clients_run(questdb, tmp_path, clients: int, **flags):
    with open(tmp_path / "launcher.txt", "w") as out:
        return run_bench(BenchOptions(send=True, host=questdb.host, ilp_port=questdb.ilp_port,
                                      http_port=questdb.http_port, server_metrics_port=questdb.min_port,
                                      clients=clients, results=str(tmp_path / "merged.json"), reporting_period=0,
                                      **flags), out=out)


@pytest.mark.slow
def test_two_clients_send_the_whole_data_set_once(questdb, tmp_path):
    """cpu-only in two interleaved groups from two processes: the table holds the whole data set (counted by
    client 0 and here), no row twice; the merged record sums the clients' sends over the union of their
    windows and keeps each client's figures."""
    merged = clients_run(questdb, tmp_path, 2, scale=20, seed=3, row_count=40_000, worker_chunk_row_count=3000)
    assert merged.status == "ok" and merged.parameters["clients"] == 2
    assert questdb.client.count("cpu") == 40_000 == merged.validation.visible_rows == merged.phases["send"].rows
    _, rows = questdb.client.query("select count() from (select distinct hostname, timestamp from cpu)")
    assert rows == [[40_000]]
    clients = merged.clients
    assert [client.client for client in clients] == [0, 1] and sum(client.rows for client in clients) == 40_000
    window = max(client.ended_at for client in clients) - min(client.started_at for client in clients)
    assert merged.phases["send"].seconds == pytest.approx(window)
    records = load_results(sorted((tmp_path / "merged").glob("client-*.json")))
    assert [record.parameters["interleaved_generation_group_id"] for record in records] == [0, 1]
    assert records[1].validation is None and records[0].validation.expected_rows == 40_000
    compared = run_cli("compare", str(merged.path))
    assert compared.returncode == 0 and "2clients" in compared.stdout


@pytest.mark.slow
def test_clients_into_the_sink_meet_in_their_folder(socat_sink, tmp_path):
    """`--clients 2 --target sink`: no table to meet at, so the two processes meet in the run's folder; the
    merged record is the whole data set's rows over the union of the send windows, with no validation. Given
    no seed, both clients derive the same one from the run's name (else they would split two data sets)."""
    with open(tmp_path / "launcher.txt", "w") as out:
        merged = run_bench(BenchOptions(send=True, target="sink", host=socat_sink.host, ilp_port=socat_sink.port,
                                        clients=2, results=str(tmp_path / "merged.json"), reporting_period=0,
                                        scale=20, row_count=40_000, worker_chunk_row_count=3000), out=out)
    assert merged.status == "ok" and merged.parameters["clients"] == 2 and merged.parameters["target"] == "sink"
    assert merged.seed == run_seed(merged.parameters["barrier"])
    assert merged.validation is None and merged.phases["send"].rows == 40_000
    clients = merged.clients
    assert [client.client for client in clients] == [0, 1] and sum(client.rows for client in clients) == 40_000
    window = max(client.ended_at for client in clients) - min(client.started_at for client in clients)
    assert merged.phases["send"].seconds == pytest.approx(window)
    said = sorted(path.name for path in (tmp_path / "merged" / "meeting" / merged.parameters["barrier"]).iterdir())
    assert said == ["0.prepared", "0.ready", "0.sent", "1.ready", "1.sent"]


@pytest.mark.slow
def test_clients_of_a_use_case_with_several_tables(questdb, tmp_path):
    merged = clients_run(questdb, tmp_path, 3, use_case="iot", scale=10, seed=2, row_count=20_000)
    assert merged.status == "ok"
    counts = {table: questdb.client.count(table) for table in IOT_TABLES}
    assert {table: count.visible for table, count in merged.validation.tables.items()} == counts
    assert sum(counts.values()) == merged.phases["send"].rows


@pytest.mark.slow
def test_merge_command_and_its_refusals(questdb, tmp_path):
    merged = clients_run(questdb, tmp_path, 2, scale=5, seed=4, row_count=5_000)
    paths = sorted(str(path) for path in (tmp_path / "merged").glob("client-*.json"))
    again = run_cli("merge", *reversed(paths), "--results", str(tmp_path / "again.json"))
    assert again.returncode == 0, again.stderr
    assert "2 clients" in again.stdout and "client 1" in again.stdout
    assert json.loads((tmp_path / "again.json").read_text())["phases"]["send"]["rows"] == 5_000
    assert merged.phases["send"].rows == 5_000

    one = run_cli("merge", paths[0])
    assert one.returncode == 2 and "has 2 clients (groups 0 to 1); these records hold groups 0" in one.stderr
    other = json.loads(open(paths[1]).read())
    other["parameters"]["seed"] = 99
    (tmp_path / "other.json").write_text(json.dumps(other))
    differ = run_cli("merge", paths[0], str(tmp_path / "other.json"))
    assert differ.returncode == 2 and "differ in seed (99 vs 4): not one run" in differ.stderr
    with pytest.raises(UsageError, match="is a merged record already"):
        merge_records(load_results([merged.path]))
    single = run_cli("merge", str(tmp_path / "launcher.txt"))
    assert single.returncode == 2 and "launcher.txt" in single.stderr


@pytest.mark.slow
def test_records_delivered_to_the_server_merge_as_the_files_do(questdb, tmp_path):
    """Each client of `bench --clients 2` delivered its record to the QuestDB it met at: `merge --from-server`
    reads them back there, writes each one byte for byte as the client wrote its file, and merges them as
    `harness merge` of the files does."""
    merged = clients_run(questdb, tmp_path, 2, scale=5, seed=6, row_count=5_000)
    run = merged.parameters["barrier"]
    gathered = run_cli("merge", "--from-server", run, "--clients", "2", "--host", questdb.host, "--http-port",
                       str(questdb.http_port), "--results", str(tmp_path / "gathered.json"), "--wait", "10")
    assert gathered.returncode == 0, gathered.stderr
    assert "2 clients" in gathered.stdout and f"Results: {tmp_path / 'gathered.json'}" in gathered.stdout
    for client in range(2):
        delivered = (tmp_path / "gathered" / f"client-{client}.json").read_bytes()
        assert delivered == (tmp_path / "merged" / f"client-{client}.json").read_bytes()
    again = json.loads((tmp_path / "gathered.json").read_text())
    assert again["status"] == "ok" and again["phases"]["send"]["rows"] == 5_000 == merged.phases["send"].rows
    assert again["validation"] == json.loads(merged.path.read_text())["validation"]

    # A record longer than a piece travels in several, and is read only once every piece is there.
    table = RecordsTable(questdb.client)
    big = json.dumps({"noise": [str(value) * 7 for value in range(40_000)]}).encode()
    table.deliver("pieces-1", 3, big)
    # Each piece is a transaction of its own, visible once the server has applied it (a busy server lags): read
    # as gather reads, until the record is whole (or 60 s, a hang guard).
    deadline = time.monotonic() + 60
    while not (delivered := table.delivered("pieces-1")) and time.monotonic() < deadline:
        time.sleep(0.05)
    _, rows = questdb.client.query("select count() from harness_records where run = 'pieces-1'")
    assert rows[0][0] > 1 and len(big) > PIECE_CHARS
    assert delivered == {3: big}


@pytest.mark.slow
def test_a_lost_client_is_told_failed_to_the_others_and_named_in_the_merged_record(questdb, tmp_path):
    """Client 0 of a run of 2 whose client 1 never comes (its host lost): `merge --from-server --lost 1:...`
    says client 1 failed at the meeting, so client 0 stops waiting at once (not after its 600 s barrier timeout)
    and delivers its record, failed; the merged record is failed, names client 1 with the reason, and holds
    client 0's own."""
    options = BenchOptions(send=True, host=questdb.host, ilp_port=questdb.ilp_port, http_port=questdb.http_port,
                           server_metrics_port=questdb.min_port, barrier="lost-1", interleaved_generation_groups=2,
                           scale=5, seed=8, row_count=5_000, reporting_period=0,
                           results=str(tmp_path / "client-0.json"))
    ended = {}

    def client_0():
        with open(tmp_path / "client-0.log", "w") as out:
            try:
                run_bench(options, out=out)
            except RunError as exc:
                ended["error"] = str(exc)
        ended["at"] = time.monotonic()

    thread = threading.Thread(target=client_0)
    thread.start()
    time.sleep(3)  # client 0 waits for client 1 at the start barrier
    started = time.monotonic()
    gathered = run_cli("merge", "--from-server", "lost-1", "--clients", "2", "--host", questdb.host, "--http-port",
                       str(questdb.http_port), "--lost", "1:its node node-3 is down", "--results",
                       str(tmp_path / "merged.json"), "--wait", "30")
    thread.join(60)
    assert ended["at"] - started < 20 and "client 1 of run lost-1 failed: its node node-3 is down" in ended["error"]
    assert gathered.returncode == 0, gathered.stderr
    assert "told run lost-1's clients that client 1 failed" in gathered.stdout
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["status"] == "failed" and merged["error"] == "client 1 lost: its node node-3 is down"
    assert [(client["client"], client["status"]) for client in merged["clients"]] == [(0, "failed"), (1, "lost")]
    assert "generate" in merged["phases"] and merged["phases"]["generate"]["rows"] > 0
    assert (tmp_path / "merged" / "client-0.json").read_bytes() == (tmp_path / "client-0.json").read_bytes()

    nothing = run_cli("merge", "--from-server", "nobody-1", "--clients", "2", "--host", questdb.host,
                      "--http-port", str(questdb.http_port), "--wait", "1")
    assert_one_line_error(nothing, 1, "run nobody-1: no client delivered its record")
    for args in (["--clients", "2"], ["--from-server", "x", "some.json", "--clients", "2"],
                 ["--from-server", "x", "--clients", "2", "--lost", "one:gone"]):
        assert_one_line_error(run_cli("merge", *args), 2, "merge")


@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", [
    (["--clients", "2"], "scale-out run send to a server: add --send"),
    (["--send", "--clients", "2", "--interleaved-generation-groups", "2"], "gives client i interleaved group i"),
    (["--send", "--barrier", "no spaces"], "a run name is 1 to 64 letters"),
    (["--send", "--target", "sink", "--barrier", "b"], "--clients N --target sink runs N clients on this machine"),
])
def test_bad_scale_out_flags(args, fragment):
    result = run_cli("bench", "--row-count", "100", *args)
    assert_one_line_error(result, 2, fragment)
