"""``queries run`` against a real QuestDB: a small data set loaded with ``bench --send``, all 16 query types
over PGWire and HTTP with two workers and ``--check`` (every answer equals the NumPy reference, the
record's counts add up), a changed row caught by ``--check``, and failures (server down, a bad file, a
rejected query) ending in one line and a record."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.errors import RunError, UsageError
from harness.commands import queries_run as runner
from harness.queries.clients import PgwireConnection
from harness.commands.queries_run import QueriesRunOptions, run_queries
from harness.queries.stats import QueryStats
from harness.report.html import write_report
from harness.report.tables import comparison_table
from harness.records.run_record import QueryCheck
from harness.records.store import load_results
from harness.commands.bench import run_bench
from harness.run.bench_options import BenchOptions
from harness.tsbs.query_types import QUERY_TYPES
from helpers import assert_one_line_error, free_port, run_cli

# 32 hosts over 25 hours, one epoch a minute: the smallest data set every query type runs on
# (cpu-max-all-32-24 wants 32 hosts and a 24-hour window), 48,000 rows.
DATA_SET = dict(seed=7, scale=32, timestamp_start="2016-01-01T00:00:00Z", timestamp_end="2016-01-02T01:00:00Z")
LOG_INTERVAL = "60s"
ROWS = 32 * 25 * 60
QUERIES_PER_TYPE = 2
LAST_EPOCH = "2016-01-02T00:59:00.000000Z"


@pytest.fixture(scope="module")
def loaded(questdb_server, tmp_path_factory):
    """The session's QuestDB with the data set in table cpu (sent by the benchmark itself)."""
    questdb_server.client.drop_table("cpu")
    results = tmp_path_factory.mktemp("load") / "load.json"
    record = run_bench(BenchOptions(send=True, transport="http", log_interval=LOG_INTERVAL, host=questdb_server.host,
                                    http_port=questdb_server.http_port, ilp_port=questdb_server.ilp_port,
                                    results=str(results), reporting_period=0, **DATA_SET),
                       out=open("/dev/null", "w"))
    assert record.validation.visible_rows == ROWS
    return questdb_server


def options(server, tmp_path: Path, **values) -> QueriesRunOptions:
    settings = dict(generate=True, queries=QUERIES_PER_TYPE, log_interval=LOG_INTERVAL, host=server.host,
                    http_port=server.http_port, pg_port=server.pg_port, results=str(tmp_path / "queries.json"),
                    reporting_period=0, **DATA_SET)
    settings.update(values)
    return QueriesRunOptions(**settings)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["pgwire", "http"])
def test_every_type_answers_as_the_reference(loaded, tmp_path, protocol, devnull):
    record = run_queries(options(loaded, tmp_path, protocol=protocol, workers=2, check=True),
                         out=devnull)
    assert record.status == "ok"
    total = len(QUERY_TYPES) * QUERIES_PER_TYPE
    assert record.queries.check == QueryCheck(checked=total, mismatches=0, first_mismatches=[])
    statistics = record.queries.statistics
    assert list(statistics) == [*QUERY_TYPES, "all queries"]
    assert all(statistics[query_type].count == QUERIES_PER_TYPE for query_type in QUERY_TYPES)
    overall = statistics["all queries"]
    assert overall.count == total == record.phases["queries"].rows
    assert overall.min_ms == min(figures.min_ms for figures in statistics.values())
    assert overall.sum_ms == pytest.approx(sum(statistics[query_type].sum_ms for query_type in QUERY_TYPES))
    for figures in statistics.values():
        assert figures.min_ms <= figures.median_ms <= figures.p90_ms <= figures.p99_9_ms <= figures.max_ms
    assert record.queries.failures == {}
    (written,) = load_results([record.path])
    assert written.kind == "queries" and written.queries == record.queries
    assert written.parameters["protocol"] == protocol and written.server["questdb_version"]


@pytest.mark.slow
def test_burn_in_max_queries_and_type_filter_count_right(loaded, tmp_path, devnull):
    record = run_queries(options(loaded, tmp_path, query_types="lastpoint,high-cpu-1", queries=5, burn_in=3,
                                 max_queries=9), out=devnull)
    statistics = record.queries.statistics
    # The file order is high-cpu-1's 5, then lastpoint's 5: 9 run, the first 3 not counted.
    assert {name: figures.count for name, figures in statistics.items()} == {
        "high-cpu-1": 2, "lastpoint": 4, "all queries": 6}
    table = comparison_table([record, record])
    assert "high-cpu-1" in table and "queries/s" in table



