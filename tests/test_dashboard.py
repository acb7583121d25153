"""Structural checks of the Grafana provisioning and dashboard, and of conf/prometheus.yml.

Grafana cannot run here; these check what Grafana would read: the data source (fixed uid), the dashboard
provider (the path Compose mounts the dashboards at), and grafana/dashboards/harness.json (valid JSON,
every panel on the provisioned data source, unique ids and titles, the `run` variable, queries that use
Grafana's interval variables). tests/test_prometheus_panels.py runs every query of the dashboard against
a real Prometheus; the helpers that extract and substitute them live here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from prerequisites import require

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "grafana" / "dashboards" / "harness.json"
DATASOURCES_DIR = ROOT / "grafana" / "provisioning" / "datasources"
PROVIDERS_DIR = ROOT / "grafana" / "provisioning" / "dashboards"
PROMETHEUS_CONF = ROOT / "conf" / "prometheus.yml"
COMPOSE_FILE = ROOT / "compose.yaml"

# Where Compose mounts things (compose.yaml, service grafana and prometheus).
GRAFANA_PROVISIONING_MOUNT = "/etc/grafana/provisioning"
GRAFANA_DASHBOARDS_MOUNT = "/var/lib/grafana/dashboards"
PROMETHEUS_CONF_MOUNT = "/etc/prometheus/prometheus.yml"

# What Grafana substitutes, for the dashboard's default view (last 15 minutes, ~1000 points, data source
# timeInterval 1s): $__interval = 1s, $__rate_interval = max($__interval + scrape, 4 x scrape) = 4s.
GRAFANA_VARIABLES = {"__rate_interval": "4s", "__interval": "1s", "__range": "15m"}


# --- helpers (also used by test_prometheus_panels.py) ---------------------------------------------------


def load_dashboard(path: Path = DASHBOARD) -> dict:
    return json.loads(path.read_text())


def iter_panels(panels: list) -> list[dict]:
    """Every panel, rows' nested panels included."""
    found = []
    for panel in panels:
        found.append(panel)
        found.extend(iter_panels(panel.get("panels", [])))
    return found


def query_panels(dashboard: dict) -> list[dict]:
    """The panels that query a data source (rows only group)."""
    return [panel for panel in iter_panels(dashboard["panels"]) if panel.get("type") != "row"]


def panel_expressions(dashboard: dict, panels: list[dict] | None = None) -> list[tuple[str, str, str]]:
    """(panel title, refId, PromQL) of every query of every panel (or of ``panels``)."""
    return [(panel["title"], target.get("refId", "?"), target.get("expr", ""))
            for panel in (query_panels(dashboard) if panels is None else panels)
            for target in panel.get("targets", [])]


# The row of the query benchmark's panels (a `queries run`'s metrics; the other rows show a `bench` run's).
QUERIES_ROW = "Queries (harness queries run)"
READ_ROW = "Read (harness read)"
OPEN_LOOP_ROW = "Open loop (bench --rate)"


def panels_by_row(dashboard: dict) -> dict[str, list[dict]]:
    """Each row's title and the query panels under it (the dashboard's rows are expanded: a panel belongs to
    the last row above it)."""
    rows: dict[str, list[dict]] = {}
    current = None
    for panel in sorted(iter_panels(dashboard["panels"]), key=lambda p: (p["gridPos"]["y"], p["gridPos"]["x"])):
        if panel.get("type") == "row":
            current = panel["title"]
            rows[current] = []
        else:
            assert current is not None, f"panel {panel['title']!r} is above every row"
            rows[current].append(panel)
    return rows


