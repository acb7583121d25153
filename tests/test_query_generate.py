"""The query generator against TSBS's own queries (shared/tsbs-golden), the wire SQL, the query files and errors."""

from __future__ import annotations

import gzip
import io
import json
import re
import shlex

import pytest

from harness.tsbs.cpu_only import generator as cpu_only
from harness.errors import UsageError
from harness.tsbs.go.times import go_duration_string, rfc3339_seconds
from harness.tsbs.queries import QUERY_TYPES, Query, generate_queries, query_type_refusal
from harness.tsbs.query_file import read_jsonl, write_jsonl
from harness.queries.wire_sql import http_sql, pgwire_sql
from helpers import GOLDEN_DIR, run_cli
from harness.questdb.schema import create_table

SEED7_FILE = "queries_cpu-only_seed7_scale10_12h.jsonl.gz"


def golden_query_cases() -> list[tuple[str, dict[str, str]]]:
    """(file name, tsbs_generate_queries flags as a dict) of every row of the golden README's query table."""
    readme = (GOLDEN_DIR / "README.md").read_text()
    cases = []
    for name, flags in re.findall(r"^\| (queries_\S+\.jsonl\.gz) \| `([^`]+)` \|", readme, re.M):
        parsed = dict(flag[2:].split("=", 1) for flag in shlex.split(flags))
        cases.append((name, parsed))
    return cases


def generate_like_tsbs(flags: dict[str, str], query_type: str = "all") -> list[Query]:
    assert flags["format"] == "questdb"
    return list(
        generate_queries(
            use_case=flags["use-case"],
            seed=int(flags["seed"]),
            scale=int(flags["scale"]),
            timestamp_start=flags["timestamp-start"],
            timestamp_end=flags["timestamp-end"],
            queries=int(flags["queries"]),
            query_type=query_type,
        )
    )


def golden_lines(name: str) -> list[str]:
    with gzip.open(GOLDEN_DIR / name, "rt", encoding="utf-8") as source:
        return source.read().splitlines()


def test_golden_readme_lists_both_query_files():
    assert [name for name, _ in golden_query_cases()] == [
        "queries_cpu-only_seed123_scale4000_1d.jsonl.gz",
        SEED7_FILE,
    ]


@pytest.mark.parametrize("name,flags", golden_query_cases(), ids=lambda value: value if isinstance(value, str) else "")
def test_generated_queries_equal_tsbs_line_by_line(name, flags):
    expected = [json.loads(line) for line in golden_lines(name)]
    produced = [query.to_json_dict() for query in generate_like_tsbs(flags)]
    assert len(produced) == len(expected)
    for number, (ours, theirs) in enumerate(zip(produced, expected), start=1):
        assert ours == theirs, f"line {number}"


def test_written_file_is_byte_identical_to_the_golden_file(tmp_path):
    name, flags = golden_query_cases()[1]
    target = tmp_path / "queries.jsonl.gz"
    assert write_jsonl(generate_like_tsbs(flags), target) == len(golden_lines(name))
    with gzip.open(target, "rt", encoding="utf-8") as written:
        assert written.read().splitlines() == golden_lines(name)


def test_one_type_is_its_own_freshly_seeded_block():
    _, flags = golden_query_cases()[0]
    everything = generate_like_tsbs(flags)
    high_cpu_1 = generate_like_tsbs(flags, "high-cpu-1")
    assert high_cpu_1 == [query for query in everything if query.query_type == "high-cpu-1"]
    assert len(high_cpu_1) == int(flags["queries"])


def test_all_leaves_out_the_types_tsbs_refuses_and_says_why():
    """The 12h/10-host golden file has no cpu-max-all-32-24: TSBS cannot fit a 24h window in 12h."""
    _, flags = golden_query_cases()[1]
    produced_types = {query.query_type for query in generate_like_tsbs(flags)}
    assert produced_types == set(QUERY_TYPES) - {"cpu-max-all-32-24"}
    refusal = query_type_refusal("cpu-max-all-32-24", 10, 0, (12 * 3600 + 1) * 10**9)
    assert refusal == (
        "cpu-max-all-32-24: random window equal to or larger than TimeInterval: "
        "window 24h0m0s, interval 12h0m1s (widen --timestamp-start/--timestamp-end)"
    )


def test_read_jsonl_round_trips_the_golden_file():
    name, flags = golden_query_cases()[1]
    assert read_jsonl(GOLDEN_DIR / name) == generate_like_tsbs(flags)
    assert read_jsonl(io.StringIO("\n".join(golden_lines(name)))) == generate_like_tsbs(flags)


