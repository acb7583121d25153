"""``harness matrix``: the same bench against QuestDB servers and server.conf overrides, each cell a real server
run natively from its jar (7.0.1, the original benchmark's, the pinned release, and the pinned QWP server), alternated
over rounds into one benchmark record; a cell whose release lacks what the bench needs ends in one line and the others
go on; bad cells and options end in one line before any server starts; no server is left running however the
matrix ends (Ctrl-C included)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.cli import main
from harness.run.matrix import Cell, base_conf, cells, parse_config, server_conf
from harness.servers.jar import jar_version, qwp_jar
from harness.servers.java import java_needed, java_release
from harness.servers.server_build import ServerBuild
from harness.versions import questdb_version
from tests.helpers import MATRIX_BASE_PORT, assert_one_error_line, assert_one_line_error, run_cli

OLD = "7.0.1"  # the original benchmark's release: no ILP over HTTP, no DEDUP, protocol 1 only
PINNED = questdb_version()
ROWS = "20000"

pytestmark = pytest.mark.server


def matrix(tmp_path: Path, *args: str, timeout: float = 600, env: dict | None = None):
    return run_cli("matrix", "--roots", str(tmp_path / "roots"), "--base-port", str(MATRIX_BASE_PORT),
                   "--results", str(tmp_path / "matrix.json"), *args, timeout=timeout, env=env)


def servers_under(roots: Path) -> list[psutil.Process]:
    """The QuestDB processes (Java) whose root lies under ``roots``."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = process.info["cmdline"] or ()
        if command and Path(command[0]).name == "java" and any(str(roots) in part for part in command):
            found.append(process)
    return found


# --- bad input: one line, exit 2, before any server starts ---------------------------------------------

@pytest.mark.parametrize("args, fragments", [
    (("--versions", ""), ("--versions", "at least one")),
    (("--versions", "6.5.5"), ("QuestDB 6.5.5 is too old for Java", "7.0.0 or later")),
    (("--versions", "9.3.x"), ("--versions 9.3.x: no such file", "numbers and dots")),
    (("--versions", f"{PINNED},/no/such.jar"), ("--versions /no/such.jar: no such file", "qwp")),
    (("--versions", "qwp", "--configs", "cairo.no.such.key=1"), ("QuestDB qwp does not know", "cairo.no.such.key")),
    (("--versions", PINNED, "--configs", "wal=true wal=true"), ("duplicate cell", f"{PINNED} wal=true")),
    (("--versions", f"{PINNED} {PINNED}"), ("duplicate cell",)),
    (("--versions", PINNED, "--configs", "cairo.no.such.key=1"), (f"QuestDB {PINNED} does not know",
                                                                  "cairo.no.such.key")),
    (("--versions", f"{OLD} {PINNED}", "--configs", "line.http.enabled=true"), (f"QuestDB {OLD} does not know",
                                                                                 "line.http.enabled")),
    (("--versions", PINNED, "--configs", "wal"), ("each setting is key=value",)),
    (("--versions", PINNED, "--configs", "wal=true,wal=false"), ("sets cairo.wal.enabled.default twice",)),
    (("--versions", PINNED, "--host", "10.1.2.3"), ("--host", "starts each cell's server")),
    (("--versions", PINNED, "--ilp-port", "9999"), ("--ilp-port",)),
    (("--versions", PINNED, "--target", "sink"), ("--target sink",)),
    (("--versions", PINNED, "--clients", "2"), ("--clients",)),
    (("--versions", PINNED, "--exactly-once", "--transport", "http", "--table-wal", "bypass"),
     ("--exactly-once", "WAL tables only")),
])
def test_bad_input_ends_in_one_line_before_any_server(tmp_path, capsys, args, fragments):
    with pytest.raises(SystemExit) as exit_:  # in this process: the command line's own path, quicker
        main(["matrix", "--roots", str(tmp_path / "roots"), "--base-port", str(MATRIX_BASE_PORT),
              "--results", str(tmp_path / "matrix.json"), "--row-count", ROWS, *args])
    assert exit_.value.code == 2
    assert_one_error_line(capsys.readouterr().err, *fragments)
    assert not (tmp_path / "roots").exists()
    assert not servers_under(tmp_path / "roots")


@pytest.mark.slow
def test_a_release_maven_does_not_serve(tmp_path):
    result = matrix(tmp_path, "--versions", "9.3.99", "--row-count", ROWS, timeout=300)
    assert_one_line_error(result, 2, "QuestDB 9.3.99", "could not fetch org.questdb:questdb:9.3.99")


@pytest.mark.slow
def test_ports_past_the_last_or_in_use(tmp_path):
    result = run_cli("matrix", "--versions", f"{OLD} {PINNED}", "--base-port", "65530", "--row-count", ROWS,
                     "--roots", str(tmp_path / "roots"))
    assert_one_line_error(result, 2, "--base-port 65530", "past 65535")
    with socket.socket() as held:  # the second cell's PGWire port, taken
        held.bind(("127.0.0.1", MATRIX_BASE_PORT + 12))
        held.listen()
        result = matrix(tmp_path, "--versions", f"{OLD} {PINNED}", "--row-count", ROWS)
    assert_one_line_error(result, 2, f"port {MATRIX_BASE_PORT + 12} (cell 2's pg", "is in use")
    assert not servers_under(tmp_path / "roots")


