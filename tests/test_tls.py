"""TLS through real TLS-terminating proxies in front of a real QuestDB (``harness.questdb.tls``): a CA and a
server certificate for 127.0.0.1/localhost made here with the openssl CLI; socat in front of HTTP, /metrics,
ILP/TCP and PGWire (no ALPN), HAProxy in front of PGWire with ALPN ``postgresql`` (what libpq's direct TLS
requires). The server asks for logins too, as a secured one does.

Through the proxies with the test's CA: ``bench --send`` over ``https::`` (its /metrics sampled over TLS) and
``tcps::``, ``queries run`` over HTTP and PGWire, ``read --check`` over every protocol that can; without the CA,
or TLS and plain crossed, each ends in one line. One QuestDB and one set of proxies serve the whole module; a QWP
server of its own with a proxy in front of its HTTP port serves QWP's reads and queries (``wss::``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from harness.errors import RunError, UsageError
from harness.questdb.credentials import HttpConf, HttpLogin, PgLogin
from harness.questdb.pgwire import asyncpg_tls, connect_failure, libpq_tls, pg_url
from harness.questdb.qwp_client import qwp_conf
from harness.questdb.tls import PgTls, pg_tls, tls_of
from harness.servers.jar import qwp_jar
from harness.servers.questdb import NativeQuestDB
from helpers import (TLS_PROXY_PORTS, TLS_QUESTDB_PORTS, TLS_QWP_PORTS, TLS_QWP_PROXY_PORT, assert_one_line_error,
                     run_cli)

HOST = "127.0.0.1"
HTTP_USER, HTTP_PASSWORD = "tlsbencher", "tls-h-Secret-31"
PG_USER, PG_PASSWORD = "tlspg", "tls-p-Secret-77"
# 4 hosts over 3 hours: 4320 rows, every queried window inside.
DATA_SET = ["--seed", "5", "--scale", "4", "--timestamp-start", "2016-01-01T00:00:00Z",
            "--timestamp-end", "2016-01-01T03:00:00Z"]
ROWS = 4320
UNTRUSTED = "certificate verify failed: unable to get local issuer certificate"


# --- certificates ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the test's CA, PEM
    other_ca: Path  # a CA that signed nothing here
    server: Path  # the proxies' certificate (127.0.0.1, localhost), signed by ``ca``
    key: Path
    bundle: Path  # certificate and key in one file (HAProxy's crt)
    not_pem: Path


# P-256 keys: made in milliseconds (RSA's take a second or so).
EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def _make_ca(folder: Path, name: str) -> tuple[Path, Path]:
    certificate, key = folder / f"{name}.pem", folder / f"{name}.key"
    _openssl("req", "-x509", *EC_KEY, "-nodes", "-keyout", str(key), "-out", str(certificate), "-days", "2",
             "-subj", f"/CN=harness test {name}", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return certificate, key


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Certificates:
    folder = tmp_path_factory.mktemp("tls")
    ca, ca_key = _make_ca(folder, "ca")
    other_ca, _ = _make_ca(folder, "other-ca")
    key, request, server = folder / "server.key", folder / "server.csr", folder / "server.pem"
    _openssl("req", *EC_KEY, "-nodes", "-keyout", str(key), "-out", str(request), "-subj", "/CN=localhost")
    extensions = folder / "server.ext"
    extensions.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                          "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
             "-out", str(server), "-days", "2", "-extfile", str(extensions))
    bundle = folder / "server-bundle.pem"
    bundle.write_text(server.read_text() + key.read_text())
    not_pem = folder / "not-a-certificate.pem"
    not_pem.write_text("just text\n")
    return Certificates(ca, other_ca, server, key, bundle, not_pem)


# --- what needs no server ----------------------------------------------------------------------------------


def test_https_trust_follows_the_questdb_clients_keys(certificates):
    def tls(conf: str):
        scheme, _, rest = conf.partition("::")
        values = dict(item.split("=", 1) for item in rest.split(";") if item)
        return tls_of(HttpConf(scheme, values, "--conf"))

    assert tls_of(None).context is None and tls_of(None).scheme == "http"
    assert tls("http::addr=h:9000;").context is None
    roots = tls(f"https::addr=h:9000;tls_roots={certificates.ca};")
    assert roots.scheme == "https" and roots.context.check_hostname and str(certificates.ca) in roots.trust
    assert tls(f"https::addr=h:9000;tls_ca=pem_file;tls_roots={certificates.ca};").context is roots.context
    assert "system's root certificates" in tls("https::addr=h:9000;tls_ca=os_roots;").trust
    assert not tls("https::addr=h:9000;tls_verify=unsafe_off;").context.check_hostname
    refused = {
        "https::addr=h:9000;tls_ca=pem_file;": "tls_ca=pem_file needs tls_roots",
        f"https::addr=h:9000;tls_ca=webpki_roots;tls_roots={certificates.ca};": "goes with tls_ca=pem_file",
        "https::addr=h:9000;tls_verify=off;": "tls_verify must be on or unsafe_off",
        "https::addr=h:9000;tls_ca=mozilla;": "tls_ca must be one of",
        f"https::addr=h:9000;tls_roots={certificates.ca.parent / 'absent.pem'};": "absent.pem: no such file",
        f"https::addr=h:9000;tls_roots={certificates.not_pem};": "holds no PEM certificate",
        f"http::addr=h:9000;tls_roots={certificates.ca};": "tls_roots is for https::",
        f"https::addr=h:9000;tls_roots={certificates.ca};tls_roots_password=x;": "tls_roots_password",
    }
    for conf, words in refused.items():
        with pytest.raises(UsageError, match=words):
            tls(conf)


def test_qwp_connections_take_the_https_strings_trust(certificates):
    """A QWP read's ws::/wss:: string: TLS where the harness's own requests have it, their TLS keys as given (but
    tls_ca=pem_file, which the QWP client refuses: tls_roots alone means that file only there), the login after."""
    login = HttpLogin("u", "p;w", source="QDB_CLIENT_CONF")
    roots = tls_of(HttpConf("https", {"tls_ca": "pem_file", "tls_roots": str(certificates.ca)}, "QDB_CLIENT_CONF"))
    assert qwp_conf(HOST, 1, login, roots) == (f"wss::addr={HOST}:1;sender_pool_min=0;query_pool_min=1;"
                                               f"tls_roots={certificates.ca};username=u;password=p;;w;")
    unsafe = tls_of(HttpConf("https", {"tls_verify": "unsafe_off"}, "--conf"))
    assert qwp_conf(HOST, 1, None, unsafe).endswith("query_pool_min=1;tls_verify=unsafe_off;")
    assert qwp_conf(HOST, 1, None, tls_of(None)) == f"ws::addr={HOST}:1;sender_pool_min=0;query_pool_min=1;"


def test_pgwire_tls_follows_libpq(certificates, tmp_path):
    home = {"HOME": str(tmp_path)}
    assert pg_tls(home) == PgTls() and not PgTls().enabled
    assert libpq_tls(PgTls()) == {"sslmode": "disable"} and asyncpg_tls(PgTls()) == {"ssl": "disable",
                                                                                       "direct_tls": False}
    full = pg_tls({**home, "PGSSLMODE": "verify-full", "PGSSLROOTCERT": str(certificates.ca),
                   "PGSSLNEGOTIATION": "direct"})
    assert full.verifies and full.direct and full.context().check_hostname
    assert libpq_tls(full) == {"sslmode": "verify-full", "sslrootcert": str(certificates.ca),
                               "sslnegotiation": "direct"}
    assert asyncpg_tls(full)["direct_tls"] is True
    # require with a root file checks the chain (libpq's rule), and connectorx says so with sslrootcert.
    require = pg_tls({**home, "PGSSLMODE": "require", "PGSSLROOTCERT": str(certificates.ca)})
    assert require.verifies and not require.context().check_hostname
    assert "sslmode=require&sslrootcert=" in pg_url(HOST, 1, PgLogin(), require)
    assert "sslmode=disable" in pg_url(HOST, 1, PgLogin(), PgTls())
    with pytest.raises(UsageError, match="connectorx cannot connect with PGSSLMODE=verify-full"):
        pg_url(HOST, 1, PgLogin(), full)
    refused = {
        (("PGSSLNEGOTIATION", "direct"),): "PGSSLNEGOTIATION=direct needs PGSSLMODE=require.*by default",
        (("PGSSLMODE", "verify-full"),): "PGSSLROOTCERT must name a PEM file",
        (("PGSSLMODE", "on"),): "PGSSLMODE must be one of",
        (("PGSSLMODE", "verify-ca"), ("PGSSLROOTCERT", str(tmp_path / "absent.pem"))): "no such file",
        (("PGSSLMODE", "verify-ca"), ("PGSSLROOTCERT", str(certificates.not_pem))): "holds no PEM certificate",
        (("PGSSLMODE", "verify-ca"), ("PGSSLROOTCERT", "system")): "goes with PGSSLMODE=verify-full",
    }
    for settings, words in refused.items():
        with pytest.raises(UsageError, match=words):
            pg_tls({**home, **dict(settings)})
    # libpq's default root file stands in for PGSSLROOTCERT.
    (tmp_path / ".postgresql").mkdir()
    shutil.copy(certificates.ca, tmp_path / ".postgresql" / "root.crt")
    assert pg_tls({**home, "PGSSLMODE": "verify-ca"}).rootcert == str(tmp_path / ".postgresql" / "root.crt")


# --- a QuestDB behind TLS-terminating proxies ----------------------------------------------------------------


class Proxy:
    """A proxy process of the test's own (socat, HAProxy), stopped with its forked children at the end."""

    def __init__(self, command: list[str], port: int, log: Path):
        self.port = port
        with open(log, "wb") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while True:
            assert self.process.poll() is None, log.read_text()
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                return
            except OSError:
                assert time.monotonic() < deadline, f"{command[0]} does not listen on {port}: {log.read_text()}"
                time.sleep(0.05)

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, 15)  # its own session: socat's forked children too
        except ProcessLookupError:
            pass
        self.process.wait(10)