def golden_query(query_type: str) -> Query:
    return next(query for query in read_jsonl(GOLDEN_DIR / SEED7_FILE) if query.query_type == query_type)


def test_http_sql_substitutes_every_parameter():
    query = golden_query("single-groupby-1-8-1")
    assert http_sql(query) == (
        "\n\t\tSELECT\n\t\t\tmax(usage_user) AS max_usage_user\n\t\tFROM cpu\n"
        "\t\tWHERE hostname IN ('host_0', 'host_3', 'host_2', 'host_8', 'host_6', 'host_1', 'host_9', 'host_4')\n"
        "\t\t  AND timestamp >= '2016-01-01T10:10:30Z'\n"
        "\t\t  AND timestamp < '2016-01-01T11:10:30Z'\n"
        "\t\tSAMPLE BY 1m"
    )
    assert http_sql(golden_query("groupby-orderby-limit")) == (
        "\n\t\tSELECT max(usage_user)\n\t\tFROM cpu\n\t\tWHERE timestamp < '2016-01-01T11:10:30Z'"
        "\n\t\tSAMPLE BY 1m\n\t\tORDER BY timestamp DESC\n\t\tLIMIT 5"
    )
    lastpoint = golden_query("lastpoint")
    assert http_sql(lastpoint) == "SELECT * FROM cpu latest by hostname"


def test_pgwire_sql_inlines_hosts_and_binds_the_rest_renumbered():
    sql, values = pgwire_sql(golden_query("high-cpu-1"))
    assert sql == (
        "\n\t\t      SELECT *\n\t\t      FROM cpu\n\t\t      WHERE usage_user > 90.0\n"
        "\t\t       AND hostname IN ('host_0')\n"
        "\t\t       AND timestamp >= $1\n"
        "\t\t       AND timestamp < $2"
    )
    assert values == ["2016-01-01T00:00:00Z", "2016-01-01T12:00:00Z"]
    sql, values = pgwire_sql(golden_query("cpu-max-all-8"))
    assert "WHERE hostname IN ('host_0','host_3','host_2','host_8','host_6','host_1','host_9','host_4')\n" in sql
    assert "$3" not in sql and "timestamp >= $1" in sql and "timestamp < $2" in sql
    assert values == ["2016-01-01T02:08:46Z", "2016-01-01T10:08:46Z"]
    double = golden_query("double-groupby-5")
    assert pgwire_sql(double) == (double.sql, list(double.params))
    assert pgwire_sql(golden_query("lastpoint")) == ("SELECT * FROM cpu latest by hostname", [])


def test_go_time_text():
    assert [go_duration_string(ns) for ns in (0, 3_600 * 10**9, 43_201 * 10**9, 1_500_000_000, 500_000_000, 1_500)] == [
        "0s", "1h0m0s", "12h0m1s", "1.5s", "500ms", "1.5µs"
    ]
    assert rfc3339_seconds(1_451_606_400 * 10**9 + 999_999_999) == "2016-01-01T00:00:00Z"


GOOD_LINE = json.dumps(
    {"query_type": "lastpoint", "label": "l", "description": "d", "sql": "SELECT 1", "params": None}
)


@pytest.mark.parametrize(
    "bad_line,message",
    [
        ("{not json", r"q\.jsonl:2: not JSON"),
        ("[1, 2]", r"q\.jsonl:2: expected a JSON object"),
        (
            json.dumps({"query_type": "lastpoint", "label": "l", "sql": "s", "params": None}),
            r"q\.jsonl:2: keys must be .*missing description",
        ),
        (
            GOOD_LINE.replace('"params": null', '"params": null, "extra": 1'),
            r"q\.jsonl:2: keys must be .*unknown extra",
        ),
        (GOOD_LINE.replace('"sql": "SELECT 1"', '"sql": 5'), r"q\.jsonl:2: 'sql' must be a string"),
        (GOOD_LINE.replace('"params": null', '"params": "x"'), r"q\.jsonl:2: 'params' must be a list or null"),
        (GOOD_LINE.replace('"params": null', '"params": [[1]]'), r"q\.jsonl:2: each of 'params'"),
    ],
)
def test_malformed_query_file_names_the_line(tmp_path, bad_line, message):
    path = tmp_path / "q.jsonl"
    path.write_text(GOOD_LINE + "\n" + bad_line + "\n")
    with pytest.raises(UsageError, match=message) as raised:
        read_jsonl(path)
    assert "\n" not in str(raised.value)