@pytest.mark.slow
def test_a_client_configuration_string_is_refused(tmp_path):
    result = matrix(tmp_path, "--versions", PINNED, "--row-count", ROWS,
                    env={**os.environ, "QDB_CLIENT_CONF": "http::addr=localhost:9000;"})
    assert_one_line_error(result, 2, "QDB_CLIENT_CONF", "unset it")


# --- cells and their server.conf ------------------------------------------------------------------------

def test_cells_are_releases_times_configs_with_short_keys():
    made = cells(f"{OLD},{PINNED}", "wal=true shared-workers=2,ilp-io-workers=1 as-is")
    assert [cell.name for cell in made] == [f"{release} {config}" for release in (OLD, PINNED)
                                            for config in ("wal=true", "shared-workers=2,ilp-io-workers=1", "as-is")]
    assert made[1].overrides == (("shared.worker.count", "2"), ("line.tcp.io.worker.count", "1"))
    assert parse_config("as-is") == ()


def test_a_cell_conf_is_the_projects_less_unknown_keys_plus_its_overrides():
    cell = Cell(ServerBuild(OLD), "wal=false", parse_config("wal=false"))
    text, left_out = server_conf(cell)
    lines = dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    # 7.0.1 knows none of http.export.connection.limit: it is left out, and said so.
    assert left_out == [key for key, _ in base_conf() if key not in ServerBuild(OLD).known_keys]
    assert "http.export.connection.limit" in left_out and "http.export.connection.limit" not in lines
    assert lines["cairo.wal.enabled.default"] == "false"
    assert lines["line.udp.enabled"] == "false"  # its UDP receiver would listen on 0.0.0.0
    for key, value in base_conf():
        if key not in left_out and key != "cairo.wal.enabled.default":
            assert lines[key] == value


def test_the_qwp_column_is_the_pinned_jar_its_version_java_and_keys_its_own():
    made = cells(f"{PINNED},qwp", "wal=false")
    assert [cell.name for cell in made] == [f"{PINNED} wal=false", "qwp wal=false"]
    qwp = made[1].build
    assert qwp.jar == qwp_jar() and qwp.version == jar_version(qwp_jar()) != PINNED
    assert java_release(qwp.check_runnable()) >= java_needed(qwp_jar()) == 25
    assert "cairo.wal.enabled.default" in qwp.known_keys and qwp.known_keys != made[0].build.known_keys
    assert server_conf(made[1])[1] == []  # it knows every key of the project's conf


