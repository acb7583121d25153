"""`replay` streams its file: pieces far smaller than the file (plain and gzip'd) give exact per-table
counts in a real QuestDB and in the socat sink, a failure half-way through the file (corrupt gzip, a last
line cut short, a connection reset) ends in one line and a record that say truthfully what went out, and
the peak RSS of a replay does not grow with the file's size."""

from __future__ import annotations

import collections
import gzip
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from harness.errors import RunError
from harness.commands.replay import ReplayOptions, run_replay
from helpers import GOLDEN_DIR, assert_one_line_error, run_cli

PIECE = 16 << 10  # far below every golden file's size: dozens of pieces
FILES = {
    "cpu-only": GOLDEN_DIR / "cpu-only_seed123_scale10_1h_10s.ilp.gz",
    "devops": GOLDEN_DIR / "devops_seed123_scale5_10m_10s.ilp.gz",
    "iot": GOLDEN_DIR / "iot_seed123_scale10_1h_10s.ilp.gz",
}
BIG_GOLDEN = GOLDEN_DIR / "cpu-only_seed42_scale4000_1m_10s.ilp.gz"


def table_lines(data: bytes) -> dict[str, int]:
    return dict(collections.Counter(line.split(b",", 1)[0].decode() for line in data.splitlines()))


def replay_file(tmp_path, use_case: str, gzipped: bool):
    """The golden file of the use case, as it is (gzip'd) or unzipped; its bytes."""
    data = gzip.open(FILES[use_case]).read()
    if gzipped:
        return FILES[use_case], data
    path = tmp_path / f"{use_case}.ilp"
    path.write_bytes(data)
    return path, data


@pytest.mark.slow
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("use_case", list(FILES))
def test_small_pieces_fill_questdb_exactly(tmp_path, questdb, use_case, gzipped, devnull):
    path, data = replay_file(tmp_path, use_case, gzipped)
    expected = table_lines(data)
    record = run_replay(ReplayOptions(path=str(path), host=questdb.host, ilp_port=questdb.ilp_port,
                                      http_port=questdb.http_port, server_metrics_port=questdb.min_port,
                                      results_dir=str(tmp_path), workers=2, write_size=PIECE), out=devnull)
    assert record.status == "ok" and record.parameters["use_case"] == use_case
    send = record.phases["send"]
    assert send.rows == len(data.splitlines()) and send.bytes == len(data)
    # The time series' baseline, taken while the tables were made ready, comes before the first row sent.
    first, last = record.timeseries.samples[0], record.timeseries.samples[-1]
    assert sum(first.rows["send"]) == 0 and sum(last.rows["send"]) == send.rows
    assert first.server and first.server_cpu_seconds is not None and last.server["wal_written_rows"] > 0
    assert send.tables == (expected if len(expected) > 1 else {})
    assert len(send.workers) == 2 and sum(worker.rows for worker in send.workers) == send.rows
    assert {table: questdb.client.count(table) for table in expected} == expected
    assert record.validation.visible_rows == sum(expected.values())


def test_rename_lines_renames_the_table_of_every_line_naming_it_and_no_other():
    from harness.ingest.ilp_file import rename_lines

    lines = (b"cpu,hostname=host_0 usage_user=1i 10\ncpu_other,hostname=cpu usage_user=2i 20\n"
             b"cpu usage_user=3i 30\ncpu,hostname=cpu usage_user=4i 40\n")
    assert rename_lines(memoryview(lines), b"cpu", b"load_7") == (
        b"load_7,hostname=host_0 usage_user=1i 10\ncpu_other,hostname=cpu usage_user=2i 20\n"
        b"load_7 usage_user=3i 30\nload_7,hostname=cpu usage_user=4i 40\n")


@pytest.mark.slow
@pytest.mark.parametrize(("gzipped", "table", "written"), [
    (False, "replayed_elsewhere", b"replayed_elsewhere"),
    (True, "replayed_elsewhere", b"replayed_elsewhere"),
    (False, "replayed elsewhere", b"replayed\\ elsewhere"),  # ILP escapes a space in a measurement
], ids=["plain", "gzip", "space"])
def test_table_renames_a_cpu_only_file_and_leaves_cpu_alone(tmp_path, questdb, gzipped, table, written, devnull):
    """TSBS's lines all name cpu: with --table they land in that table, none in cpu (which may be a user's)."""
    path, data = replay_file(tmp_path, "cpu-only", gzipped)
    cpu_before = questdb.client.count("cpu") if questdb.client.table_columns("cpu") else None
    record = run_replay(ReplayOptions(path=str(path), host=questdb.host, ilp_port=questdb.ilp_port,
                                      http_port=questdb.http_port, results_dir=str(tmp_path), workers=2,
                                      write_size=PIECE, table=table, validation_query_timeout=30), out=devnull)
    lines = len(data.splitlines())
    assert record.status == "ok" and record.phases["send"].rows == lines
    assert record.phases["send"].bytes == len(data) + lines * (len(written) - len("cpu"))
    assert questdb.client.count(table) == lines == record.validation.visible_rows
    assert (questdb.client.count("cpu") if questdb.client.table_columns("cpu") else None) == cpu_before