def socat(certificates: Certificates, port: int, target: int, log: Path, *options: str) -> Proxy:
    listen = ",".join([f"OPENSSL-LISTEN:{port}", f"bind={HOST}", f"cert={certificates.server}",
                       f"key={certificates.key}", "verify=0", "fork", "reuseaddr", *options])
    return Proxy(["socat", listen, f"TCP:{HOST}:{target}"], port, log)


def haproxy(certificates: Certificates, port: int, target: int, folder: Path) -> Proxy:
    config = folder / "haproxy.cfg"
    config.write_text(f"global\n    maxconn 256\ndefaults\n    mode tcp\n    timeout connect 5s\n"
                      f"    timeout client 60s\n    timeout server 60s\n"
                      f"frontend pgwire\n    bind {HOST}:{port} ssl crt {certificates.bundle} alpn postgresql\n"
                      f"    default_backend questdb\nbackend questdb\n    server questdb {HOST}:{target}\n")
    return Proxy(["haproxy", "-db", "-f", str(config)], port, folder / "haproxy.log")


@dataclass
class Stack:
    server: NativeQuestDB
    certificates: Certificates

    @property
    def https(self) -> int:
        return TLS_PROXY_PORTS["http"]

    def https_conf(self, port: int | None = None, roots: Path | None = None, scheme: str = "https") -> str:
        trust = f"tls_roots={roots};" if roots is not None else ""
        return (f"{scheme}::addr={HOST}:{port or self.https};{trust}username={HTTP_USER};"
                f"password={HTTP_PASSWORD};")

    def env(self, http_conf: str | None = None, **more: str) -> dict:
        """The environment of a run: QDB_CLIENT_CONF over the HTTPS proxy trusting the test's CA (unless
        ``http_conf`` says otherwise), the PGWire login, and ``more`` (PGSSLMODE, ...)."""
        env = {key: value for key, value in os.environ.items()
               if key not in ("QDB_CLIENT_CONF", "HARNESS_HTTP_CONF") and not key.startswith("PG")}
        env.update({"QDB_CLIENT_CONF": http_conf or self.https_conf(roots=self.certificates.ca), "PGUSER": PG_USER,
                    "PGPASSWORD": PG_PASSWORD, "HOME": str(self.certificates.ca.parent), **more})
        return env

    def pg_direct(self, **more: str) -> dict:
        """``env`` with PGWire over direct TLS, verify-full against the test's CA; ``more`` overrides."""
        return self.env(**{"PGSSLMODE": "verify-full", "PGSSLROOTCERT": str(self.certificates.ca),
                           "PGSSLNEGOTIATION": "direct", **more})


