"""harness.servers: QuestDB from its jar (a release's, the pinned QWP server's, a jar of the user's: --questdb-jar) and
the socat sink, started, checked, stopped and killed for real."""

from __future__ import annotations

import os
import socket
import subprocess
import urllib.request
import zipfile

import pytest
from helpers import BUSY_CLI_PORTS, KILLABLE_PORTS, NATIVE_CLI_PORTS, OWN_SINK_PORT, assert_one_line_error, run_cli
from prerequisites import problem

from harness.errors import RunError, UsageError
from harness.questdb.features import QWP, detect
from harness.servers.jar import jar_version, qwp_jar, qwp_jar_of
from harness.servers.java import SERVER_MAIN, java_for, java_needed
from harness.servers.questdb import SERVER_CONF, NativeQuestDB
from harness.servers.sink import SocatSink
from harness.versions import questdb_version, qwp_server
from harness.questdb.http import QuestDBSql
from harness.questdb.wal import wait_for_count


def port_options(ports: dict[str, int]) -> list[str]:
    """``--http-port N --ilp-port N ...`` for ``harness native``."""
    return [arg for name, port in ports.items() for arg in (f"--{name}-port", str(port))]


# The CLI tests' own ports (the session server holds 19000..., the killable one 19100...).
CLI_PORTS = port_options(NATIVE_CLI_PORTS)


