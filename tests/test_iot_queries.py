"""The iot queries: their parameters equal TSBS's own draws (tests/golden, decoded from
``tsbs_generate_queries --use-case=iot --format=timescaledb``); against a real QuestDB holding a small iot
data set loaded by the benchmark itself, every query type's answer equals the pandas reference over PGWire
and HTTP, and a changed value in a table fails ``--check`` with exit 1 and a line naming the query type."""

from __future__ import annotations

import gzip
import json
import re
import time
from collections import defaultdict
from itertools import groupby
from pathlib import Path

import pytest

from harness.commands.bench import run_bench

from harness.run.bench_options import BenchOptions
from harness.queries.iot_reference import IotReference
from harness.commands.queries_run import QueriesRunOptions, run_queries
from harness.tsbs import use_cases
from harness.tsbs.queries import generate_queries
from harness.tsbs.query_types import IOT_QUERY_TYPES
from helpers import assert_one_line_error, run_cli

GOLDEN = Path(__file__).parent / "golden" / "iot_queries_timescaledb.jsonl.gz"
# Five trucks over 32 hours, one epoch a minute (about 17,000 rows): every window fits, the tanks run low
# at the end (low-fuel), and the fifth stationary-trucks window of seed 6 finds a truck.
DATA_SET = dict(use_case="iot", seed=6, scale=5, timestamp_start="2016-01-01T00:00:00Z",
                timestamp_end="2016-01-02T08:00:01Z")
LOG_INTERVAL = "60s"
QUERIES_PER_TYPE = 5


def _go_time(text: str) -> str:
    """TimescaleDB's '2016-01-01 17:16:22.646325 +0000' as our RFC 3339 parameter."""
    moment, zone = text.rsplit(" ", 1)
    assert zone == "+0000"
    return moment.replace(" ", "T") + "Z"


def tsbs_params(sql: str) -> tuple | None:
    """The drawn values of one TSBS TimescaleDB iot query, in our parameters' order."""
    params: list = []
    if window := re.search(r"time >= '([^']+)' AND time < '([^']+)'", sql):
        params += [_go_time(window.group(1)), _go_time(window.group(2))]
    if trucks := re.search(r"t\.name IN \(([^)]*)\)", sql):
        params.append(tuple(re.findall(r"'([^']+)'", trucks.group(1))))
    if fleet := re.search(r"t\.fleet = '([^']+)'", sql):
        params.append(fleet.group(1))
    return tuple(params) or None


def golden_runs() -> dict:
    runs = defaultdict(list)
    with gzip.open(GOLDEN, "rt") as lines:
        for line in lines:
            record = json.loads(line)
            runs[(record["seed"], record["scale"], record["timestamp_start"], record["timestamp_end"])].append(record)
    return runs


def test_parameters_are_tsbs_own_draws():
    runs = golden_runs()
    assert len(runs) == 3
    for (seed, scale, start, end), records in runs.items():
        assert [query_type for query_type, _ in groupby(r["query_type"] for r in records)] == list(IOT_QUERY_TYPES)
        for query_type, block in groupby(records, key=lambda r: r["query_type"]):
            block = list(block)
            ours = list(generate_queries("iot", seed, scale, start, end, len(block), query_type))
            assert [query.params for query in ours] == [tsbs_params(r["sql"]) for r in block], (seed, query_type)
            assert [(query.label, query.description) for query in ours] == [
                (r["label"].replace("TimescaleDB", "QuestDB"), r["description"].replace("TimescaleDB", "QuestDB"))
                for r in block]
    # The draws are not all alike: different trucks, fleets and windows across queries.
    drawn = {tsbs_params(r["sql"]) for records in runs.values() for r in records} - {None}
    assert len(drawn) > 40


@pytest.mark.slow
def test_all_leaves_out_what_tsbs_refuses():
    result = run_cli("queries", "generate", "--use-case", "iot", "--seed", "3", "--scale", "4",
                     "--timestamp-start", "2016-01-01T00:00:00Z", "--timestamp-end", "2016-01-01T12:00:00Z",
                     "--queries", "1", "--query-type", "all")
    assert result.returncode == 0, result.stderr
    types = [json.loads(line)["query_type"] for line in result.stdout.splitlines()]
    assert types == [t for t in IOT_QUERY_TYPES if t != "long-daily-sessions"]
    assert "skipped (as TSBS refuses it): long-daily-sessions: random window equal to or larger" in result.stderr


@pytest.fixture(scope="module")
def loaded(questdb_server, tmp_path_factory):
    """The session's QuestDB with the data set in tables readings and diagnostics (sent by the benchmark)."""
    for table in ("readings", "diagnostics"):
        questdb_server.client.drop_table(table)
    results = tmp_path_factory.mktemp("load") / "load.json"
    record = run_bench(BenchOptions(send=True, transport="http", log_interval=LOG_INTERVAL, host=questdb_server.host,
                                    http_port=questdb_server.http_port, ilp_port=questdb_server.ilp_port,
                                    results=str(results), reporting_period=0, **DATA_SET),
                       out=open("/dev/null", "w"))
    assert record.status == "ok"
    return questdb_server


def options(server, tmp_path, **values) -> QueriesRunOptions:
    settings = dict(generate=True, queries=QUERIES_PER_TYPE, log_interval=LOG_INTERVAL, host=server.host,
                    http_port=server.http_port, pg_port=server.pg_port, results=str(tmp_path / "queries.json"),
                    reporting_period=0, check=True, **DATA_SET)
    settings.update(values)
    return QueriesRunOptions(**settings)