@pytest.fixture(scope="module")
def stack(certificates, tmp_path_factory):
    """One QuestDB with HTTP and PGWire logins, and the proxies in front of it: socat for HTTP, /metrics,
    ILP/TCP (TLS 1.2 at most: docs/security.md says why) and PGWire, HAProxy for PGWire with ALPN."""
    root = tmp_path_factory.mktemp("tls-questdb")
    server = NativeQuestDB(root / "root", **TLS_QUESTDB_PORTS, extra_env={
        "QDB_HTTP_USER": HTTP_USER, "QDB_HTTP_PASSWORD": HTTP_PASSWORD, "QDB_PG_USER": PG_USER,
        "QDB_PG_PASSWORD": PG_PASSWORD})
    proxies = []
    try:
        server.start()
        proxies.append(socat(certificates, TLS_PROXY_PORTS["http"], server.http_port, root / "http.log"))
        proxies.append(socat(certificates, TLS_PROXY_PORTS["metrics"], server.min_port, root / "metrics.log"))
        proxies.append(socat(certificates, TLS_PROXY_PORTS["ilp"], server.ilp_port, root / "ilp.log",
                             "max-version=TLS1.2"))
        proxies.append(socat(certificates, TLS_PROXY_PORTS["pg"], server.pg_port, root / "pg.log"))
        proxies.append(haproxy(certificates, TLS_PROXY_PORTS["pg_alpn"], server.pg_port, root))
        yield Stack(server, certificates)
    finally:
        for proxy in proxies:
            proxy.stop()
        server.stop()


