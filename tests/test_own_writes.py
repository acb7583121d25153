"""The harness's own writes fail in one line, never a traceback, and never leave a partial file where a
complete one is expected: a full device (/dev/full), a small full tmpfs (root only), a read-only one."""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers import GOLDEN_DIR, assert_one_error_line, assert_one_line_error, run_cli

GOLDEN = GOLDEN_DIR / "cpu-only_seed123_scale10_1h_10s.ilp.gz"
SMALL = ["--scale", "10", "--timestamp-end", "2016-01-01T01:00:00Z"]  # 3,600 rows, about 2 MB of ILP


def assert_one_line(result: subprocess.CompletedProcess, code: int, *fragments: str) -> None:
    """assert_one_line_error, the run's own notes (its seed, what it skipped) left out."""
    assert_one_line_error(result, code, *fragments, besides=("seed: ", "skipped "))


@pytest.fixture
def tmpfs(tmp_path):
    """Mounts a tmpfs of the given size (and options) under tmp_path; unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounts = []

    def mount(size: str, *options: str):
        point = tmp_path / f"disk{len(mounts)}"
        point.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", *options]), "tmpfs", str(point)],
                       check=True)
        mounts.append(point)
        return point

    yield mount
    for point in mounts:
        subprocess.run(["umount", "--lazy", str(point)], check=False)


def fill(disk) -> None:
    """Fill the disk to its last byte (with a file ``filler``)."""
    with open(disk / "filler", "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"x" * 4096)
        except OSError:
            pass


@pytest.mark.slow
@pytest.mark.parametrize("args, what", [
    (["generate", *SMALL, "--file", "/dev/full"], "--file"),
    (["generate", *SMALL, "--use-case", "devops", "--file", "/dev/full"], "--file"),
    (["generate", *SMALL, "--fields", "long", "--file", "/dev/full"], "--file"),
    (["queries", "generate", "--scale", "10", "--query-type", "single-groupby-1-1-1", "--file", "/dev/full"], "query file"),
    (["bench", "--row-count", "1000", "--scale", "10", "--write-ilp", "/dev/full", "--results", "{tmp}/r.json"],
     "--write-ilp"),
    (["report", str(GOLDEN_DIR.parent / "missing.json")], "missing.json"),
])
def test_a_full_device_is_one_line(tmp_path, args, what):
    result = run_cli(*[arg.replace("{tmp}", str(tmp_path)) for arg in args])
    assert_one_line(result, 1 if what != "missing.json" else 2, what)


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["generate", *SMALL, "--file", "{disk}/out.ilp"],
    ["generate", *SMALL, "--use-case", "devops", "--file", "{disk}/out.ilp"],
    ["bench", "--row-count", "3600", "--scale", "10", "--write-ilp", "{disk}/out.ilp", "--results", "{tmp}/r.json"],
])
def test_a_full_disk_leaves_no_partial_file(tmpfs, tmp_path, args):
    disk = tmpfs("512k")
    result = run_cli(*[arg.replace("{disk}", str(disk)).replace("{tmp}", str(tmp_path)) for arg in args])
    assert_one_line(result, 1, "cannot write", "No space left on device")
    assert os.listdir(disk) == [], "a partial file was left"


@pytest.mark.slow
def test_a_results_file_on_a_full_disk_is_one_line(tmpfs):
    disk = tmpfs("64k")
    fill(disk)
    (disk / "results").mkdir()
    result = run_cli("bench", "--row-count", "1000", "--scale", "10", "--results", str(disk / "results" / "r.json"))
    assert_one_line(result, 1, "results file", "No space left on device")
    assert os.listdir(disk / "results") == []


@pytest.mark.slow
def test_a_report_on_a_full_disk_is_one_line(tmpfs, tmp_path):
    record = tmp_path / "r.json"
    assert run_cli("bench", "--row-count", "1000", "--scale", "10", "--results", str(record)).returncode == 0
    disk = tmpfs("16k")
    fill(disk)
    result = run_cli("report", str(record), "--output", str(disk / "report.html"))
    assert_one_line(result, 1, "the report", "No space left on device")
    assert os.listdir(disk) == ["filler"]


@pytest.mark.slow
def test_a_read_only_folder_is_one_line(tmpfs):
    disk = tmpfs("1m", "ro")
    result = run_cli("generate", *SMALL, "--file", str(disk / "out.ilp"))
    assert_one_line(result, 2, "--file", "Read-only file system")


@pytest.mark.slow
def test_a_folder_that_vanishes_mid_write_is_one_line(tmp_path):
    import shutil
    import sys
    import time

    folder = tmp_path / "out"
    folder.mkdir()
    run = subprocess.Popen([sys.executable, "-m", "harness", "generate", "--scale", "200", "--seed", "1",
                            "--file", str(folder / "data.ilp")], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(name.endswith(".partial") for name in os.listdir(folder)):
            assert run.poll() is None and time.monotonic() < deadline, "no partial file appeared"
            time.sleep(0.01)
        shutil.rmtree(folder)
        _, stderr = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, stderr
    assert_one_error_line(stderr)
    assert stderr.startswith("error: --file: cannot write") and not folder.exists(), stderr