def substitute(expr: str, run_id: str, variables: dict | None = None) -> str:
    """The query Grafana sends: $run and Grafana's interval variables replaced (also ${name} forms)."""
    values = {**GRAFANA_VARIABLES, **(variables or {}), "run": run_id}

    def replace(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            raise KeyError(f"unknown dashboard variable ${name} in {expr!r}")
        return values[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", replace, expr)


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing duplicate keys (which YAML would resolve silently to the last one)."""

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(key_node, deep=deep) for key_node, _ in node.value]
        duplicates = sorted({key for key in keys if keys.count(key) > 1}, key=str)
        if duplicates:
            raise ValueError(f"{node.start_mark}: duplicate keys {duplicates}")
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: Path):
    return yaml.load(path.read_text(), Loader=_StrictLoader)


def provisioned_datasources() -> list[dict]:
    sources = []
    for path in sorted(DATASOURCES_DIR.glob("*.y*ml")):
        document = load_yaml(path)
        assert document["apiVersion"] == 1, path
        sources.extend(document["datasources"])
    return sources


def prometheus_datasource_uid() -> str:
    (source,) = [source for source in provisioned_datasources() if source["type"] == "prometheus"]
    return source["uid"]


# --- the provisioning -----------------------------------------------------------------------------------


def test_datasource_is_the_compose_prometheus_with_a_fixed_uid():
    sources = provisioned_datasources()
    assert len(sources) == 1, sources
    (source,) = sources
    assert source["type"] == "prometheus"
    assert source["uid"] and re.fullmatch(r"[A-Za-z0-9_-]{1,40}", source["uid"]), source["uid"]
    assert source["url"] == "http://prometheus:9090"  # Compose service `prometheus`, its default port
    assert source["access"] == "proxy"  # the Grafana server asks Prometheus, not the viewer's browser
    assert source.get("isDefault") is True
    # The scrape interval, so that $__rate_interval spans at least 4 scrapes.
    assert source["jsonData"]["timeInterval"] == scrape_interval()


def test_dashboard_provider_reads_the_compose_mount():
    providers = []
    for path in sorted(PROVIDERS_DIR.glob("*.y*ml")):
        document = load_yaml(path)
        assert document["apiVersion"] == 1, path
        providers.extend(document["providers"])
    assert len(providers) == 1, providers
    (provider,) = providers
    assert provider["type"] == "file"
    assert provider["options"]["path"] == GRAFANA_DASHBOARDS_MOUNT
    # Compose mounts these two folders under /etc/grafana/provisioning, where Grafana reads them.
    assert DATASOURCES_DIR.parent.name == "provisioning" and PROVIDERS_DIR.parent == DATASOURCES_DIR.parent
    assert DASHBOARD.parent.name == "dashboards" and DASHBOARD.parent.parent == ROOT / "grafana"


def compose_config() -> dict:
    require("compose")
    result = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE_FILE), "--profile", "client", "config", "--format", "json"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={"GRAFANA_ADMIN_PASSWORD": "a-test-password", **os.environ})  # make generates one
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.docker
def test_compose_mounts_match_the_provisioning_paths():
    services = compose_config()["services"]
    grafana = {volume["target"]: volume.get("source") for volume in services["grafana"]["volumes"]}
    # Each of our provisioning folders on its own: the image's plugins/ and alerting/ stay visible (a mount of
    # the whole folder hides them, and Grafana logs a provisioning error for each at every start).
    assert GRAFANA_PROVISIONING_MOUNT not in grafana
    assert Path(grafana[f"{GRAFANA_PROVISIONING_MOUNT}/datasources"]) == DATASOURCES_DIR
    assert Path(grafana[f"{GRAFANA_PROVISIONING_MOUNT}/dashboards"]) == PROVIDERS_DIR
    assert Path(grafana[GRAFANA_DASHBOARDS_MOUNT]) == DASHBOARD.parent
    prometheus = {volume["target"]: volume.get("source") for volume in services["prometheus"]["volumes"]}
    assert Path(prometheus[PROMETHEUS_CONF_MOUNT]) == PROMETHEUS_CONF
    # The data source URL and the scrape targets name Compose services.
    assert {"prometheus", "questdb", "client", "grafana"} <= set(services)
    assert "9464" in [str(port) for port in services["client"].get("expose", [])]
    environment = services["grafana"].get("environment", {})
    assert environment.get("GF_AUTH_ANONYMOUS_ENABLED") == "true"
    assert "GF_SECURITY_ADMIN_PASSWORD" in environment
    assert all(port.get("host_ip") == "127.0.0.1" for port in services["grafana"].get("ports", []))


# --- conf/prometheus.yml --------------------------------------------------------------------------------


def scrape_interval() -> str:
    return load_yaml(PROMETHEUS_CONF)["global"]["scrape_interval"]


def scrape_jobs() -> dict[str, dict]:
    return {job["job_name"]: job for job in load_yaml(PROMETHEUS_CONF)["scrape_configs"]}


def test_prometheus_scrapes_the_client_and_questdb_every_second():
    assert scrape_interval() == "1s"
    jobs = scrape_jobs()
    assert set(jobs) == {"client", "questdb"}
    for job in jobs.values():
        assert job.get("scrape_interval", "1s") == "1s"
        assert job.get("metrics_path", "/metrics") == "/metrics"
    assert [t for config in jobs["questdb"]["static_configs"] for t in config["targets"]] == ["questdb:9003"]
    # Every client container on the network, however many a scale-out run starts: found by DNS, not listed.
    assert "static_configs" not in jobs["client"]
    assert jobs["client"]["dns_sd_configs"] == [{"names": ["client"], "type": "A", "port": 9464,
                                                 "refresh_interval": "1s"}]


def test_promtool_accepts_the_prometheus_configuration():
    require("promtool")
    result = subprocess.run(["promtool", "check", "config", str(PROMETHEUS_CONF)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


def test_promtool_rejects_a_broken_configuration(tmp_path):
    """The check above can fail: promtool refuses a scrape timeout longer than the interval."""
    require("promtool")
    broken = tmp_path / "prometheus.yml"
    broken.write_text(PROMETHEUS_CONF.read_text().replace("scrape_timeout: 1s", "scrape_timeout: 5s"))
    assert broken.read_text() != PROMETHEUS_CONF.read_text()
    result = subprocess.run(["promtool", "check", "config", str(broken)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


# --- the dashboard --------------------------------------------------------------------------------------


def test_dashboard_is_valid_json_with_a_fixed_uid():
    dashboard = load_dashboard()
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", dashboard["uid"])
    assert dashboard["title"]
    assert isinstance(dashboard["schemaVersion"], int)
    assert "id" not in dashboard or dashboard["id"] is None  # a provisioned dashboard gets its id from Grafana


def test_every_panel_uses_the_provisioned_datasource():
    uid = prometheus_datasource_uid()
    panels = query_panels(load_dashboard())
    assert panels
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": uid}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target.get("datasource", panel["datasource"]) == panel["datasource"], (panel["title"], target)


def test_panel_ids_titles_and_ref_ids_are_unique():
    panels = iter_panels(load_dashboard()["panels"])
    ids = [panel["id"] for panel in panels]
    titles = [panel["title"] for panel in panels]
    assert len(ids) == len(set(ids)), ids
    assert len(titles) == len(set(titles)), titles
    for panel in query_panels(load_dashboard()):
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


def test_panels_do_not_overlap():
    cells = {}
    for panel in iter_panels(load_dashboard()["panels"]):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]


RUN_VARIABLE_QUERY = ("query_result(sort_desc(max by (run_id) "
                      "(max_over_time(harness_run_start_time_seconds[$__range]))))")


def test_run_variable_lists_runs_newest_first():
    variables = {variable["name"]: variable for variable in load_dashboard()["templating"]["list"]}
    run = variables["run"]
    assert run["type"] == "query"
    assert run["datasource"] == {"type": "prometheus", "uid": prometheus_datasource_uid()}
    # The runs newest first (by their start time over the dashboard's range), kept in that order (sort 0), so
    # the dashboard opens on the run in progress, else the latest: Grafana selects the first value.
    # qryType 5: Grafana's classic query, its text run as written (query_result and the regex).
    assert run["query"]["qryType"] == 5 and run["definition"] == run["query"]["query"] == RUN_VARIABLE_QUERY
    assert run["regex"] == '/run_id="([^"]+)"/' and run["sort"] == 0 and not run.get("current")
    assert run["refresh"] == 2  # on time range change: new runs appear
    assert not run.get("multi") and not run.get("includeAll")  # the queries match run_id="$run" exactly


def test_queries_use_grafana_intervals_and_the_run_variable():
    expressions = panel_expressions(load_dashboard())
    assert len(expressions) >= 20
    for title, ref, expr in expressions:
        assert expr.strip(), (title, ref)
        # No fixed windows: rates over $__rate_interval (at least 4 scrapes at any zoom), lookbacks over $__range.
        for window in re.findall(r"\[([^\]]*)\]", expr):
            assert window in ("$__rate_interval", "$__range"), (title, ref, expr)
        for selector in re.findall(r"harness_\w+\{([^}]*)\}", expr):
            assert 'run_id="$run"' in selector, (title, ref, expr)
        assert not re.search(r"harness_\w+(?!\w|\{)", expr), (title, ref, expr)  # every harness_ series filtered
        substitute(expr, "0123456789ab")  # every variable is one Grafana (or the dashboard) defines


def test_the_dashboard_covers_the_issue():
    """Issue 5's panels: client rows/s and MiB/s in total and per worker, serialize vs send, flush latency
    quantiles, QuestDB ILP bytes/s and connections, committed and WAL-applied rows/s, WAL apply lag,
    QuestDB memory, errors."""
    expressions = " ".join(expr for _, _, expr in panel_expressions(load_dashboard()))
    titles = [panel["title"] for panel in query_panels(load_dashboard())]
    for metric in ("harness_rows_total", "harness_ilp_bytes_total", "harness_flush_duration_seconds_bucket",
                   "harness_errors_total", "questdb_line_tcp_recv_bytes", "questdb_line_tcp_connections",
                   "questdb_committed_rows_total", "questdb_wal_apply_written_rows_total",
                   "questdb_wal_apply_seq_txn", "questdb_wal_apply_writer_txn", "questdb_memory_rss"):
        assert metric in expressions, metric
    assert "sum by (phase, worker)" in expressions and "sum by (phase)" in expressions
    assert "histogram_quantile(0.99" in expressions
    for word in ("rows/s", "MiB/s", "per worker", "Flush latency", "ILP received", "connections", "committed",
                 "WAL-applied", "WAL apply lag", "memory", "Errors"):
        assert any(word in title for title in titles), word


def test_the_dashboard_covers_the_query_benchmark():
    """Issue 12's panels, in a row of their own: queries/s per query type, p50 and p99 latency per type from
    the histogram, failures per type and kind; every harness_query_ series is in that row and nowhere else
    (tests/test_prometheus_panels.py evaluates that row against a query run, the others against a bench run)."""
    dashboard = load_dashboard()
    rows = panels_by_row(dashboard)
    assert QUERIES_ROW in rows and rows[QUERIES_ROW]
    queries = panel_expressions(dashboard, rows[QUERIES_ROW])
    expressions = [re.sub(r"\s+", " ", expr) for _, _, expr in queries]
    assert all("harness_query_" in expr for expr in expressions), queries
    for title, _, expr in panel_expressions(dashboard):
        assert ("harness_query_" in expr) == (title in {title for title, _, _ in queries}), (title, expr)
    rate = 'sum by (query_type) (rate(harness_query_duration_seconds_count{run_id="$run"}[$__rate_interval]))'
    assert rate in expressions
    for quantile in ("0.5", "0.99"):
        assert (f"histogram_quantile({quantile}, sum by (le, query_type) (rate(harness_query_duration_seconds_bucket"
                f'{{run_id="$run"}}[$__rate_interval])))') in expressions, quantile
    assert any(expr.startswith('sum by (query_type, kind) (harness_query_failures_total{run_id="$run"})')
               for expr in expressions), expressions
    titles = [panel["title"] for panel in rows[QUERIES_ROW]]
    for word in ("Queries/s per query type", "p50", "p99", "failures"):
        assert any(word in title for title in titles), word


def test_the_dashboard_covers_the_read_benchmark():
    """Issue 22's row: rows/s into pandas in all and per worker, MiB/s received, seconds to the first rows, the
    client's CPU per million rows; every phase="read" series is in that row and nowhere else
    (tests/test_prometheus_panels.py evaluates it against a read run)."""
    dashboard = load_dashboard()
    rows = panels_by_row(dashboard)
    reads = panel_expressions(dashboard, rows[READ_ROW])
    expressions = " ".join(expr for _, _, expr in reads)
    for metric in ("harness_rows_total", "harness_ilp_bytes_total", "harness_read_first_rows_seconds",
                   "process_cpu_seconds_total"):
        assert metric in expressions, metric
    assert 'sum by (worker) (rate(harness_rows_total{run_id="$run", phase="read"}' in expressions
    for title, _, expr in panel_expressions(dashboard):
        assert ('phase="read"' in expr or "harness_read_" in expr) == (title in {title for title, _, _ in reads}), (
            title, expr)
    titles = [panel["title"] for panel in rows[READ_ROW]]
    for word in ("rows/s", "MiB/s", "first rows", "CPU seconds per million rows"):
        assert any(word in title for title in titles), word


def test_the_dashboard_covers_the_open_loop():
    """Issue 39's row: each latency from the intended time (p50, p99 by figure), the backlog, target against sent
    rows/s, and the queries beside the ingest; every harness_open_loop_ series is in that row and nowhere else
    (tests/test_prometheus_panels.py evaluates it against an open-loop run)."""
    dashboard = load_dashboard()
    rows = panels_by_row(dashboard)
    loop = panel_expressions(dashboard, rows[OPEN_LOOP_ROW])
    expressions = " ".join(expr for _, _, expr in loop)
    for metric in ("harness_open_loop_latency_seconds_bucket", "harness_open_loop_backlog_rows",
                   "harness_open_loop_target_rows_per_second", "harness_open_loop_query_latency_seconds_bucket"):
        assert metric in expressions, metric
    for title, _, expr in panel_expressions(dashboard):
        assert ("harness_open_loop_" in expr) == (title in {title for title, _, _ in loop}) or \
            "harness_open_loop_" not in expr, (title, expr)
    from harness.telemetry.metrics import OPEN_LOOP_FIGURES

    assert "sum by (le, figure)" in expressions and len(OPEN_LOOP_FIGURES) == 3


def test_panels_by_row_follows_the_layout():
    rows = panels_by_row(load_dashboard())
    assert list(rows) == ["Run", "Client (harness)", "QuestDB", QUERIES_ROW, READ_ROW, OPEN_LOOP_ROW]
    assert [panel["title"] for panel in rows["Run"]] == ["Run phase", "Run parameters"]
    assert sum(map(len, rows.values())) == len(query_panels(load_dashboard()))


def test_substitute_replaces_grafana_variables():
    assert substitute('rate(x{run_id="$run"}[$__rate_interval])', "abc") == 'rate(x{run_id="abc"}[4s])'
    assert substitute("last_over_time(x[${__range}])", "abc") == "last_over_time(x[15m])"
    with pytest.raises(KeyError):
        substitute("rate(x[$__unknown])", "abc")


def test_load_yaml_refuses_duplicate_keys(tmp_path):
    sample = tmp_path / "sample.yml"
    sample.write_text("a:\n  b: 1\n  c: 2\nd: [x, y]\n")
    assert load_yaml(sample) == {"a": {"b": 1, "c": 2}, "d": ["x", "y"]}
    sample.write_text("a:\n  b: 1\n  b: 2\n")
    with pytest.raises(ValueError, match="duplicate keys"):
        load_yaml(sample)
