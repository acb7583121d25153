"""Every query of the Grafana dashboard, run by a real Prometheus against a real benchmark run.

Starts Debian's Prometheus natively with the project's conf/prometheus.yml (only the two targets
rewritten to this test's ports), a native QuestDB with metrics on, and a real
``python -m harness bench --send --metrics-port ...`` against it; waits until Prometheus scrapes both
targets; then evaluates each PromQL expression of each panel of grafana/dashboards/harness.json
(Grafana's variables substituted as Grafana would) through Prometheus's HTTP API. Each must return data:
a panel that queries a metric nobody exports (a typo, a renamed QuestDB metric, a dropped label) fails.

Ports (this suite's 29xxx range, shifted by HARNESS_TEST_PORT_OFFSET): Prometheus 29090, QuestDB 29000/29009/28812/29003, client
metrics 29464.
"""

from __future__ import annotations

import json
import math
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
from conftest import PORT_OFFSET

from harness.native import NativeQuestDB, port_in_use
from test_dashboard import PROMETHEUS_CONF, ROOT, load_dashboard, panel_expressions, substitute

PROMETHEUS_PORT = 29090 + PORT_OFFSET
QUESTDB_PORTS = {name: port + PORT_OFFSET for name, port in
                 dict(http_port=29000, ilp_port=29009, pg_port=28812, min_port=29003).items()}
CLIENT_METRICS_PORT = 29464 + PORT_OFFSET
ROWS = 300_000
WORKERS = 2
# The client keeps serving its final values this long after the run; the checks happen meanwhile and the
# fixture stops it afterwards. Generous: a slow machine must not lose the client target mid-test.
LINGER_SECONDS = 120
WAIT_SECONDS = 60  # for each stage (target up, run finished, final scrape); a failure names the stage

# Metrics that move during any successful send: a panel querying them must show more than zeros.
MOVING_METRICS = ("harness_rows_total", "harness_ilp_bytes_total", "harness_flushes_total",
                  "harness_flush_duration_seconds_bucket", "harness_flush_duration_seconds_count",
                  "questdb_line_tcp_recv_bytes", "questdb_wal_written_rows_total", "questdb_committed_rows_total",
                  "questdb_wal_apply_written_rows_total", "process_cpu_seconds_total", "questdb_memory_rss")


class Prometheus:
    """A Prometheus server process and its HTTP API."""

    def __init__(self, workdir: Path, port: int, targets: dict[str, str]):
        self.url = f"http://127.0.0.1:{port}"
        self.workdir = workdir
        self.log = workdir / "prometheus.log"
        config = PROMETHEUS_CONF.read_text()
        for compose_target, test_target in targets.items():
            assert config.count(f'"{compose_target}"') == 1, f"{compose_target} is not a target of {PROMETHEUS_CONF}"
            config = config.replace(f'"{compose_target}"', f'"{test_target}"')
        self.config = workdir / "prometheus.yml"
        self.config.write_text(config)
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

    def targets(self) -> dict[str, dict]:
        return {target["labels"]["job"]: target for target in self.get("/api/v1/targets")["data"]["activeTargets"]}

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