def test_the_overall_rate_counts_from_before_the_connections_as_tsbs_does(loaded, tmp_path, devnull):
    # TSBS's Overall query rate counts from its runner's start, its connections' set-up included; a type's
    # rate from its first query. With burn-in, the counted queries begin after the set-up.
    for burn_in in (0, 2):
        statistics = run_queries(options(loaded, tmp_path, query_types="lastpoint", queries=5, burn_in=burn_in),
                                 out=devnull).queries.statistics
        overall, lastpoint = statistics["all queries"], statistics["lastpoint"]
        assert overall.count == lastpoint.count == 5 - burn_in
        if burn_in:
            assert overall.seconds == lastpoint.seconds
        else:
            assert overall.seconds > lastpoint.seconds and overall.queries_per_second < lastpoint.queries_per_second



def test_the_queries_take_their_wire_form_before_the_clock_starts(loaded, tmp_path, devnull, monkeypatch):
    # From TSBS's text, as reading the query file is; TSBS's runner decodes its file on a thread of its own.
    made, passes = [], []
    wire = PgwireConnection.wire
    monkeypatch.setattr(PgwireConnection, "wire",
                        staticmethod(lambda query: made.append(time.perf_counter()) or wire(query)))

    class Recorded(QueryStats):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            passes.append(self)

    monkeypatch.setattr(runner, "QueryStats", Recorded)
    run_queries(options(loaded, tmp_path, query_types="lastpoint", queries=5), out=devnull)
    assert len(made) == 5 and len(passes) == 1 and max(made) < passes[0].started

def test_the_overall_span_begins_at_the_runs_start_where_one_is_given():
    stats = QueryStats()
    stats.add("lastpoint", "last", 11.0, 0.5, True)
    stats.add("lastpoint", "last", 11.5, 0.5, True)
    assert stats.summary()["all queries"].seconds == stats.summary()["lastpoint"].seconds == 1.0
    stats.started = 10.0
    assert stats.summary()["all queries"].seconds == 2.0 and stats.summary()["all queries"].queries_per_second == 1.0
    assert stats.summary()["lastpoint"].queries_per_second == 2.0

def _usage_user(server, epoch: str) -> float:
    result = server.client.exec(f"SELECT usage_user FROM cpu WHERE hostname = 'host_0' AND timestamp = '{epoch}'")
    return result["dataset"][0][0]


def _set_usage_user(server, epoch: str, value: float) -> None:
    server.client.exec(f"UPDATE cpu SET usage_user = {value!r} WHERE hostname = 'host_0' AND timestamp = '{epoch}'")
    deadline = time.monotonic() + 30
    while _usage_user(server, epoch) != value:  # a WAL table applies the update asynchronously
        assert time.monotonic() < deadline, "the UPDATE never became visible"
        time.sleep(0.05)


def test_a_changed_row_fails_the_check(loaded, tmp_path, devnull):
    original = _usage_user(loaded, LAST_EPOCH)
    _set_usage_user(loaded, LAST_EPOCH, original + 1.5)
    try:
        with pytest.raises(RunError, match=r"1 of 2 query answers differ from the reference \(the first: query "
                                           r"type lastpoint\)"):
            run_queries(options(loaded, tmp_path, query_types="lastpoint,high-cpu-1", queries=1, check=True),
                        out=devnull)
    finally:
        _set_usage_user(loaded, LAST_EPOCH, original)
    (record,) = load_results([tmp_path / "queries.json"])
    assert record.status == "failed" and record.queries.check.mismatches == 1
    assert "lastpoint" in record.queries.check.first_mismatches[0]
    assert repr(original + 1.5) in record.queries.check.first_mismatches[0]


def harness(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=300)