def test_the_answers_are_not_trivial():
    """Each type's reference answers hold rows for the queries the tests run."""
    reference = IotReference.generate(use_cases.make_spec(log_interval=LOG_INTERVAL, **DATA_SET))
    queries = generate_queries("iot", DATA_SET["seed"], DATA_SET["scale"], DATA_SET["timestamp_start"],
                               DATA_SET["timestamp_end"], QUERIES_PER_TYPE, "all")
    rows = defaultdict(int)
    for query in queries:
        rows[query.query_type] += len(reference.expected(query).rows)
    assert [t for t in IOT_QUERY_TYPES if not rows[t]] == []
    # The data set has rows whose tags TSBS cleared: they form NULL groups.
    assert any(None in row for row in reference.expected(next(
        q for q in generate_queries("iot", 6, 5, DATA_SET["timestamp_start"], DATA_SET["timestamp_end"], 1, "avg-load")
    )).rows)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["pgwire", "http"])
def test_every_iot_type_answers_as_the_reference(loaded, tmp_path, protocol, devnull):
    record = run_queries(options(loaded, tmp_path, protocol=protocol, workers=2), out=devnull)
    assert record.status == "ok"
    assert record.queries.check.checked == len(IOT_QUERY_TYPES) * QUERIES_PER_TYPE
    assert record.queries.check.mismatches == 0


def _latest_diagnostics(server, name: str) -> tuple[str, float]:
    _, rows = server.client.query(f"SELECT timestamp, fuel_state FROM diagnostics WHERE name = '{name}' "
                                  f"LATEST ON timestamp PARTITION BY name")
    return rows[0][0], rows[0][1]


def _set_fuel_state(server, name: str, at: str, value: float) -> None:
    server.client.exec(f"UPDATE diagnostics SET fuel_state = {value!r} WHERE name = '{name}' AND timestamp = '{at}'")
    deadline = time.monotonic() + 30
    while _latest_diagnostics(server, name)[1] != value:  # a WAL table applies the update asynchronously
        assert time.monotonic() < deadline, "the UPDATE never became visible"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_changed_value_fails_the_check(loaded, tmp_path):
    """truck_1 (fleet South, the second low-fuel query's) reports a half-full tank last: low-fuel no longer
    finds it, the reference does."""
    at, original = _latest_diagnostics(loaded, "truck_1")
    _set_fuel_state(loaded, "truck_1", at, 0.5)
    try:
        flags = [f"--{key.replace('_', '-')}={value}" for key, value in DATA_SET.items()]
        for protocol in ("pgwire", "http"):
            result = run_cli("queries", "run", "--generate", *flags, "--log-interval", LOG_INTERVAL,
                             "--query-type", "low-fuel", "--queries", "2", "--check", "--protocol", protocol,
                             "--host", loaded.host, "--http-port", str(loaded.http_port),
                             "--pg-port", str(loaded.pg_port), "--results", str(tmp_path / f"{protocol}.json"),
                             "--reporting-period", "0")
            assert_one_line_error(result, 1, "1 of 2 query answers differ from the reference (the first: query type "
                                             "low-fuel)")
            assert "query type low-fuel: the answer differs from the reference" in result.stdout
            assert "expected ('truck_1', 'Trish', 0.0)" in result.stdout
    finally:
        _set_fuel_state(loaded, "truck_1", at, original)


@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", [
    (["--use-case", "iot", "--under-load"], "--under-load appends rows to table cpu"),
    (["--use-case", "devops", "--check", "--seed", "1"], "--check has reference answers for the data sets of "
                                                          "cpu-only, iot only, not devops"),
    (["--use-case", "iot", "--query-types", "lastpoint"], "unknown iot query type 'lastpoint'"),
])
def test_what_iot_queries_cannot_do_is_refused_in_one_line(args, fragment, tmp_path):
    result = run_cli("queries", "run", "--generate", "--http-port", "1", "--results", str(tmp_path / "r.json"), *args)
    assert_one_line_error(result, 2, fragment)


def test_the_order_rules_of_the_iot_types():
    """daily-activity is held to day order (rows of one day in any order), avg-daily-driving-session to its
    exact order, the rest compared as sets of rows."""
    from harness.queries.answer import Answer
    from harness.queries.check import compare
    from harness.tsbs.query_types import Query

    reference = IotReference(None, {})
    daily, sessions, load = (Query(query_type, "", "", "SELECT 1", None)
                             for query_type in ("daily-activity", "avg-daily-driving-session", "avg-load"))
    day, next_day = 1451606400000000, 1451692800000000
    expected = Answer(["fleet", "model", "day", "daily_activity"],
                      [("East", "H-2", day, 1.0), ("West", "H-2", day, 2.0), ("East", "H-2", next_day, 3.0)])
    same_day_swapped = Answer(expected.columns, [expected.rows[1], expected.rows[0], expected.rows[2]])
    days_swapped = Answer(expected.columns, [expected.rows[2], expected.rows[0], expected.rows[1]])
    assert compare(daily, same_day_swapped, expected, reference.order_rule(daily)) is None
    assert "not in day order" in compare(daily, days_swapped, expected, reference.order_rule(daily))
    assert compare(sessions, same_day_swapped, expected, reference.order_rule(sessions)) is not None
    assert compare(load, days_swapped, expected, reference.order_rule(load)) is None
