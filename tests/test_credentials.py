"""Credentials from the one place every client of ours takes them (``harness.questdb.credentials``): the client
configuration string (``--conf``, ``QDB_CLIENT_CONF``) for HTTP and ILP, libpq's ``PGUSER``/``PGPASSWORD``/
``PGPASSFILE`` for PGWire; against a real QuestDB with HTTP and PGWire authentication on, each endpoint logs in,
a wrong password is named by its endpoint in one line, and no secret reaches a record or the output."""

from __future__ import annotations

import os

import pytest

from harness.errors import UsageError
from harness.questdb.credentials import HttpLogin, PgLogin, http_login, pg_login, secrets
from helpers import assert_one_line_error, run_cli

HTTP_USER, HTTP_PASSWORD = "bencher", "h77p-Secret-0451"
PG_USER, PG_PASSWORD = "pgbencher", "pg-Secret-9931"


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
def secured(questdb_factory):
    """A QuestDB of the test's own with HTTP basic authentication and a PGWire login of its own."""
    return questdb_factory(extra_env={"QDB_HTTP_USER": HTTP_USER, "QDB_HTTP_PASSWORD": HTTP_PASSWORD,
                                      "QDB_PG_USER": PG_USER, "QDB_PG_PASSWORD": PG_PASSWORD})


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


def assert_no_secret(tmp_path, *texts: str) -> None:
    stored = "".join(path.read_text(errors="replace") for path in tmp_path.rglob("*.json"))
    for secret in (HTTP_PASSWORD, PG_PASSWORD):
        for text in (*texts, stored):
            assert secret not in text


@pytest.mark.slow
def test_every_endpoint_logs_in_with_the_users_credentials(secured, tmp_path):
    env = environment(secured)
    http = run_cli("bench", "--send", "--row-count", "2000", "--scale", "10", "--seed", "3", *server_args(secured),
                   "--results", str(tmp_path / "http.json"), env=env)
    assert http.returncode == 0, http.stderr
    assert "2000 rows visible" in http.stdout
    # ILP over TCP (no ILP authentication configured) while /exec logs in with QDB_CLIENT_CONF's credentials.
    tcp = run_cli("bench", "--send", "--row-count", "2000", "--scale", "10", "--seed", "3", *server_args(secured),
                  "--conf", f"tcp::addr={secured.host}:{secured.ilp_port};", "--keep-table",
                  "--results", str(tmp_path / "tcp.json"), env=env)
    assert tcp.returncode == 0, tcp.stderr
    exactly = run_cli("bench", "--send", "--row-count", "2000", "--scale", "10", "--seed", "3", "--exactly-once",
                      *server_args(secured), "--results", str(tmp_path / "once.json"), env=env)
    assert exactly.returncode == 0, exactly.stderr
    for protocol in ("asyncpg", "http-csv"):
        read = run_cli("read", "--protocol", protocol, "--check", "--seed", "3", "--scale", "10", "--row-count", "2000",
                       "--host", secured.host, "--http-port", str(secured.http_port), "--pg-port",
                       str(secured.server.pg_port), "--results", str(tmp_path / f"read-{protocol}.json"), env=env)
        assert read.returncode == 0, read.stderr
    for protocol in ("pgwire", "http"):
        queries = run_cli("queries", "run", "--generate", "--query-types", "single-groupby-1-1-1", "--queries", "5",
                          "--seed", "3", "--scale", "10", "--protocol", protocol, "--host", secured.host,
                          "--http-port", str(secured.http_port), "--pg-port", str(secured.server.pg_port),
                          "--results", str(tmp_path / f"queries-{protocol}.json"), env=env)
        assert queries.returncode == 0, (protocol, queries.stderr)
    assert_no_secret(tmp_path, http.stdout + http.stderr, tcp.stdout, exactly.stdout)


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
    # connectorx names it alike, after its pool's own retries (about 25 s): left out here for the suite's time.
    for protocol in ("asyncpg", "psycopg"):
        read = run_cli("read", "--protocol", protocol, "--host", secured.host, "--http-port", str(secured.http_port),
                       "--pg-port", str(secured.server.pg_port), "--table", "t",
                       "--results", str(tmp_path / f"r-{protocol}.json"),
                       env=environment(secured, pg_password="nope-3"))
        assert_one_line_error(read, 1, "PGWire", f"refused user '{PG_USER}' (from PGPASSWORD)")
        assert "nope-3" not in read.stderr + read.stdout, protocol
    nothing = run_cli("bench", "--send", "--row-count", "100", "--scale", "10", *server_args(secured),
                      "--results", str(tmp_path / "b.json"),
                      env={key: value for key, value in os.environ.items() if key != "QDB_CLIENT_CONF"})
    assert_one_line_error(nothing, 1, "refused the login (HTTP 401)", "no credentials were given")