@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["pgwire", "http"])
def test_server_down_is_one_line_and_a_record(loaded, tmp_path, protocol):
    port = free_port()
    results = tmp_path / "down.json"
    ports = (["--pg-port", str(port), "--http-port", str(loaded.http_port)] if protocol == "pgwire" else
             ["--http-port", str(port)])
    result = harness("queries", "run", "--generate", "--queries", "1", "--seed", "7", "--host", "127.0.0.1",
                     "--protocol", protocol, *ports, "--results", str(results))
    assert_one_line_error(result, 1, f"127.0.0.1:{port}")
    (record,) = load_results([results])
    assert record.kind == "queries" and record.status == "failed" and f"127.0.0.1:{port}" in record.error


@pytest.mark.slow
def test_bad_file_is_one_line_and_a_record(loaded, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_type": "lastpoint"}\n')
    results = tmp_path / "bad.json"
    result = harness("queries", "run", str(bad), "--host", loaded.host, "--pg-port", str(loaded.pg_port),
                     "--http-port", str(loaded.http_port), "--results", str(results))
    assert_one_line_error(result, 2, "bad.jsonl:1", "missing label")
    assert load_results([results])[0].status == "failed"
    assert_one_line_error(harness("queries", "run", "--generate", "--query-types", "nope"), 2, "'nope'")
    assert_one_line_error(harness("queries", "run"), 2, "--generate")


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["pgwire", "http"])
def test_a_rejected_query_is_counted_and_the_others_run(loaded, tmp_path, protocol):
    lines = [{"query_type": "lastpoint", "label": "ok", "description": "d", "sql": "SELECT * FROM cpu latest by hostname",
              "params": None},
             {"query_type": "high-cpu-1", "label": "missing", "description": "d", "sql": "SELECT * FROM no_such_table",
              "params": None}] * 3
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = tmp_path / "mixed.json"
    result = harness("queries", "run", str(path), "--protocol", protocol, "--workers", "2", "--host", loaded.host,
                     "--pg-port", str(loaded.pg_port), "--http-port", str(loaded.http_port), "--results", str(results))
    assert_one_line_error(result, 1, "3 of 6 queries failed", "high-cpu-1: 3 rejected", "no_such_table")
    (record,) = load_results([results])
    assert record.queries.failures == {"high-cpu-1": {"rejected": 3}}
    assert record.queries.statistics["lastpoint"].count == 3


# A query that keeps one core busy for seconds (a sum over 500 million generated rows: about 3 s on the
# 2-core test machine, still over a second on a fast desktop), far above TIMEOUT; lastpoint over the data
# set takes milliseconds. Over PGWire QuestDB goes on computing a timed-out query until it ends (the
# runner drops that connection); over HTTP it stops when the connection closes.
SLOW_SQL = "SELECT sum(x) FROM long_sequence(500000000)"
TIMEOUT = "0.5"


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["pgwire", "http"])
def test_a_query_over_the_timeout_is_counted_as_a_timeout(loaded, tmp_path, protocol):
    """--timeout on a genuinely slow query: each expiry counted per type as kind timeout, the run goes on
    (the fast query after each still answers, over PGWire on a new connection), then one line, exit 1 and
    a record. Without a working timeout the slow queries would answer and the run end with exit 0."""
    slow = {"query_type": "high-cpu-all", "label": "slow", "description": "d", "sql": SLOW_SQL, "params": None}
    fast = {"query_type": "lastpoint", "label": "fast", "description": "d",
            "sql": "SELECT * FROM cpu latest by hostname", "params": None}
    path = tmp_path / "slow.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [slow, fast] * 2))
    results = tmp_path / "slow.json"
    result = harness("queries", "run", str(path), "--protocol", protocol, "--timeout", TIMEOUT, "--host",
                     loaded.host, "--pg-port", str(loaded.pg_port), "--http-port", str(loaded.http_port),
                     "--reporting-period", "0", "--results", str(results))
    assert_one_line_error(result, 1, "2 of 4 queries failed (high-cpu-all: 2 timeout)",
                    f"high-cpu-all: timeout: no answer within {TIMEOUT}s")
    (record,) = load_results([results])
    assert record.kind == "queries" and record.status == "failed"
    assert record.parameters["timeout"] == float(TIMEOUT) and record.parameters["protocol"] == protocol
    assert record.queries.failures == {"high-cpu-all": {"timeout": 2}}
    assert record.queries.failure_samples == [f"high-cpu-all: timeout: no answer within {TIMEOUT}s"] * 2
    # Only the answered queries are timed: a timed-out one has no latency.
    statistics = record.queries.statistics
    assert list(statistics) == ["lastpoint", "all queries"] and statistics["lastpoint"].count == 2
    assert statistics["lastpoint"].max_ms < float(TIMEOUT) * 1000
    assert record.phases["queries"].rows == 2
    assert "2 timeout" in record.error


