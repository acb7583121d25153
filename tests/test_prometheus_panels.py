"""Every query of the Grafana dashboard, run by a real Prometheus against a real benchmark run and a real
query run.

Starts Debian's Prometheus natively with the project's conf/prometheus.yml (only the two targets
rewritten to this test's ports; the client job gets two), a native QuestDB with metrics on, and a real
``python -m harness bench --send --metrics-port ...`` against it; then, on the loaded table, a real
``python -m harness queries run --metrics-port ...`` (TSBS queries of the same data set, plus one the
server rejects), then a real ``python -m harness read --metrics-port ...`` of the table; waits until Prometheus
scrapes every target; then evaluates each PromQL expression of
each panel of grafana/dashboards/harness.json (Grafana's variables substituted as Grafana would, $run
being the bench run, for the query benchmark's row the query run, for the read row the read run) through Prometheus's HTTP API.
Each must return data: a panel that queries a metric nobody exports (a typo, a renamed QuestDB metric, a
dropped label) fails.

Ports (tests/helpers.py's table: this suite's 29xxx range, shifted by HARNESS_TEST_PORT_OFFSET): Prometheus
29090, QuestDB 29000/29009/28812/29003, client metrics 29464 (bench), 29465 (queries run) and 29466 (read).
"""

from __future__ import annotations

import errno
import json
import math
import re
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from helpers import CLIENT_METRICS_PORT, OPEN_LOOP_METRICS_PORT, PROMETHEUS_PORT, QUERY_METRICS_PORT, READ_METRICS_PORT
from helpers import PANELS_QUESTDB_PORTS as QUESTDB_PORTS

from harness.servers.process import port_in_use

from harness.servers.questdb import NativeQuestDB
from test_dashboard import (OPEN_LOOP_ROW, PROMETHEUS_CONF, QUERIES_ROW, READ_ROW, ROOT, load_dashboard, load_yaml,
                            panel_expressions, panels_by_row, substitute)

# The read's DataFrames are this small so that it lasts seconds (Prometheus scrapes it while it reads).
READ_CHUNK_ROWS = 20
ROWS = 300_000
WORKERS = 2
SEED, SCALE = 11, 100  # the bench run's data set; the query run's queries are generated for it
QUERIES_PER_TYPE = 3
# One query the server rejects, so that the failures panel's per-type series shows something.
REJECTED = {"query_type": "lastpoint", "label": "rejected", "description": "a table nobody created",
            "sql": "SELECT * FROM no_such_table", "params": None}
# The clients keep serving their final values this long after their runs; the checks happen meanwhile and
# the fixture stops them afterwards. Generous: a slow machine must not lose a client target mid-test.
LINGER_SECONDS = 180
WAIT_SECONDS = 60  # for each stage (target up, run finished, final scrape); a failure names the stage
# Every test reads the stack fixture's own QuestDB and Prometheus, after three runs against them: minutes.
pytestmark = [pytest.mark.server, pytest.mark.slow]

# Metrics that move during any successful send: a panel querying them must show more than zeros.
MOVING_METRICS = ("harness_rows_total", "harness_ilp_bytes_total", "harness_flushes_total",
                  "harness_flush_duration_seconds_bucket", "harness_flush_duration_seconds_count",
                  "harness_query_duration_seconds_bucket", "harness_query_duration_seconds_count",
                  "questdb_line_tcp_recv_bytes", "questdb_wal_written_rows_total", "questdb_committed_rows_total",
                  "questdb_wal_apply_written_rows_total", "process_cpu_seconds_total", "questdb_memory_rss",
                  "harness_open_loop_latency_seconds_bucket", "harness_open_loop_query_latency_seconds_bucket")