def test_unreadable_query_files(tmp_path):
    with pytest.raises(UsageError, match="cannot open the query file"):
        read_jsonl(tmp_path / "missing.jsonl")
    not_gzip = tmp_path / "q.jsonl.gz"
    not_gzip.write_text(GOOD_LINE)
    with pytest.raises(UsageError, match="cannot read the query file"):
        read_jsonl(not_gzip)


FLAGS = dict(
    use_case="cpu-only", seed=7, scale=10, timestamp_start="2016-01-01T00:00:00Z",
    timestamp_end="2016-01-01T12:00:01Z", queries=3, query_type="lastpoint",
)


@pytest.mark.parametrize(
    "changes,message",
    [
        (dict(query_type="cpu-max-all-2"), "invalid query type for use case 'cpu-only': 'cpu-max-all-2'"),
        (dict(use_case="iot"), "invalid query type for use case 'iot': 'lastpoint'"),
        (dict(use_case="iot", query_type="long-daily-sessions"), r"window 24h0m0s, interval 12h0m1s"),
        (dict(scale=0), "scale: "),
        (dict(queries=-1), "queries: "),
        (dict(seed=0), "seed: "),
        (dict(seed=2**63), "seed: must fit"),
        (dict(timestamp_end="2016-01-01"), "timestamp_end: cannot parse"),
        (dict(timestamp_end="2015-12-31T00:00:00Z"), "end time before start time"),
        (dict(query_type="cpu-max-all-32-24"), r"window 24h0m0s, interval 12h0m1s"),
        (dict(query_type="cpu-max-all-32-24", timestamp_end="2016-01-03T00:00:00Z"),
         r"number of hosts \(32\) larger than total hosts. See --scale \(10\)"),
        (dict(query_type="single-groupby-1-8-1", scale=7), r"number of hosts \(8\) larger than total hosts"),
        (
            dict(query_type="single-groupby-1-1-12", timestamp_end="2016-01-01T12:00:00Z"),
            "window 12h0m0s, interval 12h0m0s",
        ),
    ],
)
def test_bad_flags_are_refused_before_any_query(changes, message):
    with pytest.raises(UsageError, match=message) as raised:
        generate_queries(**{**FLAGS, **changes})
    assert "\n" not in str(raised.value)


def test_tsbs_accepts_what_it_never_draws_for():
    """lastpoint draws nothing, so TSBS runs it on any range; with --queries=0 no type is refused."""
    assert len(list(generate_queries(**{**FLAGS, "timestamp_end": FLAGS["timestamp_start"]}))) == 3
    assert list(generate_queries(**{**FLAGS, "query_type": "cpu-max-all-32-24", "queries": 0})) == []


def test_every_query_type_runs_on_questdb(questdb):
    """The HTTP SQL of each of the 16 types, as TSBS would send it, is accepted by a real QuestDB."""
    create_table(questdb.client, cpu_only.schema("double", "cpu"))
    first_of_each_type = {}
    for query in read_jsonl(GOLDEN_DIR / "queries_cpu-only_seed123_scale4000_1d.jsonl.gz"):
        first_of_each_type.setdefault(query.query_type, query)
    assert tuple(first_of_each_type) == QUERY_TYPES
    for query in first_of_each_type.values():
        columns, rows = questdb.client.query(http_sql(query))
        assert columns and rows == [], query.query_type


@pytest.mark.slow
def test_the_queries_generate_command_writes_the_golden_file(tmp_path):
    """`python -m harness queries generate` with the golden README's flags (all types at once)."""
    out = tmp_path / "q.jsonl"
    result = run_cli("queries", "generate", "--seed", "7", "--scale", "10", "--timestamp-start", "2016-01-01T00:00:00Z",
                     "--timestamp-end", "2016-01-01T12:00:01Z", "--queries", "10", "--query-type", "all", "--file",
                     str(out))
    assert result.returncode == 0, result.stderr
    assert "skipped (as TSBS refuses it): cpu-max-all-32-24" in result.stderr
    golden = GOLDEN_DIR / "queries_cpu-only_seed7_scale10_12h.jsonl.gz"
    expected = [json.loads(line) for line in gzip.open(golden, "rt")]
    assert [json.loads(line) for line in out.read_text().splitlines()] == expected