@pytest.mark.slow
def test_under_load_runs_the_ingest_beside_the_queries(loaded, tmp_path, devnull):
    """Last in this file: it appends rows after the data set (the other tests' answers would change)."""
    load_rows = 32 * 600  # ten hours of the data set's hosts after its end
    out = io.StringIO()
    record = run_queries(options(loaded, tmp_path, query_types="single-groupby-1-1-1,double-groupby-1", queries=20,
                                 under_load=True, load_rows=load_rows, queries_only_after=True), out=out)
    under_load = record.queries.under_load
    assert under_load.status == "ok" and under_load.rows == load_rows
    assert record.queries.statistics["all queries"].count == 40
    # The at-rest baseline: the same 40 queries once the ingest was over, recorded and compared per type.
    at_rest = record.queries.at_rest
    assert {name: figures.count for name, figures in at_rest.statistics.items()} == {
        "single-groupby-1-1-1": 20, "double-groupby-1": 20, "all queries": 40}
    assert at_rest.failures == {} and record.phases["queries_at_rest"].rows == 40
    report = out.getvalue()
    slowdown = report[report.index("Slowdown under load"):].splitlines()
    assert [line.split()[0] for line in slowdown[2:5]] == ["single-groupby-1-1-1", "double-groupby-1", "all"]
    loaded_median = record.queries.statistics["double-groupby-1"].median_ms
    rest_median = at_rest.statistics["double-groupby-1"].median_ms
    assert f"{loaded_median / rest_median:5.2f}x" in slowdown[3]
    page = write_report([record], tmp_path / "report.html").read_text()
    assert "query latency under ingest load and at rest" in page and page.count("<svg") >= 2
    (ingest,) = load_results([under_load.results])
    assert ingest.kind == "bench" and ingest.validation.visible_rows == ROWS + load_rows
    assert ingest.parameters["timestamp_start"] == DATA_SET["timestamp_end"]
    assert loaded.client.count("cpu") == ROWS + load_rows
    with pytest.raises(Exception, match="--under-load"):
        run_queries(options(loaded, tmp_path, under_load=True, check=True), out=devnull)
    with pytest.raises(UsageError, match="--queries-only-after .* add --under-load"):
        run_queries(options(loaded, tmp_path, queries_only_after=True), out=devnull)


@pytest.mark.slow
def test_metrics_count_every_query_by_type(loaded, tmp_path):
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "queries", "run", "--generate", "--queries", "3", "--query-types",
         "lastpoint,single-groupby-1-1-1", "--seed", "7", "--scale", "32", "--timestamp-end",
         DATA_SET["timestamp_end"], "--host", loaded.host, "--pg-port", str(loaded.pg_port), "--http-port",
         str(loaded.http_port), "--metrics-port", str(port), "--metrics-linger", "30",
         "--results", str(tmp_path / "metrics.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        samples, deadline = {}, time.monotonic() + 120
        while samples.get(("harness_phase", "done")) != 1.0:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, samples
            time.sleep(0.2)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
                    text = response.read().decode()
            except OSError:
                continue
            families = list(text_string_to_metric_families(text))
            samples = {(sample.name, sample.labels.get("phase") or sample.labels.get("query_type")): sample.value
                       for family in families for sample in family.samples}
            failures = {(sample.labels["query_type"], sample.labels["kind"]): sample.value
                        for family in families for sample in family.samples
                        if sample.name == "harness_query_failures_total"}
        assert samples[("harness_query_duration_seconds_count", "lastpoint")] == 3
        assert samples[("harness_query_duration_seconds_count", "single-groupby-1-1-1")] == 3
        assert samples[("harness_query_duration_seconds_count", "high-cpu-1")] == 0
        # Every type's failure series exists at 0 (both kinds), and the run's phase went queries -> done.
        assert failures == {(query_type, kind): 0.0 for query_type in QUERY_TYPES for kind in ("rejected", "timeout")}
        assert samples[("harness_phase", "queries")] == 0
    finally:
        process.terminate()
        process.wait(timeout=30)