def native(*args: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return run_cli("native", *args, timeout=timeout, env=env)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


# --- the API, on the session's server and on servers of the test's own --------------------------------


def test_session_server_runs_the_project_configuration(questdb_server):
    server = questdb_server.server
    assert server.is_running() and server.healthy()
    assert int(server.pid_file.read_text()) == server.pid()
    assert (server.root / "conf" / "server.conf").read_text() == SERVER_CONF.read_text()
    for port in server.ports.values():
        assert listening(port), port
    # /status and /metrics live on the min port (metrics.enabled=true in conf/server.conf).
    with urllib.request.urlopen(f"http://127.0.0.1:{server.min_port}/status", timeout=5) as response:
        assert response.status == 200
    with urllib.request.urlopen(f"http://127.0.0.1:{server.min_port}/metrics", timeout=5) as response:
        assert b"questdb_" in response.read()
    assert f"QuestDB {questdb_version()}" in server.log_file.read_text(errors="replace")
    assert questdb_server.client.server_version() == questdb_version()


def test_start_on_a_running_root_is_a_no_op(questdb_server):
    same = NativeQuestDB(questdb_server.root, questdb_server.http_port, questdb_server.ilp_port,
                         questdb_server.pg_port, questdb_server.min_port)
    assert same.is_running() and same.pid() == questdb_server.server.pid()
    same.start()
    assert same.process is None  # nothing new was launched
    assert questdb_server.server.healthy()


@pytest.mark.slow
def test_stop_is_graceful_and_frees_the_ports(killable_questdb):
    server = killable_questdb.server
    client = killable_questdb.client
    client.exec("create table kept (x long, ts timestamp) timestamp(ts) partition by day wal")
    client.exec("insert into kept select x, x::timestamp from long_sequence(10)")
    wait_for_count(client, "kept", 10, timeout=60)
    server.stop()
    assert not server.is_running() and not server.pid_file.exists()
    assert server.process.returncode is not None
    assert "QuestDB is shutdown" in server.log_file.read_text(errors="replace")
    assert not any(listening(port) for port in server.ports.values())
    # The data survives a clean stop: the same root starts again with the table and its rows.
    server.start()
    assert client.count("kept") == 10


@pytest.mark.slow
def test_kill_is_a_crash(killable_questdb):
    server = killable_questdb.server
    pid = server.pid()
    killable_questdb.kill()
    assert not server.is_running()
    assert server.process.returncode == -9
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not any(listening(port) for port in server.ports.values())
    with pytest.raises(RunError, match=f"127.0.0.1:{server.http_port}"):
        killable_questdb.client.ping()
    server.stop()  # after a crash, stop only tidies up
    assert not server.pid_file.exists()


def test_busy_port_is_refused_before_starting(tmp_path):
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", KILLABLE_PORTS["ilp_port"]))
        holder.listen()
        server = NativeQuestDB(tmp_path / "root", **KILLABLE_PORTS)
        with pytest.raises(RunError, match=fr"port {KILLABLE_PORTS['ilp_port']} \(ilp\) is already in use"):
            server.start()
    assert server.process is None and not server.is_running()


@pytest.mark.slow
@pytest.mark.server
def test_a_server_that_exits_at_start_shows_its_log(tmp_path):
    server = NativeQuestDB(tmp_path / "root", **KILLABLE_PORTS,
                           extra_env={"QDB_SHARED_WORKER_COUNT": "not-a-number"})
    with pytest.raises(RunError) as failure:
        server.start()
    message = str(failure.value)
    assert "QuestDB exited at start" in message
    assert "shared.worker.count" in message and str(server.log_file) in message
    assert "\n" not in message
    assert not server.is_running() and not server.pid_file.exists()


@pytest.mark.server
def test_start_timeout_kills_the_server_and_shows_its_log(tmp_path):
    server = NativeQuestDB(tmp_path / "root", **KILLABLE_PORTS)
    with pytest.raises(RunError, match=r"did not become healthy within 0s: .*\(log: "):
        server.start(timeout=0)
    assert server.process.returncode == -9
    assert not server.is_running() and not server.pid_file.exists()


# --- the socat sink ---------------------------------------------------------------------------------------


def test_sink_swallows_everything(socat_sink):
    payload = b"cpu,hostname=host_0 usage_user=58i 1451606400000000000\n" * 100_000
    for _ in range(2):  # fork: every connection gets its own copy of socat
        with socket.create_connection((socat_sink.host, socat_sink.port), timeout=10) as connection:
            connection.sendall(payload)
            connection.shutdown(socket.SHUT_WR)
            connection.settimeout(10)
            assert connection.recv(1) == b""  # -u: nothing ever comes back
    assert socat_sink.sink.is_running()


@pytest.mark.server
def test_sink_stop_closes_open_connections(tmp_path):
    sink = SocatSink(OWN_SINK_PORT, pid_file=tmp_path / "sink.pid").start()
    try:
        connection = socket.create_connection(("127.0.0.1", OWN_SINK_PORT), timeout=10)
        connection.sendall(b"x" * 1000)
    finally:
        sink.stop()
    # The per-connection child is gone with the listener: the connection ends.
    with connection:
        try:
            assert connection.recv(1) == b""
        except ConnectionResetError:
            pass
    assert not listening(OWN_SINK_PORT) and not sink.is_running() and not sink.pid_file.exists()


def test_sink_on_a_busy_port_is_refused(tmp_path, socat_sink):
    with pytest.raises(RunError, match=f"port {socat_sink.port} \\(sink\\) is already in use"):
        SocatSink(socat_sink.port, pid_file=tmp_path / "sink.pid").start()


# --- the command line (make native-up / native-status / native-down) -----------------------------------


@pytest.mark.slow
@pytest.mark.server
def test_cli_up_status_down(tmp_path):
    root = ["--root", str(tmp_path / "root")]
    up = native("up", *root, *CLI_PORTS)
    try:
        assert up.returncode == 0, up.stderr
        assert f"QuestDB {questdb_version()} up" in up.stdout and "sink up" in up.stdout
        assert all(listening(port) for port in NATIVE_CLI_PORTS.values())
        assert QuestDBSql("127.0.0.1", NATIVE_CLI_PORTS["http"]).server_version() == questdb_version()
        again = native("up", *root, *CLI_PORTS)
        assert again.returncode == 0 and again.stdout.count("already running") == 2, again.stdout
        status = native("status", *root, *CLI_PORTS)
        assert status.returncode == 0 and "healthy" in status.stdout and "sink: running" in status.stdout
    finally:
        down = native("down", *root, *CLI_PORTS)
    assert down.returncode == 0, down.stderr
    assert "QuestDB stopped" in down.stdout and "sink stopped" in down.stdout
    assert not any(listening(port) for port in NATIVE_CLI_PORTS.values())
    status = native("status", *root, *CLI_PORTS)
    assert status.returncode == 3 and "QuestDB: not running" in status.stdout
    assert native("down", *root, *CLI_PORTS).returncode == 0  # stopping twice is fine


def test_cli_busy_port_is_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", BUSY_CLI_PORTS["http"]))
        holder.listen()
        result = native("up", "--questdb-only", "--root", str(tmp_path / "root"), *port_options(BUSY_CLI_PORTS))
    assert_one_line_error(result, 1, f"port {BUSY_CLI_PORTS['http']}")


def test_cli_without_java_is_one_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # an empty directory: no java, no mvn, no socat
    result = native("up", "--root", str(tmp_path / "root"), *CLI_PORTS, env=env)
    assert_one_line_error(result, 1, "java is not installed")
    assert not listening(NATIVE_CLI_PORTS["http"])


def test_cli_bad_option_is_one_line():
    assert_one_line_error(native("up", "--http-port", "many"), 2, "--http-port")
    assert_one_line_error(native("sideways"), 2, "sideways")


# --- a server jar of the user's: --questdb-jar (the pinned QWP server, a release, a path) -------------------


def qwp_version() -> str:
    return jar_version(qwp_jar())


@pytest.mark.slow
@pytest.mark.server
def test_cli_up_with_the_qwp_server_says_what_runs(tmp_path):
    """`native up --questdb-jar qwp`: the pinned QWP server on its Java 25, named as it is (its jar, its version),
    QWP found on it; a second `up` naming another server leaves it as it is, in one line; status names its jar."""
    root = ["--root", str(tmp_path / "root"), "--questdb-only", *CLI_PORTS]
    up = native("up", *root, "--questdb-jar", "qwp")
    try:
        assert up.returncode == 0, up.stderr
        assert f"QuestDB {qwp_version()} ({qwp_jar().name}) up" in up.stdout, up.stdout
        features = detect(QuestDBSql("127.0.0.1", NATIVE_CLI_PORTS["http"]))
        assert features.version == qwp_version() and features.qwp and features.qwp_queries
        assert features.lacking([QWP], "here") is None
        other = native("up", *root, "--questdb-jar", questdb_version())
        assert_one_line_error(other, 1, f"QuestDB {qwp_version()} ({qwp_jar().name}) already runs",
                              f"not QuestDB {questdb_version()}", "native down")
        unnamed = native("up", *root)  # the pinned release is not named: what runs is said as it is
        assert unnamed.returncode == 0 and f"QuestDB {qwp_version()} ({qwp_jar().name}) already running" \
            in unnamed.stdout, unnamed.stdout
        status = native("status", *root)
        assert status.returncode == 0 and str(qwp_jar()) in status.stdout and "healthy" in status.stdout
    finally:
        down = native("down", *root)
    assert down.returncode == 0 and "QuestDB stopped" in down.stdout, down.stderr
    assert not any(listening(port) for name, port in NATIVE_CLI_PORTS.items() if name != "sink")


@pytest.mark.slow
def test_cli_a_server_jar_that_is_not_there_is_one_line(tmp_path):
    root = ["--root", str(tmp_path / "root"), "--questdb-only", *CLI_PORTS]
    missing = tmp_path / "no-such.jar"
    assert_one_line_error(native("up", *root, "--questdb-jar", str(missing)), 2,
                          f"--questdb-jar {missing}: no such file", "a release", "qwp")
    given = dict(os.environ, HARNESS_QUESTDB_JAR=str(missing))
    assert_one_line_error(native("up", *root, env=given), 2, f"$HARNESS_QUESTDB_JAR {missing}: no such file")
    (tmp_path / "notes.jar").write_text("not a jar")
    assert_one_line_error(native("fetch", "--questdb-jar", str(tmp_path / "notes.jar")), 2,
                          "notes.jar: not a QuestDB server jar")
    assert not listening(NATIVE_CLI_PORTS["http"]) and not (tmp_path / "root").exists()


@pytest.mark.slow
def test_cli_a_server_jar_no_java_here_runs_is_one_line(tmp_path):
    """A jar whose server classes need a Java newer than any installed (class file version 143: Java 99)."""
    jar = tmp_path / "questdb-future.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr(SERVER_MAIN, b"\xca\xfe\xba\xbe\x00\x00\x00\x8f")
    result = native("up", "--root", str(tmp_path / "root"), "--questdb-only", *CLI_PORTS, "--questdb-jar", str(jar))
    assert_one_line_error(result, 2, "QuestDB questdb-future.jar needs Java 99; this machine has Java",
                          "install a Java 99")
    assert not listening(NATIVE_CLI_PORTS["http"])


@pytest.mark.slow
def test_cli_fetch_finds_the_qwp_server_and_the_java_it_needs():
    result = native("fetch", "--questdb-jar", "qwp")
    assert result.returncode == 0, result.stderr
    assert f"QuestDB {qwp_version()} ({qwp_jar().name}) jar: {qwp_jar()}; runs on Java 25" in result.stdout
    assert java_needed(qwp_jar()) == 25


def test_the_pinned_qwp_jar_is_checked_and_the_test_prerequisites_find_it():
    """What `make test-deps` and the QWP fixtures ask: the jar there, its sha256 the pinned one, a Java 25 here.
    A pin whose jar is missing, or whose sha256 differs, is the project's fault: one line, RunError."""
    pin, sha256 = qwp_server()
    assert problem("qwp-server") is None
    assert qwp_jar_of(pin, sha256) == qwp_jar()
    with pytest.raises(RunError, match=r"the QWP server's jar .*no-such\.jar is missing \(\.env's QUESTDB_QWP\)"):
        qwp_jar_of("../no-such.jar", sha256)
    with pytest.raises(RunError, match=f"its sha256 is {sha256}, not the pinned 00"):
        qwp_jar_of(pin, "00" * 32)
    with pytest.raises(UsageError, match="QuestDB qwp needs Java 99; this machine has .*Java 25"):
        java_for(99, "QuestDB qwp")