@dataclass
class Stack:
    prometheus: Prometheus
    questdb: NativeQuestDB
    record: dict          # the bench run's results JSON
    run_started: float    # Unix time just before the bench process started
    bench_output: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory, request):
    workdir = tmp_path_factory.mktemp("prometheus-panels")
    # Prometheus first: it takes seconds to start scraping a target, during which QuestDB starts.
    prometheus = Prometheus(workdir, PROMETHEUS_PORT,
                            {"client:9464": f"127.0.0.1:{CLIENT_METRICS_PORT}",
                             "questdb:9003": f"127.0.0.1:{QUESTDB_PORTS['min_port']}"})
    request.addfinalizer(prometheus.stop)
    questdb = NativeQuestDB(workdir / "questdb-root", **QUESTDB_PORTS)
    request.addfinalizer(questdb.stop)
    questdb.start()

    def job_up(job: str):
        def check():
            if prometheus.process.poll() is not None:
                pytest.fail(f"Prometheus exited ({prometheus.process.returncode}): {prometheus.log_tail()}")
            if not prometheus.ready():
                return None
            target = prometheus.targets().get(job)
            return target if target and target["health"] == "up" else None
        return check

    wait_for("Prometheus to scrape QuestDB (job questdb up)", job_up("questdb"), explain=prometheus.log_tail)

    output = workdir / "bench.out"
    results = workdir / "run.json"
    command = [sys.executable, "-m", "harness", "bench", "--send", "--host", "127.0.0.1",
               "--ilp-port", str(QUESTDB_PORTS["ilp_port"]), "--http-port", str(QUESTDB_PORTS["http_port"]),
               "--row-count", str(ROWS), "--scale", "100", "--seed", "11", "--workers", str(WORKERS),
               "--worker-chunk-row-count", "5000", "--reporting-period", "0", "--results", str(results),
               "--metrics-port", str(CLIENT_METRICS_PORT), "--metrics-linger", str(LINGER_SECONDS)]
    if port_in_use(CLIENT_METRICS_PORT):
        pytest.fail(f"port {CLIENT_METRICS_PORT} is busy: the bench run could not serve its metrics")
    run_started = time.time()
    with open(output, "wb") as out:
        bench = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 cwd=ROOT, start_new_session=True)
    request.addfinalizer(lambda: stop_process(bench))

    def bench_output() -> str:
        return output.read_text(errors="replace")

    def finished():
        if bench.poll() is not None:
            pytest.fail(f"the bench run exited ({bench.returncode}) before lingering: {bench_output()[-3000:]}")
        return "Results:" in bench_output()

    wait_for("Prometheus to scrape the client (job client up)", job_up("client"),
             explain=lambda: bench_output()[-2000:])
    wait_for("the bench run to finish (its 'Results:' line)", finished, timeout=180,
             explain=lambda: bench_output()[-2000:])
    record = json.loads(results.read_text())
    assert record["status"] == "ok", record["error"]

    # Prometheus has the run's final values once it scraped the client after the run: the sent rows.
    sent = record["phases"]["send"]["rows"]
    query = f'sum(harness_rows_total{{run_id="{record["run_id"]}", phase="send"}})'

    def final_scrape():
        result = prometheus.query(query)["data"]["result"]
        return result and float(result[0]["value"][1]) == sent

    wait_for(f"Prometheus to scrape the run's final counters ({query} == {sent})", final_scrape)
    # And QuestDB's after it applied every row (a fresh server: its applied-rows counter is this run's).
    applied = "questdb_wal_apply_written_rows_total"
    wait_for(f"Prometheus to scrape QuestDB after the run ({applied} >= {sent})",
             lambda: any(value >= sent for value in scalar_values(prometheus.query(applied))))
    yield Stack(prometheus, questdb, record, run_started, output)


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


def test_prometheus_scrapes_both_targets(stack):
    targets = stack.prometheus.targets()
    assert set(targets) == {"client", "questdb"}
    for job, port in (("client", CLIENT_METRICS_PORT), ("questdb", QUESTDB_PORTS["min_port"])):
        assert targets[job]["health"] == "up", targets[job]
        assert targets[job]["scrapeUrl"] == f"http://127.0.0.1:{port}/metrics"
        assert targets[job]["scrapeInterval"] == "1s"


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


def test_run_variable_lists_the_run(stack):
    """The dashboard's `run` variable is label_values(harness_run_info, run_id): Grafana asks this."""
    variable = next(v for v in load_dashboard()["templating"]["list"] if v["name"] == "run")
    assert "harness_run_info" in json.dumps(variable["query"])
    answer = stack.prometheus.get("/api/v1/label/run_id/values", **{"match[]": "harness_run_info"})
    assert answer["status"] == "success"
    assert stack.record["run_id"] in answer["data"]


def test_every_panel_query_returns_data(stack):
    expressions = panel_expressions(load_dashboard())
    assert len(expressions) >= 20
    problems = evaluate(stack.prometheus, expressions, stack.record["run_id"], stack.run_started - 2, time.time())
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
