"""The dashboard as a real Grafana serves it: provisioning, the data source, the `run` variable and every
panel's query through Grafana's own query API, against the same real Prometheus, QuestDB and runs as
tests/test_prometheus_panels.py (its ``stack`` fixture).

Not part of ``make test``: no Grafana image or package is reachable here, and a backend built from source
takes ~16 minutes (docs/dashboard.md says how). Run by ``make grafana-check GRAFANA_BIN=... GRAFANA_HOME=...``
(GRAFANA_HOME: the source tree, for its conf/defaults.ini). A backend without the frontend build serves no
UI, but provisions data sources and dashboards and answers ``POST /api/ds/query`` (Grafana's backend
interpolates $__rate_interval, $__interval and $__range itself; $run is the one variable substituted here)
and the data source's resource calls that the `run` variable's query_result makes.

The provisioning folder is laid out as the Compose stack leaves it in the image: the image's own folders
(its Dockerfile makes datasources, dashboards, notifiers, plugins, access-control and alerting), of which
Compose mounts ours over datasources/ and dashboards/ only; the data source's URL and the dashboards' path
are rewritten to this machine's.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml
from helpers import GRAFANA_PORT

from test_dashboard import (DATASOURCES_DIR, OPEN_LOOP_ROW, PROVIDERS_DIR, QUERIES_ROW, READ_ROW, ROOT,
                            load_dashboard, panel_expressions, panels_by_row, prometheus_datasource_uid, substitute)
from test_prometheus_panels import (PROMETHEUS_PORT, panels_per_run, stack,  # noqa: F401 (a fixture)
                                    stop_process, wait_for)

IMAGE_PROVISIONING_FOLDERS = ("datasources", "dashboards", "notifiers", "plugins", "access-control", "alerting")
# The series only a send exports: an ingest panel asked for a query run must draw nothing.
INGEST_METRICS = ("harness_rows_total", "harness_ilp_bytes_total", "harness_flushes_total",
                  "harness_flush_duration_seconds")
# Every check reads test_prometheus_panels' stack (its own QuestDB and Prometheus) through a real Grafana.
pytestmark = [pytest.mark.server, pytest.mark.slow]


def with_run(expr: str, run_id: str) -> str:
    """The panel's query with the dashboard's $run chosen; Grafana's own $__ variables are left to Grafana."""
    return re.sub(r"\$\{run\}|\$run\b", run_id, expr)


class Grafana:
    """A Grafana server process started from GRAFANA_BIN, its HTTP API as admin."""

    def __init__(self, workdir: Path, binary: Path, home: Path, port: int):
        self.url = f"http://127.0.0.1:{port}"
        self.log = workdir / "grafana.log"
        password = secrets.token_hex(12)
        self.auth = "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()
        provisioning = workdir / "provisioning"
        for folder in IMAGE_PROVISIONING_FOLDERS:
            (provisioning / folder).mkdir(parents=True)
        for source in DATASOURCES_DIR.glob("*.yml"):
            config = yaml.safe_load(source.read_text())
            for datasource in config["datasources"]:
                datasource["url"] = f"http://127.0.0.1:{PROMETHEUS_PORT}"
            (provisioning / "datasources" / source.name).write_text(yaml.safe_dump(config))
        for source in PROVIDERS_DIR.glob("*.yml"):
            config = yaml.safe_load(source.read_text())
            for provider in config["providers"]:
                provider["options"]["path"] = str(ROOT / "grafana" / "dashboards")
            (provisioning / "dashboards" / source.name).write_text(yaml.safe_dump(config))
        ini = workdir / "grafana.ini"
        ini.write_text(f"""
[server]
http_addr = 127.0.0.1
http_port = {port}
[paths]
data = {workdir / 'data'}
logs = {workdir / 'logs'}
plugins = {workdir / 'plugins'}
provisioning = {provisioning}
[security]
admin_user = admin
admin_password = {password}
[analytics]
reporting_enabled = false
check_for_updates = false
check_for_plugin_updates = false
[log]
mode = console
level = info
""")
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([str(binary), "server", "--homepath", str(home), "--config", str(ini)],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)

    def stop(self) -> None:
        stop_process(self.process)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else "(no log)"

    def request(self, path: str, body: dict | None = None, **params) -> tuple[int, dict]:
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, headers={"Authorization": self.auth,
                                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"Grafana exited ({self.process.returncode}): {self.log_tail()}")
        try:
            return self.request("/api/health")[1].get("database") == "ok"
        except OSError:
            return False


@pytest.fixture(scope="module")
def grafana(stack, tmp_path_factory, request):  # noqa: F811 (the fixture imported above)
    binary, home = os.environ.get("GRAFANA_BIN"), os.environ.get("GRAFANA_HOME")
    if not binary or not home:
        pytest.fail("GRAFANA_BIN and GRAFANA_HOME must name a Grafana server binary and its source tree "
                    "(make grafana-check GRAFANA_BIN=... GRAFANA_HOME=...)")
    server = Grafana(tmp_path_factory.mktemp("grafana"), Path(binary), Path(home), GRAFANA_PORT)
    request.addfinalizer(server.stop)
    wait_for("Grafana to answer /api/health", server.healthy, timeout=180, explain=server.log_tail)
    dashboard_uid = load_dashboard()["uid"]
    wait_for("Grafana to provision the dashboard",
             lambda: server.request(f"/api/dashboards/uid/{dashboard_uid}")[0] == 200, explain=server.log_tail)
    return server


