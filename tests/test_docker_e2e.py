"""The Compose stack end to end on a real Docker engine, with the offline stand-in images.

Runs exactly what a user runs: `make bench OFFLINE=1 WORKERS=2 ROWS=200000 PROFILE=1`,
`make noop-sink OFFLINE=1 ROWS=200000`, then with QuestDB asking for logins (AUTH=1) `make bench OFFLINE=1
USE_CASE=iot` (ILP over TCP), `make bench CLIENTS=2 TRANSPORT=http`, `make queries OFFLINE=1` on a
small data set (PGWire) and, last, `make bench TRANSPORT=qwp` (QuestDB made anew from the QWP server's stand-in),
then asks
the containers themselves: the rows inside QuestDB, the CPU set the client ran on (recorded in its results
JSON), the configuration QuestDB used, and what Prometheus scraped (QuestDB's /metrics with the login). The
passwords are recognisable ones, looked for where none may be: make's output, every command line the runs
started (`ps`, sampled throughout), the records and reports, the containers' logs. The stand-ins (not the pinned upstream images) because CI reaches no container
registry; they run the same QuestDB jar, the same configuration and the same client image recipe.

Without an engine or Compose the tests stop and say why (tests/prerequisites.py; `make test` sets both
up first). The stack runs as its own Compose project (COMPOSE_PROJECT_NAME) on ports of its own
(PUBLISH_* in compose.yaml), so a developer's `make up` stack or native QuestDB on the default ports
does not get in its way; it is removed with its volumes afterwards. The images stay cached, so a rerun
takes about a minute.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from container_sql import questdb_sql_in
from helpers import DOCKER_PUBLISHED_PORTS, run_cli
from prerequisites import require

from harness.servers.jar import jar_version, qwp_jar

# The Compose stack built and run several times: minutes (docker: tests/conftest.py marks the module).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "tsbs-pandas-questdb-test"
ROWS = 200_000
IOT_POINTS = 50_000  # points TSBS draws; it prints about nine in ten
CLIENT_ROWS = 60_000
# The host ports the test stack publishes (compose.yaml's PUBLISH_*): clear of a developer's stack, the
# native tests' 19xxx and the metrics tests' 29xxx, and below Linux's ephemeral range (tests/helpers.py).
PUBLISHED = DOCKER_PUBLISHED_PORTS

# Recognisable secrets, given as a user would (in the environment); kept in a SECRETS_DIR of the test's own (the
# runs fixture sets it), so a developer's .cache/ is left alone.
QUESTDB_PASSWORD = "S3cret-auth-6612"
GRAFANA_PASSWORD = "Graf-S3cret-0817"
SECRETS = (QUESTDB_PASSWORD, GRAFANA_PASSWORD)
ENV = {**os.environ, "GRAFANA_ADMIN_PASSWORD": GRAFANA_PASSWORD, "QUESTDB_USER": "e2e-bencher",
       "QUESTDB_PASSWORD": QUESTDB_PASSWORD, "COMPOSE_PROJECT_NAME": PROJECT,
       **{name: str(port) for name, port in PUBLISHED.items()}}
ENV.pop("COMPOSE_FILE", None)


def make(*args: str, timeout: float = 420) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          env=ENV, timeout=timeout)


def compose(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    # compose.auth.yaml is not needed to find or stop the containers (its values would be).
    files = ["-f", "compose.yaml", "-f", "compose.offline.yaml"]
    return subprocess.run(["docker", "compose", *files, *args], cwd=ROOT, capture_output=True, text=True,
                          env=ENV, timeout=timeout)


def container(service: str) -> str:
    result = compose("ps", "--all", "--quiet", service)
    assert result.returncode == 0 and result.stdout.strip(), (service, result.stderr)
    return result.stdout.split()[0]


def cpus(cpuset: str) -> list[int]:
    out: list[int] = []
    for part in cpuset.split(","):
        first, _, last = part.partition("-")
        out += range(int(first), int(last or first) + 1)
    return out


def prometheus(query: str) -> list[dict]:
    url = f"http://127.0.0.1:{PUBLISHED['PUBLISH_PROMETHEUS_PORT']}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]["result"]


def questdb_sql_in_container(sql: str) -> dict:
    return questdb_sql_in(container("questdb"), sql)


class ProcessList(threading.Thread):
    """Every command line on the host (`ps -eo args`: the containers' processes too), sampled while the runs go."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: set[str] = set()
        self.samples = 0
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(0.2):
            listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
            self.seen.update(listed.splitlines())
            self.samples += 1


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The make runs, once for the module (the queries fixture below adds the last); the stack is removed
    afterwards, volumes included."""
    require("docker", "compose")
    busy = [port for port in PUBLISHED.values() if socket.socket().connect_ex(("127.0.0.1", port)) == 0]
    if busy:
        pytest.fail(f"ports {busy} are taken: the test stack publishes there (stop what holds them)", pytrace=False)
    tag = uuid.uuid4().hex[:8]
    paths = {mode: ROOT / "results" / f"pytest-docker-{mode}-{tag}.json"
             for mode in ("bench", "noop-sink", "iot", "clients", "queries", "host-profiled", "qwp")}
    ENV["SECRETS_DIR"] = str(tmp_path_factory.mktemp("secrets"))
    processes = ProcessList()
    processes.start()
    try:
        images = make("offline-images", timeout=900)
        assert images.returncode == 0, images.stdout + images.stderr
        bench = make("bench", "OFFLINE=1", "WORKERS=2", f"ROWS={ROWS}", "SEED=42", "METRICS_LINGER=15", "PROFILE=1",
                     f"RESULTS=results/{paths['bench'].name}")
        # This machine's harness, profiling the stack's QuestDB through the port Docker publishes (before AUTH=1).
        host_profiled = run_cli("bench", "--send", "--row-count", "50000", "--profile", "--host", "127.0.0.1",
                                "--http-port", str(PUBLISHED["PUBLISH_HTTP_PORT"]),
                                "--ilp-port", str(PUBLISHED["PUBLISH_ILP_PORT"]),
                                "--pg-port", str(PUBLISHED["PUBLISH_PG_PORT"]),
                                "--server-metrics-port", str(PUBLISHED["PUBLISH_MIN_PORT"]), "--table", "cpu_host",
                                "--results", str(paths["host-profiled"]), timeout=300)
        noop = make("noop-sink", "OFFLINE=1", f"ROWS={ROWS}", "SEED=42", "METRICS_LINGER=3",
                    f"RESULTS=results/{paths['noop-sink'].name}")
        # From here on QuestDB asks for logins (its container made anew): ILP over TCP (open) with /exec logged
        # in, then ILP over HTTP logged in, then (queries) PGWire.
        iot = make("bench", "OFFLINE=1", "AUTH=1", "USE_CASE=iot", f"ROWS={IOT_POINTS}", "SCALE=50", "SEED=42",
                   "METRICS_LINGER=0", f"RESULTS=results/{paths['iot'].name}")
        # The runs that tests find in Prometheus linger 15 s: a new container is scraped ~6 s after it starts.
        # A table of its own: table cpu keeps the first run's rows, which a test below counts.
        clients = make("bench", "OFFLINE=1", "AUTH=1", "CLIENTS=2", "TRANSPORT=http", f"ROWS={CLIENT_ROWS}",
                       "SCALE=100", "SEED=7", "METRICS_LINGER=15", "ARGS=--table cpu_clients",
                       f"RESULTS=results/{paths['clients'].name}")
        yield {"bench": bench, "noop-sink": noop, "iot": iot, "clients": clients, "host-profiled": host_profiled,
               "paths": paths, "processes": processes, "tag": tag}
    finally:
        processes.done.set()
        compose("--profile", "*", "down", "--volumes", "--remove-orphans", timeout=180)
        for path in (ROOT / "results").glob(f"pytest-docker-*-{tag}*"):  # records, -load.json, reports, folders
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def record(runs, mode: str) -> dict:
    result = runs[mode]
    assert result.returncode == 0, f"make {mode} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    path = runs["paths"][mode]
    assert f"Results: results/{path.name}" in result.stdout
    return json.loads(path.read_text())


def expected_split() -> tuple[str, str]:
    split = subprocess.run([str(ROOT / "scripts/docker-check.sh"), "cpus"], capture_output=True, text=True)
    qdb, client = split.stdout.split()
    return qdb, client


def test_bench_results(runs):
    data = record(runs, "bench")
    assert data["status"] == "ok", data.get("error")
    assert data["parameters"]["workers"] == 2 and data["parameters"]["row_count"] == ROWS
    assert data["parameters"]["target"] == "questdb" and data["seed"] == 42
    assert data["phases"]["send"]["rows"] == ROWS
    # Schema v2: what the server holds, read back from it after the run.
    assert data["validation"]["expected_rows"] == ROWS and data["validation"]["visible_rows"] == ROWS
    assert "Sent:" in runs["bench"].stdout and "Validated:" in runs["bench"].stdout


def test_a_profiled_bench_samples_the_client_and_questdb_in_their_containers(runs):
    """PROFILE=1: the client container, sharing QuestDB's processes as QuestDB's user, sampled itself (py-spy) and
    QuestDB's JVM (async-profiler, loaded through HotSpot's attach), with no capability granted."""
    data = record(runs, "bench")
    profile = data["profile"]
    assert profile["server_not_profiled"] is None and profile["server"]["mode"] in ("ctimer", "itimer")
    assert profile["server"]["samples"] > 0 and "send" in profile["server"]["phases"]
    assert any(frame.startswith("io/questdb/") for frame, _ in profile["server"]["top_frames"]), profile["server"]
    assert profile["client"]["samples"] > 0 and profile["client"]["buckets"]["serialization"] > 0
    # Each side against its own CPU set: the client's one CPU, not the machine's.
    assert "the client used " in profile["verdict"]
    assert f" of {len(data['system']['cpu_affinity'])} CPUs" in profile["verdict"].split("the client used ")[1]
    assert f"Verdict: {profile['verdict']}" in runs["bench"].stdout
    folder = runs["paths"]["bench"].with_suffix(".profile")
    assert (folder / "server-send.collapsed").stat().st_size > 0 and (folder / "async-profiler.log").exists()
    assert (folder / "client.speedscope.json").exists() and (folder / "server.speedscope.json").exists()
    assert "io/questdb/" in runs["paths"]["bench"].with_suffix(".html").read_text()  # the server's flame graph


def test_this_machines_harness_profiles_the_containers_questdb_behind_its_published_port(runs):
    """Natively, against `make up`'s QuestDB: the JVM behind the docker-proxy that publishes the port, attached to as
    root from outside its container (its files reached through /proc, a folder of its user's in its /tmp)."""
    result = runs["host-profiled"]
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    data = json.loads(runs["paths"]["host-profiled"].read_text())
    assert data["validation"]["visible_rows"] == 50_000
    server = data["profile"]["server"]
    assert data["profile"]["server_not_profiled"] is None and server["samples"] > 0, data["profile"]
    assert any(frame.startswith("io/questdb/") for frame, _ in server["top_frames"])
    assert (runs["paths"]["host-profiled"].with_suffix(".profile") / "async-profiler.log").exists()


def test_rows_inside_the_questdb_container(runs):
    record(runs, "bench")
    answer = questdb_sql_in_container("select count() from cpu")
    assert answer["dataset"] == [[ROWS]], answer


def test_client_ran_on_its_cpu_set(runs):
    qdb_cpus, client_cpus = expected_split()
    assert set(cpus(qdb_cpus)).isdisjoint(cpus(client_cpus))
    for mode in ("bench", "noop-sink"):
        # The client records os.sched_getaffinity(0) of its own process: the container's cpuset.
        assert record(runs, mode)["system"]["cpu_affinity"] == cpus(client_cpus), mode
    inspected = subprocess.run(["docker", "inspect", "--format", "{{.HostConfig.CpusetCpus}}", container("questdb")],
                               capture_output=True, text=True)
    assert inspected.stdout.strip() == qdb_cpus


def test_questdb_used_the_mounted_configuration(runs):
    record(runs, "bench")
    logs = compose("logs", "--no-log-prefix", "questdb").stdout
    # QuestDB logs each worker pool as it starts; 6 shared workers come from conf/server.conf only.
    assert re.search(r"workers=6, pool=shared-network", logs), logs[-2000:]
    assert "Server config: /var/lib/questdb/conf/server.conf" in logs
    answer = questdb_sql_in_container(
        "select property_path, value, value_source from (show parameters) where property_path in "
        "('shared.worker.count', 'line.tcp.io.worker.count', 'cairo.wal.enabled.default', 'metrics.enabled')")
    assert sorted(answer["dataset"]) == [["cairo.wal.enabled.default", "true", "conf"],
                                         ["line.tcp.io.worker.count", "6", "conf"],
                                         ["metrics.enabled", "true", "conf"],
                                         ["shared.worker.count", "6", "conf"]]


def test_prometheus_scraped_the_client_and_questdb(runs):
    run_id = record(runs, "bench")["run_id"]
    # The clients are found by DNS (their instances are container addresses); QuestDB is a static target.
    for selector in ('job="client"', 'instance="questdb:9003"'):
        up = prometheus(f'max(max_over_time(up{{{selector}}}[1h]))')
        assert up and up[0]["value"][1] == "1", (selector, up)
    sent = prometheus(f'sum(max_over_time(harness_rows_total{{run_id="{run_id}", phase="send"}}[1h]))')
    assert sent and float(sent[0]["value"][1]) == ROWS, sent


def test_noop_sink_run(runs):
    data = record(runs, "noop-sink")
    assert data["status"] == "ok", data.get("error")
    assert data["parameters"]["target"] == "sink" and data["parameters"]["host"] == "sink"
    assert data["phases"]["send"]["rows"] == ROWS
    assert data["validation"] is None  # a sink has nothing to count


def test_iot_run_fills_both_tables_exactly(runs):
    """`make bench USE_CASE=iot`: readings and diagnostics hold exactly the rows the record expected, counted
    inside the QuestDB container."""
    data = record(runs, "iot")
    assert data["status"] == "ok" and data["parameters"]["use_case"] == "iot"
    tables = data["validation"]["tables"]
    assert set(tables) == {"readings", "diagnostics"}
    for table, count in tables.items():
        assert count["visible"] == count["expected"] > 0, table
        inside = questdb_sql_in_container(f"select count() from {table}")["dataset"][0][0]
        assert inside == count["expected"], table
    assert 0.8 * IOT_POINTS < data["validation"]["visible_rows"] < IOT_POINTS


def test_two_client_containers_send_the_whole_data_set_once(runs):
    """`make bench CLIENTS=2`: two client containers, each on its own share of the client CPU set, sent
    interleaved groups 0 and 1; the merged record counts the whole data set, validated by client 0, and
    Prometheus found both containers by DNS (each one's rows under the run's shared run_id)."""
    data = record(runs, "clients")
    assert data["status"] == "ok" and data["parameters"]["clients"] == 2
    assert data["phases"]["send"]["rows"] == CLIENT_ROWS == data["validation"]["visible_rows"]
    assert [client["client"] for client in data["clients"]] == [0, 1]
    assert sum(client["rows"] for client in data["clients"]) == CLIENT_ROWS
    assert questdb_sql_in_container("select count() from cpu_clients")["dataset"] == [[CLIENT_ROWS]]
    folder = runs["paths"]["clients"].with_suffix("")
    records = [json.loads((folder / f"client-{client}.json").read_text()) for client in range(2)]
    client_cpus = expected_split()[1]
    shares = subprocess.run([str(ROOT / "scripts/docker-check.sh"), "shares", client_cpus, "2"], capture_output=True,
                            text=True).stdout.split()
    assert [record["system"]["cpu_affinity"] for record in records] == [cpus(share) for share in shares]
    assert {record["run_id"] for record in records} == {data["run_id"]}
    found = prometheus(f'count(count by (instance) (last_over_time(harness_rows_total{{run_id="{data["run_id"]}", '
                       f'phase="send"}}[1h])))')
    assert found and found[0]["value"][1] == "2"
    assert runs["paths"]["clients"].with_suffix(".html").exists()


# --- make queries: last, since its load replaces table cpu (whose rows a test above counts) ---------------

# 4 hosts over 3 hours: the types TSBS makes for so small a set (a few seconds to load), 2 queries each.
QUERY_SET = ["QSCALE=4", "QEND=2016-01-01T03:00:00Z", "QUERIES=2"]
QUERY_ROWS = 4 * 3 * 360  # one epoch every 10 s


@pytest.fixture(scope="module")
def queries(runs):
    """`make queries OFFLINE=1` on the stack `runs` started: the load, then TSBS's queries of every type the
    data set allows. Used only by the tests below, so it runs after the tests above (pytest's file order)."""
    started = time.monotonic()
    result = make("queries", "OFFLINE=1", "AUTH=1", *QUERY_SET, "METRICS_LINGER=15",
                  f"RESULTS=results/{runs['paths']['queries'].name}")
    runs["queries"] = result
    return {"result": result, "seconds": time.monotonic() - started}


def test_queries_results(runs, queries):
    data = record(runs, "queries")
    stdout = queries["result"].stdout
    assert data["status"] == "ok" and data["kind"] == "queries", data.get("error")
    assert data["parameters"]["scale"] == 4 and data["parameters"]["protocol"] == "pgwire"
    assert data["parameters"]["host"] == "questdb" and data["seed"] == 7
    statistics = data["queries"]["statistics"]
    types = [name for name in statistics if name != "all queries"]
    assert len(types) >= 3 and "lastpoint" in types, types
    assert all(statistics[name]["count"] == 2 for name in types), statistics
    assert statistics["all queries"]["count"] == 2 * len(types) == data["phases"]["queries"]["rows"]
    for figures in statistics.values():
        assert 0 < figures["min_ms"] <= figures["median_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert data["queries"]["failures"] == {} and data["queries"]["check"] is None
    report = runs["paths"]["queries"].with_suffix(".html")
    assert f"Report: results/{report.name}" in stdout and report.stat().st_size > 0
    # The load's record, beside it: the data set the queries ran on, every row visible.
    load = json.loads(runs["paths"]["queries"].with_name(runs["paths"]["queries"].stem + "-load.json").read_text())
    assert load["status"] == "ok" and load["parameters"]["transport"] == "http" and load["seed"] == 7
    assert load["validation"]["visible_rows"] == QUERY_ROWS


def test_queries_client_ran_on_its_cpu_set_and_prometheus_scraped_it(runs, queries):
    data = record(runs, "queries")
    assert data["system"]["cpu_affinity"] == cpus(expected_split()[1])
    counted = prometheus(f'sum(max_over_time(harness_query_duration_seconds_count{{run_id="{data["run_id"]}"}}[1h]))')
    assert counted and float(counted[0]["value"][1]) == data["queries"]["statistics"]["all queries"]["count"], counted
    assert questdb_sql_in_container("select count() from cpu")["dataset"] == [[QUERY_ROWS]]


# --- AUTH=1: QuestDB asked for logins, and no secret showed -------------------------------------------------

def test_runs_logged_in_to_questdb(runs, queries):
    """The runs of AUTH=1 passed QuestDB's logins: the iot run sent over TCP (--conf, which holds no login) with
    /exec logged in from QDB_CLIENT_CONF, the clients sent over HTTP with QDB_CLIENT_CONF's login, each
    validated, and the queries ran over PGWire as the given user. QuestDB refuses whoever comes without one,
    /status and /metrics included, while Prometheus still scrapes QuestDB's /metrics with its login."""
    iot, clients = record(runs, "iot"), record(runs, "clients")
    assert iot["parameters"]["conf_source"] == "--conf" and iot["parameters"]["transport"] == "tcp"
    assert iot["validation"]["visible_rows"] > 0
    folder = runs["paths"]["clients"].with_suffix("")
    for client in range(2):
        parameters = json.loads((folder / f"client-{client}.json").read_text())["parameters"]
        assert parameters["conf_source"] == "QDB_CLIENT_CONF" and parameters["transport"] == "http"
        assert parameters["conf"] == "http::addr=questdb:9000;auto_flush=off;username=e2e-bencher;password=***;"
    assert clients["validation"]["visible_rows"] == CLIENT_ROWS
    assert record(runs, "queries")["status"] == "ok"
    for port, path in ((PUBLISHED["PUBLISH_HTTP_PORT"], "/exec?query=select%201"),
                       (PUBLISHED["PUBLISH_MIN_PORT"], "/status"), (PUBLISHED["PUBLISH_MIN_PORT"], "/metrics")):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10)
        assert refused.value.code == 401, path
    # Every scrape of the last 20 s (QuestDB asked for logins for minutes by then) succeeded: up is 0 on a 401.
    up = prometheus('min_over_time(up{job="questdb"}[20s])')
    assert up and up[0]["value"][1] == "1", up
    assert prometheus('last_over_time(questdb_memory_rss{job="questdb"}[20s])'), "no QuestDB metric scraped"


def test_no_secret_shows(runs, queries):
    """Neither password in make's output (its echoed commands, the clients' own output), on any command line
    while the runs went, in a record, report or client log of results/, or in the servers' logs."""
    results = [runs[mode] for mode in ("bench", "noop-sink", "iot", "clients", "queries")]
    for result in results:
        for secret in SECRETS:
            assert secret not in result.stdout + result.stderr
    runs["processes"].done.set()
    runs["processes"].join(timeout=10)
    assert runs["processes"].samples > 50 and any("docker" in line for line in runs["processes"].seen)
    leaked = [line for line in runs["processes"].seen if any(secret in line for secret in SECRETS)]
    assert not leaked, leaked
    written = list((ROOT / "results").glob(f"pytest-docker-*-{runs['tag']}*"))
    files = [path for top in written for path in ([top] if top.is_file() else top.rglob("*")) if path.is_file()]
    assert any(path.suffix == ".html" for path in files) and any(path.suffix == ".log" for path in files)
    for path in files:
        content = path.read_bytes()
        assert not any(secret.encode() in content for secret in SECRETS), path
    logs = compose("--profile", "*", "logs", "--no-log-prefix")
    assert logs.returncode == 0 and "questdb" in logs.stdout.lower()
    assert not any(secret in logs.stdout + logs.stderr for secret in SECRETS)


# --- TRANSPORT=qwp: the QWP server's stand-in, after every other run (its container made anew) ----------------

QWP_ROWS = 100_000


@pytest.fixture(scope="module")
def qwp(runs, queries):
    """`make bench OFFLINE=1 AUTH=1 TRANSPORT=qwp`, last: QuestDB made anew from the QWP server's stand-in (the pinned
    jar on this host's Java 25), on the same data volume, into a table of its own."""
    result = make("bench", "OFFLINE=1", "AUTH=1", "TRANSPORT=qwp", f"ROWS={QWP_ROWS}", "SCALE=100", "SEED=5",
                  "METRICS_LINGER=0", "ARGS=--table cpu_qwp", f"RESULTS=results/{runs['paths']['qwp'].name}")
    runs["qwp"] = result
    return result


def test_bench_over_qwp_into_the_qwp_servers_stand_in(runs, qwp):
    data = record(runs, "qwp")
    assert data["status"] == "ok", data.get("error")
    assert data["parameters"]["transport"] == "qwp" and data["plan"]["wire"]["name"] == "QWP"
    assert data["parameters"]["conf"] == "ws::addr=questdb:9000;username=e2e-bencher;password=***;"
    assert data["server"]["questdb_version"] == jar_version(qwp_jar())
    assert data["validation"]["visible_rows"] == QWP_ROWS
    assert questdb_sql_in_container("select count() from cpu_qwp")["dataset"] == [[QWP_ROWS]]
    (build,) = questdb_sql_in_container("select build()")["dataset"][0]
    assert f"QuestDB {jar_version(qwp_jar())}, JDK 25." in build, build
    for secret in SECRETS:
        assert secret not in qwp.stdout + qwp.stderr
