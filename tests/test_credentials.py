"""Credentials from the one place every client of ours takes them (``harness.questdb.credentials``): the client
configuration string (``--conf``, ``QDB_CLIENT_CONF``) for HTTP, ILP and QWP, libpq's ``PGUSER``/``PGPASSWORD``/
``PGPASSFILE`` for PGWire; against a real QuestDB with HTTP and PGWire authentication on (and a QWP server with
the HTTP login), each endpoint logs in, a wrong password is named by its endpoint in one line, and no secret
reaches a record or the output."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import threading
import urllib.request

import pytest

from harness.errors import RunError, UsageError
from harness.questdb.credentials import HttpLogin, PgLogin, http_login, pg_login, secrets
from harness.questdb.qwp_client import qwp_conf
from harness.questdb.tls import HttpTls
from harness.servers.jar import qwp_jar
from helpers import QWP_KILLABLE_PORTS, assert_one_line_error, run_cli

HTTP_USER, HTTP_PASSWORD = "bencher", "h77p-Secret-0451"
PG_USER, PG_PASSWORD = "pgbencher", "pg-Secret-9931"
READER, READER_PASSWORD = "reader", "ro-Secret-2207"
ILP_USER = "ilpbencher"


def ilp_key() -> tuple[str, str, str]:
    """A fresh ECDSA P-256 key as the questdb client takes it (token, token_x, token_y: base64url of the
    private scalar and of the public point's coordinates), made by the openssl command."""
    pem = subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout"], capture_output=True,
                         check=True).stdout
    text = subprocess.run(["openssl", "ec", "-text", "-noout"], input=pem, capture_output=True, check=True).stdout
    text = text.decode()

    def hex_bytes(block: str) -> bytes:
        return bytes.fromhex(re.sub(r"[^0-9a-f]", "", block))

    private = hex_bytes(text.split("priv:")[1].split("pub:")[0])[-32:].rjust(32, b"\0")
    public = hex_bytes(text.split("pub:")[1].split("ASN1")[0])

    def encoded(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return encoded(private), encoded(public[1:33]), encoded(public[33:65])


ILP_KEY = ilp_key()


# --- where credentials come from ----------------------------------------------------------------------


def test_http_credentials_come_from_conf_else_the_clients_environment_variable():
    environ = {"QDB_CLIENT_CONF": "http::addr=h:9000;username=env;password=from-env;"}
    assert http_login(None, environ) == HttpLogin("env", "from-env", source="QDB_CLIENT_CONF")
    assert http_login("tcp::addr=h:9009;", environ).source == "QDB_CLIENT_CONF"  # --conf holds none: the env's
    own = http_login("http::addr=h:9000;username=me;password=mine;", environ)
    assert own == HttpLogin("me", "mine", source="--conf")
    assert http_login("http::addr=h:9000;token=abc;", {}).header() == "Bearer abc"
    assert http_login(None, {}) is None
    assert HttpLogin("me", "mine").header() == "Basic bWU6bWluZQ=="
    assert "mine" not in HttpLogin("me", "mine", source="--conf").describe()
    with pytest.raises(UsageError, match="QDB_CLIENT_CONF"):
        http_login(None, {"QDB_CLIENT_CONF": "nonsense"})


def test_qwp_connections_log_in_as_the_http_requests_do():
    """A QWP read's configuration string carries the HTTP login the harness's own requests send (a ws:: string's
    too), its ``;`` escaped; a token as a token."""
    login = http_login(None, {"QDB_CLIENT_CONF": "ws::addr=h:9000;username=me;password=a;;b;"})
    assert login == HttpLogin("me", "a;b", source="QDB_CLIENT_CONF")
    assert qwp_conf("h", 9000, login, HttpTls()).endswith(";username=me;password=a;;b;")
    assert qwp_conf("h", 9000, HttpLogin(token="t0k"), HttpTls()).endswith(";query_pool_min=1;token=t0k;")
    assert "username" not in qwp_conf("h", 9000, None, HttpTls())


def test_pgwire_credentials_follow_libpq(tmp_path):
    assert pg_login("h", 8812, {"HOME": str(tmp_path)}) == PgLogin()
    assert pg_login("h", 8812, {"PGUSER": "u", "PGPASSWORD": "p", "PGDATABASE": "d"}) == PgLogin("u", "p", "d",
                                                                                                  "PGPASSWORD")
    password_file = tmp_path / "pgpass"
    password_file.write_text("# comment\nother:8812:qdb:u:wrong\n*:8812:qdb:u:right\\:colon\n")
    password_file.chmod(0o600)
    login = pg_login("h", 8812, {"PGUSER": "u", "PGPASSFILE": str(password_file)})
    assert login.password == "right:colon" and "password file" in login.source
    # localhost in the file stands for the loopback address too, as libpq reads it.
    password_file.write_text("localhost:8812:qdb:u:loop\n")
    assert pg_login("127.0.0.1", 8812, {"PGUSER": "u", "PGPASSFILE": str(password_file)}).password == "loop"
    password_file.chmod(0o644)
    with pytest.raises(UsageError, match="may be read by others .*chmod 600"):
        pg_login("h", 8812, {"PGUSER": "u", "PGPASSFILE": str(password_file)})
    with pytest.raises(UsageError, match="PGPASSFILE .*: no such file"):
        pg_login("h", 8812, {"PGPASSFILE": str(tmp_path / "absent")})


def test_the_environments_conf_sends_to_its_server_never_to_the_sink(monkeypatch):
    from harness.run.bench_options import BenchOptions

    monkeypatch.setenv("QDB_CLIENT_CONF", "http::addr=db:9000;username=u;password=p;")
    assert BenchOptions(send=True).sender_settings().address == "db:9000"
    assert BenchOptions(send=True, target="sink", ilp_port=9010).sender_settings().address == "localhost:9010"
    assert BenchOptions(send=True, conf="tcp::addr=other:9009;").sender_settings().address == "other:9009"


def test_secrets_lists_every_source():
    environ = {"QDB_CLIENT_CONF": "http::addr=h:9000;username=u;password=p1;", "PGPASSWORD": "p2"}
    assert secrets(None, environ) == ["p1", "p2"]


# --- a QuestDB that asks for logins ------------------------------------------------------------------


@pytest.fixture
def secured(questdb_factory, tmp_path):
    """A QuestDB of the test's own with HTTP basic authentication (/exec, /exp, ILP/HTTP, /metrics), a PGWire
    login of its own and a read-only PGWire user, and ILP/TCP authentication (one user's public key)."""
    keys = tmp_path / "ilp-keys.txt"
    keys.write_text(f"{ILP_USER} ec-p-256-sha256 {ILP_KEY[1]} {ILP_KEY[2]}\n")
    return questdb_factory(extra_env={
        "QDB_HTTP_USER": HTTP_USER, "QDB_HTTP_PASSWORD": HTTP_PASSWORD, "QDB_PG_USER": PG_USER,
        "QDB_PG_PASSWORD": PG_PASSWORD, "QDB_PG_READONLY_USER_ENABLED": "true", "QDB_PG_READONLY_USER": READER,
        "QDB_PG_READONLY_PASSWORD": READER_PASSWORD, "QDB_LINE_TCP_AUTH_DB_PATH": f"../{keys.name}"})  # relative to the server root


def tcp_conf(server, key: tuple[str, str, str] = ILP_KEY) -> str:
    """ILP over TCP as the server's ILP user signs in."""
    return (f"tcp::addr={server.host}:{server.ilp_port};username={ILP_USER};token={key[0]};token_x={key[1]};"
            f"token_y={key[2]};")


def environment(server, http_password: str = HTTP_PASSWORD, pg_password: str | None = PG_PASSWORD, **more) -> dict:
    env = {key: value for key, value in os.environ.items()
           if key not in ("QDB_CLIENT_CONF", "PGUSER", "PGPASSWORD", "PGPASSFILE")}
    env["QDB_CLIENT_CONF"] = (f"http::addr={server.host}:{server.http_port};username={HTTP_USER};"
                              f"password={http_password};")
    env["PGUSER"] = PG_USER
    if pg_password is not None:
        env["PGPASSWORD"] = pg_password
    env.update(more)
    return env


def server_args(server) -> list[str]:
    return ["--host", server.host, "--http-port", str(server.http_port), "--ilp-port", str(server.ilp_port)]


# Two hours of 10 hosts (7,200 rows): the range TSBS's queries are generated over and checked against.
DATA_SET = ("--seed", "3", "--scale", "10", "--timestamp-end", "2016-01-01T02:00:00Z")
SECRETS = (HTTP_PASSWORD, PG_PASSWORD, READER_PASSWORD, ILP_KEY[0])


def assert_no_secret(tmp_path, *texts: str) -> None:
    stored = {path: path.read_text(errors="replace") for path in tmp_path.rglob("*")
              if path.suffix in (".json", ".html", ".log", ".txt") and path.name != "ilp-keys.txt"
              and "questdb-root" not in path.parts[-3:-1] and path.is_file()}
    for secret in SECRETS:
        for text in texts:
            assert secret not in text
        for path, text in stored.items():
            assert secret not in text, path


class Watch:
    """What anyone on this machine could see during the commands of a test: the process list (``ps``), and
    the run's own Prometheus endpoint at ``metrics_port`` while it serves."""

    def __init__(self, metrics_port: int):
        self.metrics_port = metrics_port
        self.seen: list[str] = []
        self.scrapes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            self.seen.append(subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=1) as answer:
                    self.seen.append(answer.read().decode())
                    self.scrapes += 1
            except OSError:
                pass


@pytest.mark.slow
def test_every_endpoint_logs_in_and_no_secret_is_ever_shown(secured, tmp_path):
    """Every command against a server that asks for logins everywhere, each credential source planted with a
    secret: the runs succeed, and no secret shows in their output, records, reports, the run's own metrics or
    the process list sampled throughout."""
    from helpers import free_port

    env = environment(secured)
    metrics_port = free_port()
    outputs = []

    def cli(*args: str, env: dict = env) -> None:
        result = run_cli(*args, env=env)
        outputs.append(result.stdout + result.stderr)
        assert result.returncode == 0, (args, result.stderr)

    with Watch(metrics_port) as watch:
        cli("bench", "--send", *DATA_SET, *server_args(secured),
            "--server-metrics-port", str(secured.server.min_port), "--report", "--metrics-port", str(metrics_port),
            "--metrics-linger", "1",
            "--results", str(tmp_path / "http.json"))
        assert "7200 rows visible" in outputs[-1]
        # ILP over TCP signed with the ILP user's key (QDB_CLIENT_CONF), while /exec logs in with HARNESS_HTTP_CONF.
        tcp_env = environment(secured, QDB_CLIENT_CONF=tcp_conf(secured), HARNESS_HTTP_CONF=(
            f"http::addr={secured.host}:{secured.http_port};username={HTTP_USER};password={HTTP_PASSWORD};"))
        cli("bench", "--send", *DATA_SET, *server_args(secured),
            "--keep-table", "--results", str(tmp_path / "tcp.json"), env=tcp_env)
        assert "14400 rows visible" in outputs[-1]
        cli("bench", "--send", *DATA_SET, "--exactly-once", "--verbose",
            *server_args(secured), "--results", str(tmp_path / "once.json"))
        assert "Running with params:" in outputs[-1]
        reader = environment(secured, PGUSER=READER, pg_password=READER_PASSWORD)
        for protocol in ("asyncpg", "http-csv"):
            # Reading needs no right to write: PGWire as QuestDB's read-only user.
            cli("read", "--protocol", protocol, "--check", *DATA_SET,
                "--host", secured.host, "--http-port", str(secured.http_port), "--pg-port",
                str(secured.server.pg_port), "--results", str(tmp_path / f"read-{protocol}.json"), env=reader)
        for protocol in ("pgwire", "http"):
            cli("queries", "run", "--generate", "--query-types", "single-groupby-1-1-1", "--queries", "5",
                *DATA_SET, "--protocol", protocol, "--check", "--host", secured.host,
                "--http-port", str(secured.http_port), "--pg-port", str(secured.server.pg_port), "--report",
                "--results", str(tmp_path / f"queries-{protocol}.json"), env=reader)
    assert watch.scrapes, "the run's metrics were never scraped"
    assert any("-m harness bench" in seen for seen in watch.seen), "the process list was never seen mid-run"
    assert list(tmp_path.glob("*.html")), "no report written"
    # The server's /metrics asks for the login too, and the run sampled it with the login of QDB_CLIENT_CONF.
    import json

    series = json.loads((tmp_path / "http.json").read_text())["timeseries"]
    assert series["server_error"] is None and any(sample["server"] for sample in series["samples"]), series
    assert_no_secret(tmp_path, *outputs, *watch.seen)


@pytest.mark.slow
def test_a_password_file_logs_in_over_pgwire(secured, tmp_path):
    password_file = tmp_path / "pgpass"
    password_file.write_text(f"*:{secured.server.pg_port}:qdb:{PG_USER}:{PG_PASSWORD}\n")
    password_file.chmod(0o600)
    env = environment(secured, pg_password=None, PGPASSFILE=str(password_file))
    load = run_cli("bench", "--send", "--row-count", "500", "--scale", "10", "--seed", "4", *server_args(secured),
                   "--results", str(tmp_path / "load.json"), env=env)
    assert load.returncode == 0, load.stderr
    read = run_cli("read", "--protocol", "psycopg", "--check", "--seed", "4", "--scale", "10", "--row-count", "500",
                   "--host", secured.host, "--http-port", str(secured.http_port), "--pg-port",
                   str(secured.server.pg_port), "--results", str(tmp_path / "read.json"), env=env)
    assert read.returncode == 0, read.stderr
    password_file.chmod(0o644)
    refused = run_cli("read", "--protocol", "psycopg", "--host", secured.host, "--http-port", str(secured.http_port),
                      "--pg-port", str(secured.server.pg_port), "--results", str(tmp_path / "r2.json"), env=env)
    assert_one_line_error(refused, 2, "may be read by others", "chmod 600")


@pytest.mark.slow
def test_a_wrong_password_is_named_by_its_endpoint(secured, tmp_path):
    wrong_http = run_cli("bench", "--send", "--row-count", "100", "--scale", "10", *server_args(secured),
                         "--results", str(tmp_path / "a.json"), env=environment(secured, http_password="nope-1"))
    assert_one_line_error(wrong_http, 1, "QuestDB HTTP", "refused the login (HTTP 401)",
                          f"user '{HTTP_USER}' from QDB_CLIENT_CONF")
    assert "nope-1" not in wrong_http.stderr + wrong_http.stdout
    queries = run_cli("queries", "run", "--generate", "--query-types", "single-groupby-1-1-1", "--queries", "1",
                      "--seed", "3", "--scale", "10", "--protocol", "pgwire", "--host", secured.host,
                      "--http-port", str(secured.http_port), "--pg-port", str(secured.server.pg_port),
                      "--results", str(tmp_path / "q.json"), env=environment(secured, pg_password="nope-2"))
    assert_one_line_error(queries, 1, "PGWire", f"refused user '{PG_USER}' (from PGPASSWORD)")
    assert "nope-2" not in queries.stderr + queries.stdout
    from harness.questdb.http import QuestDBSql

    QuestDBSql(secured.host, secured.http_port, login=HttpLogin(HTTP_USER, HTTP_PASSWORD)).exec(
        "create table t as (select x, timestamp_sequence(0, 1000000) ts from long_sequence(10)) timestamp(ts)")
    for protocol in ("asyncpg", "psycopg", "connectorx"):
        read = run_cli("read", "--protocol", protocol, "--host", secured.host, "--http-port", str(secured.http_port),
                       "--pg-port", str(secured.server.pg_port), "--table", "t",
                       "--results", str(tmp_path / f"r-{protocol}.json"),
                       env=environment(secured, pg_password="nope-3"))
        assert_one_line_error(read, 1, "PGWire", f"refused user '{PG_USER}' (from PGPASSWORD)")
        assert "nope-3" not in read.stderr + read.stdout, protocol
    right_http = f"http::addr={secured.host}:{secured.http_port};username={HTTP_USER};password={HTTP_PASSWORD};"
    wrong_ilp_http = run_cli("bench", "--send", "--row-count", "100", "--scale", "10", *server_args(secured),
                             "--results", str(tmp_path / "c.json"),
                             env=environment(secured, http_password="nope-4", HARNESS_HTTP_CONF=right_http))
    assert_one_line_error(wrong_ilp_http, 1, f"sending to {secured.host}:{secured.http_port} failed",
                          f"QuestDB refused the ILP/HTTP login of user '{HTTP_USER}'")
    # ILP over TCP: a key the server does not know, and none at all; QuestDB closes the connection unexplained.
    for conf, why in ((tcp_conf(secured, ilp_key()), f"check the key (token, token_x, token_y) of user '{ILP_USER}'"),
                      (f"tcp::addr={secured.host}:{secured.ilp_port};", "asks for ILP authentication")):
        refused_tcp = run_cli("bench", "--send", "--row-count", "20000", "--scale", "10", *server_args(secured),
                              "--results", str(tmp_path / "d.json"),
                              env=environment(secured, QDB_CLIENT_CONF=conf, HARNESS_HTTP_CONF=right_http))
        assert_one_line_error(refused_tcp, 1, f"sending to {secured.host}:{secured.ilp_port} failed", why)
        assert ILP_KEY[0] not in refused_tcp.stderr + refused_tcp.stdout
    # Few rows fit the socket's buffer before the server closes it: every flush succeeds, the rows are lost.
    unseen = run_cli("bench", "--send", "--row-count", "100", "--scale", "10", *server_args(secured),
                     "--validation-query-timeout", "2", "--results", str(tmp_path / "e.json"),
                     env=environment(secured, QDB_CLIENT_CONF=tcp_conf(secured, ilp_key()), HARNESS_HTTP_CONF=right_http))
    assert_one_line_error(unseen, 1, "validation timed out", "0 visible",
                          f"when it refused the ILP login of user '{ILP_USER}'")
    nothing = run_cli("bench", "--send", "--row-count", "100", "--scale", "10", *server_args(secured),
                      "--results", str(tmp_path / "b.json"),
                      env={key: value for key, value in os.environ.items() if key != "QDB_CLIENT_CONF"})
    assert_one_line_error(nothing, 1, "refused the login (HTTP 401)", "no credentials were given")


@pytest.mark.slow
def test_a_read_only_server_refuses_the_first_write_before_anything_is_sent(questdb_factory, tmp_path):
    server = questdb_factory(extra_env={"QDB_HTTP_SECURITY_READONLY": "true"})
    refused = run_cli("bench", "--send", "--row-count", "100", "--scale", "10", *server_args(server),
                      "--results", str(tmp_path / "a.json"))
    assert_one_line_error(refused, 2, f"QuestDB HTTP at {server.host}:{server.http_port} refused to write",
                          "Write permission denied", "needs a login that may write")
    assert server.client.table_columns("cpu") is None
    # Reading needs no write: a table made over PGWire (whose login may write) is read back over /exp.
    import asyncio

    import asyncpg

    async def make_table() -> None:
        connection = await asyncpg.connect(host=server.host, port=server.server.pg_port, user="admin",
                                           password="quest", database="qdb", ssl=False)
        await connection.execute("create table t as (select x, timestamp_sequence(0, 1000000) ts "
                                 "from long_sequence(10)) timestamp(ts)")
        await connection.close()

    asyncio.run(make_table())
    read = run_cli("read", "--protocol", "http-csv", "--table", "t", "--host", server.host, "--http-port",
                   str(server.http_port), "--pg-port", str(server.server.pg_port),
                   "--results", str(tmp_path / "read.json"))
    assert read.returncode == 0, read.stderr
    assert "10 rows" in read.stdout, read.stdout


@pytest.fixture
def secured_qwp(questdb_factory):
    """A QWP server of the test's own asking for the HTTP login (its /exec, /exp and QWP's WebSocket alike)."""
    return questdb_factory(QWP_KILLABLE_PORTS, jar=qwp_jar(), extra_env={
        "QDB_HTTP_USER": HTTP_USER, "QDB_HTTP_PASSWORD": HTTP_PASSWORD})


@pytest.mark.slow
def test_qwp_reads_and_queries_log_in_and_a_wrong_password_is_one_line(secured_qwp, tmp_path):
    """Sent, read and queried over QWP with the ws:: string's login: every run succeeds and shows no secret; a
    wrong password ends the read in one line naming the user, and so does QWP's own refusal of it."""
    conf = f"ws::addr={secured_qwp.host}:{secured_qwp.http_port};username={HTTP_USER};password={HTTP_PASSWORD};"
    env = {**environment(secured_qwp), "QDB_CLIENT_CONF": conf}
    where = ["--host", secured_qwp.host, "--http-port", str(secured_qwp.http_port)]
    outputs = []
    for args in (["bench", "--send", "--transport", "qwp", *DATA_SET, *where, "--ilp-port", str(secured_qwp.ilp_port)],
                 ["read", "--protocol", "qwp", "--frame", "polars", "--check", *DATA_SET, *where],
                 ["queries", "run", "--generate", "--query-types", "single-groupby-1-1-1", "--queries", "5",
                  *DATA_SET, "--protocol", "qwp", "--check", *where]):
        result = run_cli(*args, "--results", str(tmp_path / f"{args[0]}.json"), env=env)
        outputs.append(result.stdout + result.stderr)
        assert result.returncode == 0, (args, result.stderr)
    assert "Checked: all 7200 rows equal the data set." in outputs[1]
    assert "Checked: all 5 answers equal the reference." in outputs[2]
    wrong = run_cli("read", "--protocol", "qwp", "--table", "cpu", *where, "--results", str(tmp_path / "wrong.json"),
                    env={**env, "QDB_CLIENT_CONF": conf.replace(HTTP_PASSWORD, "nope-5")})
    assert_one_line_error(wrong, 1, "refused the login (HTTP 401)", f"user '{HTTP_USER}' from QDB_CLIENT_CONF")
    assert "nope-5" not in wrong.stdout + wrong.stderr
    # QWP's WebSocket refuses it in the same words (``read`` asks /exec first: the reader is asked on its own).
    from harness.read.connection import Endpoint
    from harness.read.qwp import QwpReader

    with pytest.raises(RunError) as refused:
        QwpReader(Endpoint(secured_qwp.host, secured_qwp.http_port, 1,
                           http=HttpLogin(HTTP_USER, "nope-6", source="QDB_CLIENT_CONF")))
    assert str(refused.value) == (f"QuestDB HTTP at {secured_qwp.host}:{secured_qwp.http_port} refused the login "
                                  f"(HTTP 401): it refused user '{HTTP_USER}' from QDB_CLIENT_CONF (QWP's WebSocket "
                                  f"upgrade)")
    assert_no_secret(tmp_path, *outputs)