@pytest.fixture(scope="module")
def loaded(stack, tmp_path_factory):
    """The data set sent by ``bench --send`` over ILP/HTTP through the HTTPS proxy, its --conf trusting the
    test's CA, /metrics sampled through the proxy in front of it: (the run, its record)."""
    results = tmp_path_factory.mktemp("tls-bench") / "bench.json"
    run = run_cli("bench", "--send", "--transport", "http", *DATA_SET, "--host", HOST, "--http-port", str(stack.https),
                  "--server-metrics-port", str(TLS_PROXY_PORTS["metrics"]),
                  "--conf", stack.https_conf(roots=stack.certificates.ca), "--results", str(results),
                  env=stack.env(http_conf="http::addr=unused:1;"))  # --conf alone carries the TLS and the login
    return run, results


def read_args(stack: Stack, protocol: str, pg_port: int, results: Path, check: bool = False) -> list[str]:
    """``read`` of the loaded table (every value compared with the data set with ``check``; without, the rows
    counted against the server's count), no time series: the runs below test connections, not figures."""
    return ["read", "--protocol", protocol, *(["--check"] if check else []), *DATA_SET, "--host", HOST,
            "--http-port", str(stack.https), "--pg-port", str(pg_port), "--sample-interval", "0",
            "--results", str(results)]


def query_args(stack: Stack, protocol: str, results: Path, http_port: int | None = None, check: bool = False
               ) -> list[str]:
    """``queries run`` of two query types on the loaded table (every answer checked with ``check``)."""
    return ["queries", "run", "--generate", "--query-types", "single-groupby-1-1-1,lastpoint", "--queries", "4",
            *DATA_SET, "--protocol", protocol, *(["--check"] if check else []), "--host", HOST,
            "--http-port", str(http_port or stack.https), "--pg-port", str(TLS_PROXY_PORTS["pg"]),
            "--results", str(results)]