def log_records(grafana: Grafana) -> list[dict[str, str]]:
    """Grafana's console log lines as key=value records."""
    pair = re.compile(r'(\w[\w.]*)=("(?:[^"\\]|\\.)*"|\S+)')
    return [{key: value.strip('"') for key, value in pair.findall(line)}
            for line in grafana.log.read_text(errors="replace").splitlines()]


def test_grafana_provisions_without_an_error(grafana):
    records = log_records(grafana)
    provisioning = [record for record in records if record.get("logger", "").startswith("provisioning")]
    assert provisioning, "no provisioning lines in Grafana's log: " + grafana.log_tail()
    errors = [record for record in provisioning if record.get("level") in ("error", "eror", "crit")]
    assert not errors, errors


def test_the_data_source_is_provisioned_and_healthy(grafana):
    uid = prometheus_datasource_uid()
    status, health = grafana.request(f"/api/datasources/uid/{uid}/health")
    assert status == 200 and health.get("status") == "OK", health


def test_the_dashboard_is_provisioned_as_the_file_says(grafana):
    dashboard = load_dashboard()
    status, served = grafana.request(f"/api/dashboards/uid/{dashboard['uid']}")
    assert status == 200
    assert served["meta"]["provisioned"] is True
    assert panel_expressions(served["dashboard"]) == panel_expressions(dashboard)


def test_the_run_variable_resolves_to_the_newest_run_through_grafana(grafana, stack):  # noqa: F811
    """The `run` variable's query_result, through the data source's resource API as Grafana's frontend asks
    it: the newest run (the stack's last, the open-loop run) comes first."""
    variable = next(v for v in load_dashboard()["templating"]["list"] if v["name"] == "run")
    promql = substitute(variable["definition"].removeprefix("query_result(").removesuffix(")"), "unused")
    status, answer = grafana.request(f"/api/datasources/uid/{prometheus_datasource_uid()}/resources/api/v1/query",
                                     query=promql, time=f"{time.time():.3f}")
    assert status == 200 and answer["status"] == "success", answer
    pattern = re.compile(variable["regex"].strip("/"))
    listed = [pattern.search("{" + ",".join(f'{k}="{v}"' for k, v in result["metric"].items()) + "}").group(1)
              for result in answer["data"]["result"]]
    newest = max(panels_per_run(stack, load_dashboard()), key=lambda run: run[1])[0]
    assert newest is stack.open_loop_record and listed[0] == newest["run_id"], listed


def ds_query(grafana: Grafana, expressions: list[tuple[str, str, str]], run_id: str, start: float,
             end: float) -> dict[str, int]:
    """Each (title, refId, expr) through POST /api/ds/query over [start, end]: the number of points it
    returned (0: nothing to draw), keyed by "title/refId"; an error fails the test."""
    uid = prometheus_datasource_uid()
    points = {}
    for title, ref, expr in expressions:
        body = {"from": str(int(start * 1000)), "to": str(int(end * 1000)),
                "queries": [{"refId": ref, "datasource": {"type": "prometheus", "uid": uid},
                             "expr": with_run(expr, run_id), "range": True, "instant": False,
                             "intervalMs": 1000, "maxDataPoints": 1000}]}
        status, answer = grafana.request("/api/ds/query", body)
        result = answer.get("results", {}).get(ref, {})
        assert status == 200 and "error" not in result, (title, ref, status, answer)
        points[f"{title}/{ref}"] = sum(len(frame["data"]["values"][-1]) for frame in result.get("frames", [])
                                       if frame.get("data", {}).get("values"))
    return points


def test_every_panel_draws_through_grafana(grafana, stack):  # noqa: F811
    """As tests/test_prometheus_panels.py's test_every_panel_query_returns_data, through Grafana: each row's
    queries against the run it is for (the same panels_per_run), the open-loop row's for the open-loop run."""
    now = time.time()
    empty = []
    for run, started, expressions in panels_per_run(stack, load_dashboard()):
        points = ds_query(grafana, expressions, run["run_id"], started - 2, now)
        empty += [name for name, count in points.items() if not count]
    assert not empty, empty


def test_a_query_run_draws_no_ingest_lines_through_grafana(grafana, stack):  # noqa: F811
    """The ingest panels (those of the send's series), asked for the query run: no series at all, not flat
    zero lines; asked for the bench run, each draws."""
    dashboard = load_dashboard()
    rows = panels_by_row(dashboard)
    panels = [panel for row, panels in rows.items() if row not in (QUERIES_ROW, READ_ROW, OPEN_LOOP_ROW)
              for panel in panels]
    ingest = [(title, ref, expr) for title, ref, expr in panel_expressions(dashboard, panels)
              if any(metric in expr for metric in INGEST_METRICS)]
    assert len(ingest) >= 3
    now = time.time()
    assert not any(ds_query(grafana, ingest, stack.query_record["run_id"], stack.query_started - 2, now).values())
    assert all(ds_query(grafana, ingest, stack.record["run_id"], stack.run_started - 2, now).values())