class Prometheus:
    """A Prometheus server process and its HTTP API."""

    def __init__(self, workdir: Path, port: int, targets: dict[str, list[str]]):
        self.url = f"http://127.0.0.1:{port}"
        self.workdir = workdir
        self.log = workdir / "prometheus.log"
        config = load_yaml(PROMETHEUS_CONF)
        for job in config["scrape_configs"]:
            # Each job's Compose target (a static one, or a DNS name and port) becomes the test's processes:
            # natively there is no Compose DNS to discover the clients by.
            discovered = [f"{name}:{sd['port']}" for sd in job.pop("dns_sd_configs", []) for name in sd["names"]]
            (compose_target,) = discovered or [target for static in job["static_configs"] for target in static["targets"]]
            assert compose_target in targets, f"{compose_target} is not a target the test replaces"
            job["static_configs"] = [{"targets": targets[compose_target]}]
        self.config = workdir / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config))
        binary = shutil.which("prometheus")
        if binary is None:
            raise RuntimeError("the prometheus binary is not installed: apt-get install prometheus (see .ci/run)")
        if port_in_use(port):
            raise RuntimeError(f"port {port} is busy: cannot start the test's Prometheus")
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [binary, f"--config.file={self.config}", f"--storage.tsdb.path={workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1h"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def stop(self) -> None:
        stop_process(self.process)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else "(no log)"

    def get(self, path: str, **params) -> dict:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:  # a bad query: 400 with Prometheus's error in the body
            body = json.loads(exc.read())
        return body

    def ready(self) -> bool:
        try:
            return self.get("/api/v1/status/buildinfo")["status"] == "success"
        except (OSError, ValueError):
            return False

    def targets(self) -> dict[tuple[str, str], dict]:
        """Every active target by (job, instance)."""
        return {(target["labels"]["job"], target["labels"]["instance"]): target
                for target in self.get("/api/v1/targets")["data"]["activeTargets"]}

    def query(self, expr: str, at: float | None = None) -> dict:
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self.get("/api/v1/query", **params)

    def query_range(self, expr: str, start: float, end: float, step: str = "1s") -> dict:
        return self.get("/api/v1/query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step=step)


def stop_process(process: subprocess.Popen | None, timeout: float = 15) -> None:
    """SIGTERM the process group, SIGKILL after ``timeout``; reaped either way."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def wait_for(what: str, check, timeout: float = WAIT_SECONDS, interval: float = 0.2, explain=lambda: ""):
    """Poll ``check()`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}. {explain()}")
        time.sleep(interval)


class LingeringRun:
    """A harness run serving --metrics-port in the background, its output in a file; it is stopped when the
    module's tests are done. ``what`` names it in failures ("the bench run")."""

    def __init__(self, what: str, command: list[str], output: Path, metrics_port: int, request):
        if port_in_use(metrics_port):
            pytest.fail(f"port {metrics_port} is busy: {what} could not serve its metrics")
        self.what, self.output = what, output
        self.started = time.time()
        with open(output, "wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            cwd=ROOT, start_new_session=True)
        request.addfinalizer(lambda: stop_process(self.process))

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def tail(self) -> str:
        return self.text()[-2000:]

    def alive(self) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"{self.what} exited ({self.process.returncode}) before lingering: {self.text()[-3000:]}")

    def wait_finished(self) -> None:
        def finished():
            self.alive()
            return "Results:" in self.text()

        wait_for(f"{self.what} to finish (its 'Results:' line)", finished, timeout=180, explain=self.tail)


def wait_scraped(prometheus: Prometheus, what: str, query: str, value: float) -> None:
    """Until Prometheus has scraped a run's final counters: ``query`` (a sum) equals ``value``."""
    def scraped():
        result = prometheus.query(query)["data"]["result"]
        return result and float(result[0]["value"][1]) == value

    wait_for(f"Prometheus to scrape {what}'s final counters ({query} == {value})", scraped)


@dataclass
class Stack:
    prometheus: Prometheus
    questdb: NativeQuestDB
    record: dict          # the bench run's results JSON
    run_started: float    # Unix time just before the bench process started
    bench_output: Path
    query_record: dict    # the query run's results JSON
    query_started: float  # Unix time just before the queries run process started
    read_record: dict     # the read run's results JSON
    read_started: float   # Unix time just before the read process started
    open_loop_record: dict  # the open-loop bench run's results JSON
    open_loop_started: float


@pytest.fixture(scope="module")
def stack(tmp_path_factory, request):
    workdir = tmp_path_factory.mktemp("prometheus-panels")
    # Prometheus first: it takes seconds to start scraping a target, during which QuestDB starts.
    prometheus = Prometheus(workdir, PROMETHEUS_PORT,
                            {"client:9464": [f"127.0.0.1:{CLIENT_METRICS_PORT}", f"127.0.0.1:{QUERY_METRICS_PORT}",
                                             f"127.0.0.1:{READ_METRICS_PORT}", f"127.0.0.1:{OPEN_LOOP_METRICS_PORT}"],
                             "questdb:9003": [f"127.0.0.1:{QUESTDB_PORTS['min_port']}"]})
    request.addfinalizer(prometheus.stop)
    questdb = NativeQuestDB(workdir / "questdb-root", **QUESTDB_PORTS)
    request.addfinalizer(questdb.stop)
    questdb.start()

    def target_up(job: str, port: int):
        def check():
            if prometheus.process.poll() is not None:
                pytest.fail(f"Prometheus exited ({prometheus.process.returncode}): {prometheus.log_tail()}")
            if not prometheus.ready():
                return None
            target = prometheus.targets().get((job, f"127.0.0.1:{port}"))
            return target if target and target["health"] == "up" else None
        return check

    wait_for("Prometheus to scrape QuestDB (job questdb up)", target_up("questdb", QUESTDB_PORTS["min_port"]),
             explain=prometheus.log_tail)

    output = workdir / "bench.out"
    results = workdir / "run.json"
    command = [sys.executable, "-m", "harness", "bench", "--send", "--host", "127.0.0.1",
               "--ilp-port", str(QUESTDB_PORTS["ilp_port"]), "--http-port", str(QUESTDB_PORTS["http_port"]),
               "--row-count", str(ROWS), "--scale", str(SCALE), "--seed", str(SEED), "--workers", str(WORKERS),
               "--worker-chunk-row-count", "5000", "--reporting-period", "0", "--results", str(results),
               "--metrics-port", str(CLIENT_METRICS_PORT), "--metrics-linger", str(LINGER_SECONDS)]
    bench = LingeringRun("the bench run", command, output, CLIENT_METRICS_PORT, request)
    wait_for("Prometheus to scrape the client (job client up)", target_up("client", CLIENT_METRICS_PORT),
             explain=bench.tail)
    bench.wait_finished()
    record = json.loads(results.read_text())
    assert record["status"] == "ok", record["error"]

    # Prometheus has the run's final values once it scraped the client after the run: the sent rows.
    sent = record["phases"]["send"]["rows"]
    wait_scraped(prometheus, "the run", f'sum(harness_rows_total{{run_id="{record["run_id"]}", phase="send"}})', sent)
    # And QuestDB's after it applied every row (a fresh server: its applied-rows counter is this run's).
    applied = "questdb_wal_apply_written_rows_total"
    wait_for(f"Prometheus to scrape QuestDB after the run ({applied} >= {sent})",
             lambda: any(value >= sent for value in scalar_values(prometheus.query(applied))))
    query_record, query_started = _query_run(workdir, prometheus, target_up, request)
    read_record, read_started = _read_run(workdir, prometheus, target_up, request)
    open_loop_record, open_loop_started = _open_loop_run(workdir, prometheus, target_up, request)
    yield Stack(prometheus, questdb, record, bench.started, output, query_record, query_started, read_record,
                read_started, open_loop_record, open_loop_started)


def _open_loop_run(workdir: Path, prometheus: Prometheus, target_up, request) -> tuple[dict, float]:
    """A real open-loop `bench --rate` with --metrics-port into a table of its own, over HTTP (acknowledged),
    the freshness probe counting, the query run's queries beside it: it sends for seconds on its schedule, so
    Prometheus scrapes its latencies and backlog while they move."""
    output, results = workdir / "open-loop.out", workdir / "open-loop.json"
    run = LingeringRun("the open-loop run",
                       [sys.executable, "-m", "harness", "bench", "--send", "--rate", "20000", "--duration", "6s",
                        "--worker-chunk-row-count", "2000", "--transport", "http", "--table", "open_loop",
                        "--scale", str(SCALE), "--seed", str(SEED), "--host", "127.0.0.1",
                        "--ilp-port", str(QUESTDB_PORTS["ilp_port"]), "--http-port", str(QUESTDB_PORTS["http_port"]),
                        "--pg-port", str(QUESTDB_PORTS["pg_port"]), "--server-metrics-port",
                        str(QUESTDB_PORTS["min_port"]), "--queries", str(workdir / "queries.jsonl"), "--query-rate",
                        "5", "--reporting-period", "0", "--results", str(results),
                        "--metrics-port", str(OPEN_LOOP_METRICS_PORT), "--metrics-linger", str(LINGER_SECONDS)],
                       output, OPEN_LOOP_METRICS_PORT, request)
    record = _finished(run, results, prometheus, target_up, OPEN_LOOP_METRICS_PORT)
    # Six seconds at 20,000 rows/s are 120,000 rows; a loaded machine may leave some unsent at the end (said, not
    # failed): what Prometheus must show is what went out.
    step = record["open_loop"]["steps"][0]
    assert record["status"] == "ok" and step["rows"] > 0, record["error"]
    assert step["rows"] + step["unsent_rows"] == 120_000
    chunks = record["open_loop"]["steps"][0]["chunks"]
    wait_scraped(prometheus, "the open-loop run", f'sum(harness_open_loop_latency_seconds_count{{run_id='
                 f'"{record["run_id"]}", figure="freshness"}})', chunks)
    time.sleep(2)  # as for the query run: a range query shows the last rate only after the final scrape
    return record, run.started


def _finished(run: LingeringRun, results: Path, prometheus: Prometheus, target_up, port: int) -> dict:
    """Once Prometheus scrapes ``run`` (job client up on ``port``) and it has finished: its record."""
    wait_for(f"Prometheus to scrape {run.what} (job client up)", target_up("client", port), explain=run.tail)
    run.wait_finished()
    return json.loads(results.read_text())


def _read_run(workdir: Path, prometheus: Prometheus, target_up, request) -> tuple[dict, float]:
    """A real `read` with --metrics-port of the loaded table, asyncpg, two workers, small DataFrames: it reads
    for seconds, so Prometheus scrapes its rows while they grow."""
    output, results = workdir / "read.out", workdir / "read.json"
    run = LingeringRun("the read run",
                       [sys.executable, "-m", "harness", "read", "--protocol", "asyncpg", "--host", "127.0.0.1",
                        "--pg-port", str(QUESTDB_PORTS["pg_port"]), "--http-port", str(QUESTDB_PORTS["http_port"]),
                        "--server-metrics-port", str(QUESTDB_PORTS["min_port"]), "--workers", "2", "--chunk-rows",
                        str(READ_CHUNK_ROWS), "--reporting-period", "0", "--results", str(results),
                        "--metrics-port", str(READ_METRICS_PORT), "--metrics-linger", str(LINGER_SECONDS)],
                       output, READ_METRICS_PORT, request)
    record = _finished(run, results, prometheus, target_up, READ_METRICS_PORT)
    assert record["status"] == "ok" and record["phases"]["read"]["rows"] == ROWS, record["error"]
    wait_scraped(prometheus, "the read run", f'sum(harness_rows_total{{run_id="{record["run_id"]}", phase="read"}})',
                 ROWS)
    time.sleep(2)  # as for the query run: a range query shows the last rate only after the final scrape
    return record, run.started


def _query_run(workdir: Path, prometheus: Prometheus, target_up, request) -> tuple[dict, float]:
    """A real `queries run` with --metrics-port on the loaded table: TSBS's queries of the bench run's data
    set (`queries generate`, QUERIES_PER_TYPE of each type) and one the server rejects. It reads them from a
    FIFO, written only once Prometheus has scraped the run's zero series: rate() counts no increase that
    happens before a series' first sample, and a quick run could otherwise end before its first scrape."""
    queries = workdir / "queries.jsonl"
    generated = subprocess.run([sys.executable, "-m", "harness", "queries", "generate", "--seed", str(SEED),
                                "--scale", str(SCALE), "--queries", str(QUERIES_PER_TYPE), "--query-type", "all",
                                "--file", str(queries)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert generated.returncode == 0, generated.stderr
    fifo = workdir / "queries.fifo"
    os.mkfifo(fifo)
    output, results = workdir / "queries.out", workdir / "queries.json"
    run = LingeringRun("the query run",
                       [sys.executable, "-m", "harness", "queries", "run", str(fifo), "--host", "127.0.0.1",
                        "--pg-port", str(QUESTDB_PORTS["pg_port"]), "--http-port", str(QUESTDB_PORTS["http_port"]),
                        "--workers", "1", "--reporting-period", "0", "--results", str(results),
                        "--metrics-port", str(QUERY_METRICS_PORT), "--metrics-linger", str(LINGER_SECONDS)],
                       output, QUERY_METRICS_PORT, request)

    def zeros_scraped():
        run.alive()
        return target_up("client", QUERY_METRICS_PORT)() and prometheus.query(
            'harness_query_duration_seconds_count{query_type="lastpoint"}')["data"]["result"]

    wait_for("Prometheus to scrape the query run's zero series", zeros_scraped, explain=run.tail)

    def reader_waiting():
        run.alive()
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: nobody has opened it for reading yet
                raise
            return None

    descriptor = wait_for("the query run to open its query file", reader_waiting, explain=run.tail)
    os.set_blocking(descriptor, True)
    with os.fdopen(descriptor, "w") as writer:
        writer.write(queries.read_text() + json.dumps(REJECTED) + "\n")

    run.wait_finished()
    record = json.loads(results.read_text())
    # The rejected query fails the run (exit 1 once it stops lingering); everything else answered.
    assert record["status"] == "failed" and record["queries"]["failures"] == {"lastpoint": {"rejected": 1}}, (
        record["error"], record["queries"]["failures"])
    counted = record["queries"]["statistics"]["all queries"]["count"]
    assert counted == record["parameters"]["query_count"] - 1 > 0
    wait_scraped(prometheus, "the query run", f'sum(harness_query_duration_seconds_count{{run_id="{record["run_id"]}"}})',
                 counted)
    # The whole run may fall between two scrapes: a range query (1 s steps up to now) shows its rate only
    # at steps after the final scrape, so give it two.
    time.sleep(2)
    return record, run.started


def scalar_values(response: dict) -> list[float]:
    """Every sample value of an instant (vector/scalar) or range (matrix) query result."""
    data = response["data"]
    if data["resultType"] == "scalar":
        return [float(data["result"][1])]
    values = []
    for series in data["result"]:
        if "value" in series:
            values.append(float(series["value"][1]))
        values.extend(float(point[1]) for point in series.get("values", []))
    return values


def evaluate(prometheus: Prometheus, expressions: list[tuple[str, str, str]], run_id: str, start: float,
             end: float) -> list[str]:
    """Run every (title, refId, expr) as Grafana would; return one line per query that shows nothing."""
    problems = []
    for title, ref, expr in expressions:
        promql = substitute(expr, run_id)
        where = f"panel {title!r} query {ref}: {promql}"
        instant = prometheus.query(promql, at=end)
        if instant.get("status") != "success":
            problems.append(f"{where}: {instant.get('errorType')}: {instant.get('error')}")
            continue
        if not instant["data"]["result"]:
            problems.append(f"{where}: no data (a metric or label nobody exports?)")
            continue
        graph = prometheus.query_range(promql, start, end)
        values = [value for value in scalar_values(graph) if not math.isnan(value)]
        if not values:
            problems.append(f"{where}: only NaN over the run")
        elif any(metric in promql for metric in MOVING_METRICS) and not any(value > 0 for value in values):
            problems.append(f"{where}: only zeros over the run, though its metric moves during every send")
    return problems


def test_prometheus_scrapes_every_target(stack):
    targets = stack.prometheus.targets()
    expected = (("client", CLIENT_METRICS_PORT), ("client", QUERY_METRICS_PORT), ("client", READ_METRICS_PORT),
                ("client", OPEN_LOOP_METRICS_PORT), ("questdb", QUESTDB_PORTS["min_port"]))
    assert set(targets) == {(job, f"127.0.0.1:{port}") for job, port in expected}
    for job, port in expected:
        target = targets[(job, f"127.0.0.1:{port}")]
        assert target["health"] == "up", target
        assert target["scrapeUrl"] == f"http://127.0.0.1:{port}/metrics"
        assert target["scrapeInterval"] == "1s"


def test_prometheus_agrees_with_the_results_json(stack):
    record = stack.record
    for phase in ("serialize", "send"):
        for metric, key in (("harness_rows_total", "rows"), ("harness_ilp_bytes_total", "bytes")):
            result = stack.prometheus.query(f'sum({metric}{{run_id="{record["run_id"]}", phase="{phase}"}})')
            assert float(result["data"]["result"][0]["value"][1]) == record["phases"][phase][key], (metric, phase)
    flushes = stack.prometheus.query(f'sum(harness_flushes_total{{run_id="{record["run_id"]}"}})')
    assert float(flushes["data"]["result"][0]["value"][1]) == record["phases"]["send"]["flushes"]
    # QuestDB received every byte the client sent (it was idle before: a fresh server of this test).
    received = stack.prometheus.query("questdb_line_tcp_recv_bytes")
    assert float(received["data"]["result"][0]["value"][1]) >= record["phases"]["send"]["bytes"] * 0.99
    workers = stack.prometheus.query(f'count(harness_rows_total{{run_id="{record["run_id"]}", phase="send"}} > 0)')
    assert float(workers["data"]["result"][0]["value"][1]) == WORKERS


def test_prometheus_agrees_with_the_query_results_json(stack):
    """Per query type, the histogram's count is the record's count, and the failures are the record's."""
    record = stack.query_record
    run_id = record["run_id"]
    counts = stack.prometheus.query(f'sum by (query_type) (harness_query_duration_seconds_count{{run_id="{run_id}"}})')
    scraped = {series["metric"]["query_type"]: float(series["value"][1]) for series in counts["data"]["result"]}
    statistics = record["queries"]["statistics"]
    assert {name: count for name, count in scraped.items() if count} == {
        name: figures["count"] for name, figures in statistics.items() if name != "all queries"}
    failures = stack.prometheus.query(f'harness_query_failures_total{{run_id="{run_id}"}} > 0')
    assert {(series["metric"]["query_type"], series["metric"]["kind"]): float(series["value"][1])
            for series in failures["data"]["result"]} == {("lastpoint", "rejected"): 1.0}
    phase = stack.prometheus.query(f'harness_phase{{run_id="{run_id}"}} == 1')
    assert [series["metric"]["phase"] for series in phase["data"]["result"]] == ["failed"]  # the rejected query


def test_a_run_exports_only_what_it_does(stack):
    """A query run has no ingest series (no flat zero lines in the ingest panels), a read run no flush
    series, an ingest run no query series."""
    def series(promql: str) -> list:
        answer = stack.prometheus.get("/api/v1/query", query=f"last_over_time({promql}[1h])")
        assert answer["status"] == "success"
        return answer["data"]["result"]

    queries, read, bench = (stack.query_record["run_id"], stack.read_record["run_id"], stack.record["run_id"])
    for name in ("harness_rows_total", "harness_ilp_bytes_total", "harness_flushes_total",
                 "harness_flush_duration_seconds_count"):
        assert series(f'{name}{{run_id="{queries}"}}') == [], name
    assert series(f'harness_flushes_total{{run_id="{read}"}}') == []
    assert series(f'harness_rows_total{{run_id="{read}", phase="read"}}')
    assert series(f'harness_flushes_total{{run_id="{bench}"}}')
    assert series(f'harness_query_duration_seconds_count{{run_id="{bench}"}}') == []
    # A closed-loop run has no open-loop series; an open-loop run has them.
    assert series(f'harness_open_loop_latency_seconds_count{{run_id="{bench}"}}') == []
    assert series(f'harness_open_loop_latency_seconds_count{{run_id="{stack.open_loop_record["run_id"]}"}}')


def test_run_variable_lists_the_runs_newest_first(stack):
    """The dashboard's `run` variable, as Grafana asks it (query_result's PromQL, the run id taken by its
    regex): every run of the stack, newest first, so the dashboard opens on the latest (the open-loop run,
    started last)."""
    variable = next(v for v in load_dashboard()["templating"]["list"] if v["name"] == "run")
    promql = substitute(variable["definition"].removeprefix("query_result(").removesuffix(")"), "unused")
    answer = stack.prometheus.get("/api/v1/query", query=promql)
    assert answer["status"] == "success"
    pattern = re.compile(variable["regex"].strip("/"))
    # Grafana matches the regex against each series as Prometheus writes it: {run_id="..."}.
    listed = [pattern.search("{" + ",".join(f'{name}="{value}"' for name, value in result["metric"].items())
                             + "}").group(1) for result in answer["data"]["result"]]
    starts = [float(result["value"][1]) for result in answer["data"]["result"]]
    assert starts == sorted(starts, reverse=True)
    runs = [stack.record["run_id"], stack.query_record["run_id"], stack.read_record["run_id"],
            stack.open_loop_record["run_id"]]
    assert set(runs) <= set(listed)
    assert [run for run in listed if run in runs] == runs[::-1]  # started bench, queries, read, open loop


def panels_per_run(stack: Stack, dashboard: dict) -> list[tuple[dict, float, list[tuple[str, str, str]]]]:
    """Each run of the stack with the panel queries that are for it, (record, started, expressions): every
    panel but the query, read and open-loop rows' for the bench run; the query benchmark's row, and the Run
    row (a query run is listed in the run variable too), for the query run; the read row, and the Run row,
    for the read run; the open-loop row, and the Run row, for the open-loop run. tests/grafana_check.py asks
    the same of Grafana."""
    rows = panels_by_row(dashboard)
    query_panels, read_panels, open_loop_panels = rows.pop(QUERIES_ROW), rows.pop(READ_ROW), rows.pop(OPEN_LOOP_ROW)
    return [(stack.record, stack.run_started,
             panel_expressions(dashboard, [panel for panels in rows.values() for panel in panels])),
            (stack.query_record, stack.query_started, panel_expressions(dashboard, rows["Run"] + query_panels)),
            (stack.read_record, stack.read_started, panel_expressions(dashboard, rows["Run"] + read_panels)),
            (stack.open_loop_record, stack.open_loop_started,
             panel_expressions(dashboard, rows["Run"] + open_loop_panels))]


def test_every_panel_query_returns_data(stack):
    """Every panel's queries against the run they are for (panels_per_run)."""
    dashboard = load_dashboard()
    assert len(panel_expressions(dashboard)) >= 20
    now = time.time()
    problems = []
    for record, started, expressions in panels_per_run(stack, dashboard):
        problems += evaluate(stack.prometheus, expressions, record["run_id"], started - 2, now)
    assert not problems, "\n".join(problems)


def test_a_panel_querying_an_unexported_metric_fails(stack):
    """The check above can fail: a misspelt QuestDB metric, an unknown harness metric, a wrong label value
    and a syntax error are each reported, while a correct query of the same run is not."""
    bad = [("typo", "A", 'rate(questdb_line_tcp_recv_byte{job="questdb"}[$__rate_interval])'),
           ("unknown", "A", 'sum(rate(harness_rows_sent_total{run_id="$run"}[$__rate_interval]))'),
           ("label", "A", 'sum(rate(harness_rows_total{run_id="$run", phase="sent"}[$__rate_interval]))'),
           ("syntax", "A", 'sum(rate(harness_rows_total{run_id="$run"}[$__rate_interval])')]
    good = [("good", "A", 'sum(rate(harness_rows_total{run_id="$run"}[$__rate_interval]))')]
    problems = evaluate(stack.prometheus, bad + good, stack.record["run_id"], stack.run_started - 2, time.time())
    assert [problem.split("'")[1] for problem in problems] == ["typo", "unknown", "label", "syntax"], problems
    # Another run id (a stale selection in the run variable) shows nothing either.
    assert evaluate(stack.prometheus, good, "000000000000", stack.run_started - 2, time.time())
    # A query rate shows for the query run and not for the bench run, which exports no query series.
    rate = [("queries", "A", 'sum(rate(harness_query_duration_seconds_count{run_id="$run"}[$__rate_interval]))')]
    assert not evaluate(stack.prometheus, rate, stack.query_record["run_id"], stack.query_started - 2, time.time())
    assert evaluate(stack.prometheus, rate, stack.record["run_id"], stack.run_started - 2, time.time())