@pytest.mark.slow
@pytest.mark.server
def test_bench_over_https_through_the_proxy_with_the_tests_ca(loaded):
    run, results = loaded
    assert run.returncode == 0, run.stderr
    assert f"{ROWS} rows visible" in run.stdout
    series = json.loads(results.read_text())["timeseries"]
    # /metrics sits behind its own TLS proxy: sampled over TLS with the same trust and login.
    assert series["server_metrics_url"].startswith("https://") and series["server_error"] is None, series
    assert any(sample["server"] for sample in series["samples"])
    assert HTTP_PASSWORD not in run.stdout + run.stderr + results.read_text()


def together(**runs: tuple[list[str], dict]) -> dict[str, subprocess.CompletedProcess]:
    """Each ``name=(args, env)`` run by ``run_cli`` at the same time (they share only the server and its loaded
    table, which none of them changes): the results by name."""
    with ThreadPoolExecutor(4) as pool:
        futures = {name: pool.submit(run_cli, *args, env=env) for name, (args, env) in runs.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.slow
@pytest.mark.server
def test_queries_over_https_and_an_untrusted_certificate(stack, loaded, tmp_path):
    untrusted = stack.env(http_conf=stack.https_conf())  # https:: without tls_roots: the system's roots
    runs = together(
        ok=(query_args(stack, "http", tmp_path / "q.json", check=True), stack.env()),
        queries=(query_args(stack, "http", tmp_path / "q2.json"), untrusted),
        bench=(["bench", "--send", "--transport", "http", *DATA_SET, "--host", HOST, "--http-port", str(stack.https),
                "--conf", stack.https_conf(), "--table", "cpu_untrusted", "--sample-interval", "0",
                "--results", str(tmp_path / "b.json")], untrusted),
        missing=(query_args(stack, "http", tmp_path / "q3.json"),
                 stack.env(http_conf=stack.https_conf(roots=tmp_path / "absent.pem"))))
    assert runs["ok"].returncode == 0, runs["ok"].stderr
    assert_one_line_error(runs["queries"], 1, f"QuestDB HTTP at {HOST}:{stack.https}: {UNTRUSTED}",
                          "QDB_CLIENT_CONF")
    assert_one_line_error(runs["bench"], 1, f"QuestDB HTTP at {HOST}:{stack.https}: {UNTRUSTED}", "--conf")
    assert_one_line_error(runs["missing"], 2, "QDB_CLIENT_CONF: tls_roots=", "absent.pem: no such file")


@pytest.mark.slow
@pytest.mark.server
def test_ilp_over_tcps_through_the_proxy(stack, tmp_path):
    ilp = TLS_PROXY_PORTS["ilp"]
    # A tcps:: string says nothing of HTTP: the harness's own requests follow HARNESS_HTTP_CONF (QDB_CLIENT_CONF,
    # trusting no CA of the test's here, would fail them).
    env = stack.env(http_conf=stack.https_conf(), HARNESS_HTTP_CONF=stack.https_conf(roots=stack.certificates.ca))
    bench = ["bench", "--send", *DATA_SET, "--host", HOST, "--http-port", str(stack.https), "--sample-interval", "0"]
    runs = together(
        tcps=([*bench, "--table", "cpu_tcps", "--conf", f"tcps::addr={HOST}:{ilp};tls_roots={stack.certificates.ca};",
               "--results", str(tmp_path / "tcps.json")], env),
        untrusted=([*bench, "--table", "cpu_tcps_untrusted", "--conf", f"tcps::addr={HOST}:{ilp};",
                    "--results", str(tmp_path / "untrusted.json")], env))
    assert runs["tcps"].returncode == 0, runs["tcps"].stderr
    assert f"{ROWS} rows visible" in runs["tcps"].stdout
    assert_one_line_error(runs["untrusted"], 1, f"{HOST}:{ilp}", "invalid peer certificate: UnknownIssuer")


@pytest.mark.slow
@pytest.mark.server
def test_pgwire_through_the_proxy_driver_by_driver(stack, loaded, tmp_path):
    socat_pg, alpn_pg = TLS_PROXY_PORTS["pg"], TLS_PROXY_PORTS["pg_alpn"]
    direct, verify_ca = stack.pg_direct(), stack.pg_direct(PGSSLMODE="verify-ca")
    runs = together(
        queries=(query_args(stack, "pgwire", tmp_path / "q.json", check=True), direct),
        asyncpg=(read_args(stack, "asyncpg", socat_pg, tmp_path / "asyncpg.json", check=True), direct),
        # libpq's direct TLS requires the proxy to negotiate ALPN postgresql: socat does not, HAProxy does.
        psycopg_no_alpn=(read_args(stack, "psycopg", socat_pg, tmp_path / "p1.json"), direct),
        psycopg=(read_args(stack, "psycopg", alpn_pg, tmp_path / "psycopg.json"), direct),
        # connectorx checks the chain, never the host name: verify-full is refused, verify-ca reads.
        connectorx_full=(read_args(stack, "connectorx", socat_pg, tmp_path / "c1.json"), direct),
        connectorx=(read_args(stack, "connectorx", socat_pg, tmp_path / "connectorx.json"), verify_ca),
        # An untrusted certificate, at once: connectorx's pool would retry for ~30 s (its login is checked first).
        connectorx_untrusted=(read_args(stack, "connectorx", socat_pg, tmp_path / "c2.json"),
                              {**verify_ca, "PGSSLROOTCERT": str(stack.certificates.other_ca)}))
    assert runs["queries"].returncode == 0, runs["queries"].stderr
    assert runs["asyncpg"].returncode == 0, runs["asyncpg"].stderr
    assert f"Checked: all {ROWS} rows equal" in runs["asyncpg"].stdout
    assert_one_line_error(runs["psycopg_no_alpn"], 1, f"QuestDB PGWire at {HOST}:{socat_pg}", "ALPN 'postgresql'")
    for name in ("psycopg", "connectorx"):
        assert runs[name].returncode == 0, runs[name].stderr
        assert f"{ROWS} rows in" in runs[name].stdout
    assert_one_line_error(runs["connectorx_full"], 2, "connectorx cannot connect with PGSSLMODE=verify-full",
                          "verify-ca")
    assert_one_line_error(runs["connectorx_untrusted"], 1, f"QuestDB PGWire at {HOST}:{socat_pg}: {UNTRUSTED}",
                          "PGSSLROOTCERT=")


@pytest.mark.slow
@pytest.mark.server
def test_tls_and_plain_crossed_end_in_one_line(stack, loaded, tmp_path):
    plain_http, plain_pg, tls_pg = stack.server.http_port, stack.server.pg_port, TLS_PROXY_PORTS["pg"]
    runs = together(
        https_to_plain=(query_args(stack, "http", tmp_path / "a.json", http_port=plain_http),
                        stack.env(http_conf=stack.https_conf(plain_http, stack.certificates.ca))),
        http_to_tls=(query_args(stack, "http", tmp_path / "b.json"),
                     stack.env(http_conf=stack.https_conf(scheme="http"))),
        pg_to_tls=(read_args(stack, "psycopg", tls_pg, tmp_path / "c.json"), stack.env()),
        not_direct=(query_args(stack, "pgwire", tmp_path / "d.json"), stack.pg_direct(PGSSLNEGOTIATION="")))
    assert_one_line_error(runs["https_to_plain"], 1, f"QuestDB HTTP at {HOST}:{plain_http} does not speak TLS",
                          "https::")
    assert_one_line_error(runs["http_to_tls"], 1, f"QuestDB HTTP at {HOST}:{stack.https} speaks TLS", "https::")
    assert_one_line_error(runs["pg_to_tls"], 1, f"QuestDB PGWire at {HOST}:{tls_pg} speaks TLS", "PGSSLMODE=disable",
                          "PGSSLNEGOTIATION=direct")
    assert_one_line_error(runs["not_direct"], 1, f"QuestDB PGWire at {HOST}:{tls_pg} speaks TLS from the first byte",
                          "set PGSSLNEGOTIATION=direct")

    # TLS to QuestDB's own PGWire port: refused at once when negotiated; direct, the server waits for the rest
    # of what it takes for a message, so the driver's connect timeout ends it (here 1 s; the harness's: 10 s).
    async def attempt(tls: PgTls) -> str:
        try:
            await asyncpg_connect(plain_pg, tls)
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:  # as the clients get it
            return connect_failure(HOST, plain_pg, PgLogin(PG_USER, PG_PASSWORD), tls, exc)
        raise AssertionError("connected")

    negotiated = PgTls("verify-full", str(stack.certificates.ca))
    assert "speaks no TLS (it refused the SSLRequest)" in asyncio.run(attempt(negotiated))
    direct = PgTls("verify-full", str(stack.certificates.ca), "direct")
    assert "does not speak TLS (it answers PGWire in plain)" in asyncio.run(attempt(direct))


async def asyncpg_connect(port: int, tls: PgTls):
    connection = await asyncpg.connect(host=HOST, port=port, user=PG_USER, password=PG_PASSWORD, database="qdb",
                                       timeout=1, **asyncpg_tls(tls))
    await connection.close()


@pytest.mark.slow
@pytest.mark.server
def test_refused_logins_end_at_once_in_the_endpoints_words(stack, loaded, tmp_path):
    from harness.read.connection import Endpoint
    from harness.read.http_export import CsvReader

    # /exp refusing the login is worded as /exec's refusal (`read` asks /exec first, with the same login, so
    # the reader is asked here on its own).
    wrong = HttpLogin(HTTP_USER, "wrong-1", source="QDB_CLIENT_CONF")
    endpoint = Endpoint(HOST, stack.https, TLS_PROXY_PORTS["pg"], http=wrong, http_tls=tls_of(
        HttpConf("https", {"tls_roots": str(stack.certificates.ca)}, "QDB_CLIENT_CONF")))
    reader = CsvReader(endpoint)
    try:
        with pytest.raises(RunError) as refused:
            list(reader.frames("select * from cpu", [], 1000))
    finally:
        reader.close()
    assert str(refused.value) == (f"QuestDB HTTP at {HOST}:{stack.https} refused the login (HTTP 401): it refused "
                                  f"user '{HTTP_USER}' from QDB_CLIENT_CONF")
    # connectorx's pool would retry a refused login for ~25 s before saying so; the read says it at once.
    connectorx = run_cli(*read_args(stack, "connectorx", TLS_PROXY_PORTS["pg"], tmp_path / "c.json"),
                         env=stack.pg_direct(PGSSLMODE="verify-ca", PGPASSWORD="wrong-2"))
    assert_one_line_error(connectorx, 1, f"QuestDB PGWire at {HOST}:{TLS_PROXY_PORTS['pg']} refused user "
                                         f"'{PG_USER}' (from PGPASSWORD)")
    assert "wrong-2" not in connectorx.stdout + connectorx.stderr


# --- QWP's reads and queries through a proxy in front of a QWP server ------------------------------------------


@pytest.fixture(scope="module")
def qwp_stack(certificates, tmp_path_factory):
    """A QWP server (the pinned QWP jar) asking for the HTTP login, a proxy in front of its HTTP port, and the data
    set sent over QWP through it (``wss::`` trusting the test's CA): the proxy's port."""
    root = tmp_path_factory.mktemp("tls-qwp")
    server = NativeQuestDB(root / "root", **TLS_QWP_PORTS, jar=qwp_jar(),
                           extra_env={"QDB_HTTP_USER": HTTP_USER, "QDB_HTTP_PASSWORD": HTTP_PASSWORD})
    proxy = None
    try:
        server.start()
        proxy = socat(certificates, TLS_QWP_PROXY_PORT, server.http_port, root / "http.log")
        conf = (f"wss::addr={HOST}:{TLS_QWP_PROXY_PORT};tls_roots={certificates.ca};username={HTTP_USER};"
                f"password={HTTP_PASSWORD};")
        load = run_cli("bench", "--send", "--transport", "qwp", *DATA_SET, "--host", HOST, "--http-port",
                       str(TLS_QWP_PROXY_PORT), "--sample-interval", "0", "--conf", conf,
                       "--results", str(root / "bench.json"))
        assert load.returncode == 0, load.stderr
        yield server
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()


@pytest.mark.slow
@pytest.mark.server
def test_qwp_reads_and_queries_through_the_proxy_with_the_tests_ca(stack, qwp_stack, tmp_path):
    port = TLS_QWP_PROXY_PORT
    trusted = (f"wss::addr={HOST}:{port};tls_roots={stack.certificates.ca};username={HTTP_USER};"
               f"password={HTTP_PASSWORD};")
    https = (f"https::addr={HOST}:{port};tls_ca=pem_file;tls_roots={stack.certificates.ca};username={HTTP_USER};"
             f"password={HTTP_PASSWORD};")
    read = ["read", "--protocol", "qwp", "--check", *DATA_SET, "--host", HOST, "--http-port", str(port),
            "--sample-interval", "0"]
    runs = together(
        read=([*read, "--frame", "arrow", "--results", str(tmp_path / "read.json")], stack.env(http_conf=trusted)),
        # The ILP client's https:: string (tls_ca=pem_file beside tls_roots) serves QWP's connections too.
        read_https=([*read, "--results", str(tmp_path / "read2.json")], stack.env(http_conf=https)),
        queries=(query_args(stack, "qwp", tmp_path / "q.json", http_port=port, check=True),
                 stack.env(http_conf=trusted)),
        untrusted=([*read, "--results", str(tmp_path / "read3.json")],
                   stack.env(http_conf=f"wss::addr={HOST}:{port};username={HTTP_USER};password={HTTP_PASSWORD};")))
    for name in ("read", "read_https"):
        assert runs[name].returncode == 0, runs[name].stderr
        assert f"Checked: all {ROWS} rows equal the data set." in runs[name].stdout
    assert runs["queries"].returncode == 0, runs["queries"].stderr
    assert "Checked: all 8 answers equal the reference." in runs["queries"].stdout
    # The read asks /exec first, with the same trust: the one line of the HTTP port.
    assert_one_line_error(runs["untrusted"], 1, f"QuestDB HTTP at {HOST}:{port}: {UNTRUSTED}", "QDB_CLIENT_CONF")
    for run in runs.values():
        assert HTTP_PASSWORD not in run.stdout + run.stderr
    assert all(HTTP_PASSWORD not in path.read_text() for path in tmp_path.glob("*.json"))


@pytest.mark.slow
@pytest.mark.server
def test_a_qwp_connection_refused_by_tls_says_why_in_one_line(stack, qwp_stack):
    """The QWP reader on its own (``read`` asks /exec first, with the same trust and login): an untrusted
    certificate, plain to the proxy's TLS port, TLS to the server's plain port."""
    from harness.read.connection import Endpoint
    from harness.read.qwp import QwpReader

    login = HttpLogin(HTTP_USER, HTTP_PASSWORD, source="QDB_CLIENT_CONF")

    def refusal(port: int, values: dict | None) -> str:
        tls = tls_of(None if values is None else HttpConf("https", values, "QDB_CLIENT_CONF"))
        with pytest.raises(RunError) as refused:
            QwpReader(Endpoint(HOST, port, 1, http=login, http_tls=tls))
        assert "\n" not in str(refused.value) and HTTP_PASSWORD not in str(refused.value)
        return str(refused.value)

    untrusted = refusal(TLS_QWP_PROXY_PORT, {})
    assert untrusted.startswith(f"QuestDB QWP at {HOST}:{TLS_QWP_PROXY_PORT}: invalid peer certificate: "
                                f"UnknownIssuer (the configuration string of QDB_CLIENT_CONF trusts the system's root "
                                f"certificates"), untrusted
    assert refusal(TLS_QWP_PROXY_PORT, None).startswith(f"QuestDB QWP at {HOST}:{TLS_QWP_PROXY_PORT} speaks TLS")
    plain = refusal(qwp_stack.http_port, {"tls_roots": str(stack.certificates.ca)})
    assert plain.startswith(f"QuestDB QWP at {HOST}:{qwp_stack.http_port} does not speak TLS"), plain
