"""A disk that fills up under a send: QuestDB on a small tmpfs this test mounts (root only). The run must
end, in one line, with the server's own word on the table (its WAL apply suspended: DISK FULL) and the rows
it shows, never hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import KILLABLE_PORTS, assert_one_line_error

# A QuestDB of its own on a tmpfs, filled by a 5M-row send.
pytestmark = pytest.mark.slow

# QuestDB preallocates about 210 MB at start; 400 MB leaves it room to start and not to take 5M rows.
TMPFS_SIZE = "400m"


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=False)


@pytest.mark.parametrize("transport", ["http", "tcp"])
def test_a_full_disk_ends_the_run_with_the_servers_word(small_disk, questdb_factory, tmp_path, transport):
    from harness.servers.questdb import NativeQuestDB

    server = NativeQuestDB(small_disk / "root", **KILLABLE_PORTS).start()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "harness", "bench", "--send", "--stream", "--transport", transport,
             "--row-count", "5000000", "--host", server.host, "--http-port", str(server.http_port),
             "--ilp-port", str(server.ilp_port), "--reporting-period", "0", "--validation-query-timeout", "30",
             "--results", str(tmp_path / "r.json")],
            capture_output=True, text=True, timeout=600)
    finally:
        server.stop()
    assert_one_line_error(result, 1, "server says cpu: ", "rows visible")
    # The client saw a reset connection; the server's own word names the cause.
    assert "WAL apply suspended: DISK FULL" in result.stderr, result.stderr
    if transport == "tcp":
        assert "upper bound" in result.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["status"] == "failed" and "DISK FULL" in record["error"]