@pytest.mark.parametrize("use_case", ["devops", "iot"])
def test_small_pieces_into_the_sink_count_every_table(tmp_path, socat_sink, use_case, devnull):
    path, data = replay_file(tmp_path, use_case, gzipped=True)
    record = run_replay(ReplayOptions(path=str(path), target="sink", host=socat_sink.host, ilp_port=socat_sink.port,
                                      results_dir=str(tmp_path), workers=3, write_size=PIECE), out=devnull)
    send = record.phases["send"]
    assert (send.rows, send.bytes, send.tables) == (len(data.splitlines()), len(data), table_lines(data))


def failed_record(tmp_path) -> dict:
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "failed"
    return record


@pytest.mark.slow
def test_gzip_corrupt_half_way_sends_what_came_before_and_says_so(tmp_path, questdb):
    data = gzip.open(FILES["devops"]).read()
    packed = gzip.compress(data)
    corrupt = tmp_path / "corrupt.ilp.gz"
    corrupt.write_bytes(packed[: len(packed) // 2])
    result = run_cli("replay", str(corrupt), "--host", questdb.host, "--ilp-port", str(questdb.ilp_port),
                     "--http-port", str(questdb.http_port), "--write-size", str(PIECE), "--workers", "2",
                     "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 1, "cannot read ILP file", "were written before the failure", "server says")
    sent = failed_record(tmp_path)["phases"]["send"]
    assert 0 < sent["rows"] < len(data.splitlines())
    # Whole lines only went out, on connections closed in order: the server holds every one of them.
    visible = {table: questdb.client.count(table) for table in table_lines(data)}
    assert sum(visible.values()) == sent["rows"] and visible == sent["tables"]
    assert f"{sent['rows']} rows ({sent['bytes']} bytes) were written" in result.stderr
    assert f"cpu: {visible['cpu']} rows visible" in result.stderr


@pytest.mark.slow
def test_last_line_cut_short_in_a_long_file_fails_at_the_end(tmp_path, socat_sink):
    data = gzip.open(FILES["cpu-only"]).read()
    cut = tmp_path / "cut.ilp"
    cut.write_bytes(data[:-1])
    result = run_cli("replay", str(cut), "--target", "sink", "--host", socat_sink.host, "--ilp-port",
                     str(socat_sink.port), "--write-size", str(PIECE), "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 1, "does not end with a newline", "were written before the failure")
    sent = failed_record(tmp_path)["phases"]["send"]
    assert 0 < sent["rows"] < len(data.splitlines()) and data[: sent["bytes"]].count(b"\n") == sent["rows"]


@pytest.mark.slow
def test_connection_reset_mid_file_is_one_line_and_a_record(tmp_path):
    """A peer that takes some bytes, then resets the connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def reset_after_some_bytes() -> None:
        connection, _ = listener.accept()
        received = 0
        while received < 200_000:
            received += len(connection.recv(65536))
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()

    peer = threading.Thread(target=reset_after_some_bytes, daemon=True)
    peer.start()
    try:
        result = run_cli("replay", str(BIG_GOLDEN), "--target", "sink", "--host", "127.0.0.1", "--ilp-port",
                         str(port), "--write-size", str(PIECE), "--results", str(tmp_path / "r.json"), timeout=60)
    finally:
        listener.close()
    assert_one_line_error(result, 1, f"writing to 127.0.0.1:{port} failed", "were written before the failure")
    sent = failed_record(tmp_path)["phases"]["send"]
    assert 0 < sent["bytes"] < len(gzip.open(BIG_GOLDEN).read())


def peak_rss_of_replay(path, sink, tmp_path) -> int:
    """Peak RSS (bytes) of a ``replay`` subprocess of ``path`` into the sink, 1 MiB pieces, 2 workers."""
    process = subprocess.Popen([sys.executable, "-m", "harness", "replay", str(path), "--target", "sink",
                                "--host", sink.host, "--ilp-port", str(sink.port), "--workers", "2",
                                "--write-size", str(1 << 20), "--results", str(tmp_path / f"{path.name}.json")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, process.stderr.read()
    process.stderr.close()
    return usage.ru_maxrss * 1024


@pytest.mark.slow
def test_peak_rss_does_not_grow_with_the_file(tmp_path, socat_sink):
    """A file 25 times the size of another (about 200 MiB) costs a replay no more than an eighth of its own
    size more peak memory: the pieces in flight are a fixed pool (holding the file would cost its size, twice)."""
    data = gzip.open(BIG_GOLDEN).read()
    small, large = tmp_path / "small.ilp", tmp_path / "large.ilp"
    small.write_bytes(data)
    with open(large, "wb") as out:
        for _ in range(25):
            out.write(data)
    small_rss = peak_rss_of_replay(small, socat_sink, tmp_path)
    large_rss = peak_rss_of_replay(large, socat_sink, tmp_path)
    record = json.loads((tmp_path / "large.ilp.json").read_text())
    assert record["phases"]["send"]["bytes"] == large.stat().st_size
    assert large_rss - small_rss < large.stat().st_size / 8, (small_rss, large_rss)


def test_small_file_errors_come_before_a_run(tmp_path, devnull):
    """A file that ends within its first piece is checked whole before anything is sent or recorded."""
    data = gzip.open(FILES["cpu-only"]).read()
    cut = tmp_path / "cut.ilp"
    cut.write_bytes(data[:-1])
    with pytest.raises(Exception, match="does not end with a newline") as raised:
        run_replay(ReplayOptions(path=str(cut), target="sink", results_dir=str(tmp_path / "results")), out=devnull)
    assert not isinstance(raised.value, RunError)
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_a_devops_file_whose_first_piece_is_all_cpu_widens_to_devops(tmp_path, questdb, devnull):
    """TSBS's devops file at a large scale begins with more cpu lines than a piece holds: told a cpu-only
    file at first, the replay takes the other eight tables on where they appear, before they go out."""
    data = gzip.open(FILES["devops"]).read()
    assert data.index(b"\ndiskio,") > 1024  # the first piece names cpu alone
    record = run_replay(ReplayOptions(path=str(FILES["devops"]), host=questdb.host, ilp_port=questdb.ilp_port,
                                      http_port=questdb.http_port, results_dir=str(tmp_path), workers=2,
                                      write_size=1024), out=devnull)
    expected = table_lines(data)
    assert record.status == "ok" and record.parameters["use_case"] == "devops" and len(expected) == 9
    assert record.phases["send"].tables == expected
    assert {table: questdb.client.count(table) for table in expected} == expected


@pytest.mark.slow
def test_a_table_of_another_use_case_half_way_ends_the_run(tmp_path, socat_sink):
    cpu, iot = (gzip.open(FILES[name]).read() for name in ("cpu-only", "iot"))
    mixed = tmp_path / "mixed.ilp"
    mixed.write_bytes(cpu + iot)
    result = run_cli("replay", str(mixed), "--target", "sink", "--host", socat_sink.host, "--ilp-port",
                     str(socat_sink.port), "--write-size", str(PIECE), "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 1, "after its first piece, which told a cpu-only file",
                          "were written before the failure")
    assert failed_record(tmp_path)["phases"]["send"]["rows"] <= len(cpu.splitlines())


@pytest.mark.slow
def test_a_reset_while_another_worker_is_blocked_ends_every_worker(tmp_path):
    """Both connections stall (the peer reads neither) until every queue is full; then one is reset. The
    other worker, blocked in a write, still gets the end once its peer reads again: the run ends in one
    line instead of waiting for a worker that waits for a piece."""
    data = gzip.open(BIG_GOLDEN).read()
    large = tmp_path / "large.ilp"
    with open(large, "wb") as out:
        for _ in range(8):
            out.write(data)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def stall_then_reset_one() -> None:
        first, _ = listener.accept()
        second, _ = listener.accept()
        time.sleep(2)  # both writers blocked, their queues full
        first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        first.close()
        time.sleep(0.5)
        while second.recv(1 << 20):
            pass
        second.close()

    peer = threading.Thread(target=stall_then_reset_one, daemon=True)
    peer.start()
    try:
        result = run_cli("replay", str(large), "--target", "sink", "--host", "127.0.0.1", "--ilp-port", str(port),
                         "--workers", "2", "--write-size", str(1 << 20), "--results", str(tmp_path / "r.json"),
                         timeout=60)
    finally:
        listener.close()
    assert_one_line_error(result, 1, f"writing to 127.0.0.1:{port} failed", "were written before the failure")
    assert failed_record(tmp_path)["phases"]["send"]["bytes"] < large.stat().st_size


@pytest.mark.slow
def test_questdb_dropping_the_connection_half_way_is_stated_at_once(tmp_path, questdb):
    """A line QuestDB cannot parse, a third of the way in: the server drops the connection, the next write
    fails, and the error says what was written and what the server holds, without waiting for rows that
    will never come."""
    data = gzip.open(BIG_GOLDEN).read()
    third = data.index(b"\n", len(data) // 3) + 1
    broken = tmp_path / "broken.ilp"
    broken.write_bytes(data[:third] + b"cpu,hostname=x usage_user=not-a-number 1451606400000000000\n" + data[third:])
    result = run_cli("replay", str(broken), "--host", questdb.host, "--ilp-port", str(questdb.ilp_port),
                     "--http-port", str(questdb.http_port), "--write-size", str(PIECE),
                     "--results", str(tmp_path / "r.json"), timeout=60)
    assert_one_line_error(result, 1, f"writing to {questdb.host}:{questdb.ilp_port} failed",
                          "were written before the failure", "server says cpu: ")
    sent = failed_record(tmp_path)["phases"]["send"]
    assert 0 < sent["rows"] < len(data.splitlines())
    assert questdb.client.count("cpu") <= data[:third].count(b"\n")