# --- a real matrix ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """7.0.1 and the pinned release, WAL off (the project's conf turns it on), over ILP/TCP: a warm-up round and
    two counted rounds, with the report."""
    folder = tmp_path_factory.mktemp("matrix")
    result = matrix(folder, "--versions", f"{OLD} {PINNED}", "--configs", "wal=false", "--rounds", "2",
                    "--row-count", ROWS, "--report")
    return folder, result


@pytest.mark.slow
def test_every_cell_runs_alternated_on_its_own_server(ran):
    folder, result = ran
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr)
    record = json.loads((folder / "matrix.json").read_text())
    assert record["benchmark"] == "matrix" and record["extra"]["status"] == "ok"
    (comparison,) = record["comparisons"]
    names = [f"{OLD} wal=false", f"{PINNED} wal=false"]
    assert comparison["variants"] == names and comparison["baseline"] == names[0]
    assert [one["number"] for one in comparison["rounds"]] == [0, 1, 2]
    # Rotated: the two cells swap places between counted rounds.
    assert comparison["rounds"][1]["order"] == list(reversed(comparison["rounds"][2]["order"]))
    for one in comparison["rounds"]:
        for name, measured in one["measurements"].items():
            assert measured["rows"] == int(ROWS)
            assert measured["extra"]["server_cpu_seconds"] > 0
            assert measured["extra"]["server_peak_rss_bytes"] > 100 * 2**20
            run = json.loads(Path(measured["run_record"]).read_text())
            # Its own server, of its release, validated there; WAL as the cell's config says.
            assert run["server"]["questdb_version"] == name.split()[0]
            assert run["server"]["wal_tables"] == {"cpu": False}
            assert run["validation"]["visible_rows"] == int(ROWS)
    summary = comparison["summary"][names[1]]
    for figure in ("rows_per_second", "time_to_visible_seconds", "server_cpu_seconds_per_million_rows"):
        assert summary[figure]["paired_ratio"] is not None
    cells_params = {cell["name"]: cell for cell in record["parameters"]["cells"]}
    assert "http.export.connection.limit" in cells_params[names[0]]["left_out_of_server_conf"]
    assert cells_params[names[1]]["left_out_of_server_conf"] == []
    assert all(record["extra"]["cells"][name]["rest_cpu_share"] >= 0 for name in names)
    assert record["extra"]["cells"][names[0]]["features"]["ilp_over_http"] is False
    assert record["extra"]["cells"][names[1]]["features"]["ilp_over_http"] is True
    assert "Cells (2 rounds" in result.stdout and names[1] in result.stdout


@pytest.mark.slow
def test_it_leaves_no_server_and_removes_the_roots_it_made(ran):
    folder, result = ran
    assert result.returncode == 0, result.stderr
    assert not servers_under(folder / "roots")
    assert not any((folder / "roots").iterdir())


@pytest.mark.slow
def test_the_report_charts_each_figure_and_compare_reads_it(ran):
    folder, result = ran
    assert result.returncode == 0, result.stderr
    page = (folder / "matrix.html").read_text()
    for unit in ("M rows/s", "seconds to visible", "server CPU s per million rows", "server peak RSS MiB"):
        assert f"matrix: cells, {unit}" in page
    compared = run_cli("compare", str(folder / "matrix.json"))
    assert compared.returncode == 0, compared.stderr
    assert f"{PINNED} wal=false" in compared.stdout and "server_cpu_seconds_per_million_rows" in compared.stdout


# --- a cell that cannot run, and Ctrl-C -------------------------------------------------------------------

@pytest.mark.slow
def test_a_release_without_a_feature_ends_its_cell_and_the_others_complete(tmp_path):
    result = matrix(tmp_path, "--versions", f"{OLD} {PINNED}", "--transport", "http", "--rounds", "1",
                    "--row-count", ROWS)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr)
    assert f"cell {OLD} as-is ends: QuestDB {OLD} has no ILP over HTTP, which this bench run needs; the other " \
           f"cells go on" in result.stdout
    record = json.loads((tmp_path / "matrix.json").read_text())
    assert record["extra"]["status"] == "ok"
    assert record["extra"]["cells"][f"{OLD} as-is"]["ended"].startswith(f"QuestDB {OLD} has no ILP over HTTP")
    (comparison,) = record["comparisons"]
    assert comparison["variants"] == [f"{PINNED} as-is"]
    assert [list(one["measurements"]) for one in comparison["rounds"]] == [[f"{PINNED} as-is"]] * 2
    assert all(one["measurements"][f"{PINNED} as-is"]["rows"] == int(ROWS) for one in comparison["rounds"])
    assert not servers_under(tmp_path / "roots")


@pytest.mark.slow
def test_the_qwp_server_beside_a_release_over_qwp(tmp_path):
    """--versions PINNED,qwp --transport qwp: the release lacks QWP, its cell ends in one line naming which server
    has it; the QWP server's cell runs on Java 25, counted exact, its version what the server says."""
    result = matrix(tmp_path, "--versions", f"{PINNED},qwp", "--transport", "qwp", "--rounds", "1",
                    "--row-count", ROWS)
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr)
    assert f"cell {PINNED} as-is ends: QuestDB {PINNED} has no QWP ingest, which this bench run needs (QWP ingest " \
           f"needs QuestDB 10.0" in result.stdout
    record = json.loads((tmp_path / "matrix.json").read_text())
    (comparison,) = record["comparisons"]
    assert comparison["variants"] == ["qwp as-is"]
    for one in comparison["rounds"]:
        measured = one["measurements"]["qwp as-is"]
        assert measured["rows"] == int(ROWS)
        run = json.loads(Path(measured["run_record"]).read_text())
        assert run["server"]["questdb_version"] == jar_version(qwp_jar())
        assert run["plan"]["wire"]["name"] == "QWP" and run["validation"]["visible_rows"] == int(ROWS)
    (qwp_cell,) = [cell for cell in record["parameters"]["cells"] if cell["server"] == "qwp"]
    assert qwp_cell["jar"] == str(qwp_jar()) and qwp_cell["version"] == jar_version(qwp_jar())
    assert record["extra"]["cells"]["qwp as-is"]["features"]["qwp"] is True
    assert not servers_under(tmp_path / "roots")


@pytest.mark.slow
def test_ctrl_c_leaves_no_server(tmp_path):
    roots = tmp_path / "roots"
    command = [sys.executable, "-m", "harness", "matrix", "--versions", PINNED, "--configs", "wal=true wal=false",
               "--row-count", "50000000", "--roots", str(roots), "--base-port", str(MATRIX_BASE_PORT),
               "--results", str(tmp_path / "matrix.json")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:
            if "round warm-up" in line:
                break
        time.sleep(2)  # into its send, both servers up
        assert len(servers_under(roots)) == 2
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:  # a failed assertion above: the matrix still stops its servers
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
    assert process.returncode == 130 and err.strip().splitlines()[-1] == "error: interrupted", err
    assert json.loads((tmp_path / "matrix.json").read_text())["extra"]["status"] == "interrupted"
    assert not servers_under(roots)


@pytest.mark.slow
def test_no_cell_that_can_run_is_one_line(tmp_path):
    result = matrix(tmp_path, "--versions", OLD, "--exactly-once", "--transport", "http", "--row-count", ROWS)
    assert_one_line_error(result, 2, "no cell can run this bench", f"QuestDB {OLD} has no ILP over HTTP and no "
                                                                   f"DEDUP UPSERT KEYS")
    assert not servers_under(tmp_path / "roots")
