"""harness.queries.reference and .check: every answer of TSBS's golden cpu-only queries, run on a real QuestDB
(the pinned version) over the seed-7 scale-10 12-hour data set, equals the NumPy reference; a table with one changed value
is caught; and compare's tolerance and order rules on crafted answers."""

from __future__ import annotations

import dataclasses

import time
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from questdb import Sender

from harness.tsbs.query_file import read_jsonl
from harness.tsbs.query_types import Query
from harness.tsbs.cpu_only import generator as cpu_only
from harness.errors import RunError, UsageError
from harness.queries.answer import Answer
from harness.queries.check import AnswerChecker, compare
from harness.queries.reference import ReferenceData
from harness.queries.wire_sql import inline_params, shape_of
from harness.questdb.http import QuestDBSql
from harness.tsbs.cpu_only.generator import COLUMNS, frames
from harness.tsbs.use_cases import make_spec
from helpers import GOLDEN_DIR
from harness.questdb.schema import create_table
from harness.questdb.wal import wait_for_count

GOLDEN = GOLDEN_DIR
QUERIES_FILE = GOLDEN / "queries_cpu-only_seed7_scale10_12h.jsonl.gz"
SPEC = make_spec(seed=7, scale=10, timestamp_start="2016-01-01T00:00:00Z",
                 timestamp_end="2016-01-01T12:00:00Z", log_interval="10s")
CHANGED_AT = "2016-01-01T10:30:00Z"  # inside the first single-groupby-1-1-1 query's hour, for host_0


def golden_queries() -> list[Query]:
    return read_jsonl(QUERIES_FILE)


def exec_answer(client: QuestDBSql, query: Query) -> Answer:
    """Run a query over /exec with its parameters inlined as TSBS does, normalised to the Answer contract."""
    result = client.exec(inline_params(query.sql, query.params))
    converters = [_CONVERTERS.get(column["type"], str) for column in result["columns"]]
    rows = [tuple(None if value is None else convert(value) for value, convert in zip(row, converters))
            for row in result["dataset"]]
    return Answer([column["name"] for column in result["columns"]], rows)


def _timestamp_micros(text: str) -> int:
    # /exec writes 2016-01-01T00:00:00.000000Z
    return (datetime.fromisoformat(text) - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_CONVERTERS = {"TIMESTAMP": _timestamp_micros, "DOUBLE": float, "FLOAT": float,
               "LONG": int, "INT": int, "SHORT": int, "BYTE": int}


def load(questdb, fields: str) -> None:
    create_table(questdb.client, cpu_only.schema(fields, "cpu"))
    with Sender.from_conf(f"http::addr={questdb.host}:{questdb.http_port};") as sender:
        for frame in frames(SPEC, 20_000, fields):
            sender.dataframe(frame, table_name="cpu", symbols=True, at="timestamp")
    wait_for_count(questdb.client, "cpu", SPEC.row_count, timeout=60)


def frames_with_usage_user(fields: str, at: str, value: int):
    """The data set's frames with host_0's usage_user at ``at`` set to ``value``."""
    moment = pd.Timestamp(at).tz_convert(None)  # the frames' timestamps are UTC without a zone
    for frame in frames(SPEC, 20_000, fields):
        frame.loc[(frame["hostname"] == "host_0") & (frame["timestamp"] == moment), "usage_user"] = value
        yield frame


def mismatches(client: QuestDBSql, reference: ReferenceData, queries: list[Query]) -> dict[int, str]:
    found = {}
    for index, query in enumerate(queries):
        description = compare(query, exec_answer(client, query), reference.expected(query))
        if description is not None:
            found[index] = description
    return found


def wait_for_value(client: QuestDBSql, sql: str, value, timeout: float = 30) -> None:
    """WAL tables apply an UPDATE asynchronously: wait until it is visible."""
    deadline = time.monotonic() + timeout
    while client.query(sql)[1] != [[value]]:
        assert time.monotonic() < deadline, f"{sql!r} never answered {value!r}"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("fields", ["double", "long"])
def test_every_golden_query_answer_equals_the_reference_and_a_changed_value_is_caught(questdb, fields):
    queries = golden_queries()
    assert len(queries) == 150
    reference = ReferenceData.generate(SPEC, fields)
    assert reference.rows == 43_200
    load(questdb, fields)

    assert mismatches(questdb.client, reference, queries) == {}
    # The reference is not vacuous: every query type has rows (high-cpu-1 for host_0 too).
    rows_per_type: dict[str, int] = {}
    for query in queries:
        rows_per_type[query.query_type] = rows_per_type.get(query.query_type, 0) + len(
            reference.expected(query).rows)
    assert len(rows_per_type) == 15 and all(rows_per_type.values()), rows_per_type

    changed = "123.0" if fields == "double" else "123"
    point = f"hostname = 'host_0' AND timestamp = '{CHANGED_AT}'"
    questdb.client.exec(f"UPDATE cpu SET usage_user = {changed} WHERE {point}")
    wait_for_value(questdb.client, f"SELECT usage_user FROM cpu WHERE {point}",
                   123.0 if fields == "double" else 123)
    changed_reference = ReferenceData.from_frames(SPEC, fields, frames_with_usage_user(fields, CHANGED_AT, 123))
    found, changed_found = {}, {}
    for index, query in enumerate(queries):
        actual = exec_answer(questdb.client, query)
        for against, mismatched in ((reference, found), (changed_reference, changed_found)):
            if (description := compare(query, actual, against.expected(query))) is not None:
                mismatched[index] = description
    first = queries[0]
    assert first.query_type == "single-groupby-1-1-1" and first.params[0] == ("host_0",)
    assert 0 in found
    assert found[0].startswith("query type single-groupby-1-1-1:")
    assert "FROM cpu WHERE hostname IN ('host_0') AND timestamp >= '2016-01-01T10:10:30Z'" in found[0]
    assert "expected 61, actual 61" in found[0] and "123" in found[0]
    # The changed table equals a reference built from frames with the same change, and exactly the queries
    # whose reference answers the change alters are reported.
    assert changed_found == {}
    altered = {index for index, query in enumerate(queries)
               if compare(query, changed_reference.expected(query), reference.expected(query)) is not None}
    assert set(found) == altered
    assert {"single-groupby-1-1-1", "double-groupby-1", "high-cpu-all", "high-cpu-1"} <= {
        queries[index].query_type for index in found}
    assert "lastpoint" not in {queries[index].query_type for index in found}

def test_reference_build_checks_the_frames_are_the_data_sets():
    other = make_spec(seed=7, scale=10, timestamp_start="2016-01-01T00:00:00Z",
                      timestamp_end="2016-01-01T00:10:00Z", log_interval="10s")
    with pytest.raises(RunError, match="the frames hold 600 rows, the data set 43200"):
        ReferenceData.from_frames(SPEC, "double", frames(other, 1000, "double"))


# -- compare on crafted answers ------------------------------------------------------------------------

SAMPLED = Query("single-groupby-1-1-1", "", "",
                "SELECT max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN $1 "
                "AND timestamp >= $2 AND timestamp < $3 SAMPLE BY 1m",
                (("host_0",), "2016-01-01T00:00:00Z", "2016-01-01T01:00:00Z"))
KEYED = Query("double-groupby-1", "", "",
              "SELECT hostname, avg(usage_user) AS avg_usage_user FROM cpu WHERE timestamp >= $1 "
              "AND timestamp < $2 SAMPLE BY 1h",
              ("2016-01-01T00:00:00Z", "2016-01-01T02:00:00Z"))
HIGH_CPU = Query("high-cpu-all", "", "",
                 "SELECT * FROM cpu WHERE usage_user > 90.0 AND timestamp >= $1 AND timestamp < $2",
                 ("2016-01-01T00:00:00Z", "2016-01-01T02:00:00Z"))
LASTPOINT = Query("lastpoint", "", "", "SELECT * FROM cpu latest by hostname", None)


def one_column(*values) -> Answer:
    return Answer(["max_usage_user"], [(value,) for value in values])


def table_row(host: str, usage_user: float, timestamp: int) -> tuple:
    return (host, *["x"] * 9, usage_user, *[1.0] * 9, timestamp)


def test_floats_match_within_one_billionth_relative():
    expected = one_column(95.5, 0.0)
    assert compare(SAMPLED, one_column(95.5 * (1 + 1e-12), 1e-15), expected) is None
    description = compare(SAMPLED, one_column(95.5 * (1 + 1e-6), 0.0), expected)
    assert description is not None and "row 0: expected (95.5,)" in description
    assert compare(SAMPLED, one_column(95.5, 1e-6), expected) is not None


def test_a_long_answered_as_a_double_differs():
    assert compare(SAMPLED, one_column(95.0), one_column(95)) is not None
    assert compare(SAMPLED, one_column(95), one_column(95)) is None


def test_row_count_mismatch_is_described_with_the_sql_and_the_missing_row():
    description = compare(SAMPLED, one_column(1.0, 2.0), one_column(1.0, 2.0, 3.0))
    lines = description.splitlines()
    assert lines[0] == "query type single-groupby-1-1-1: the answer differs from the reference"
    assert ("SQL: SELECT max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_0') AND "
            "timestamp >= '2016-01-01T00:00:00Z' AND timestamp < '2016-01-01T01:00:00Z' SAMPLE BY 1m") in lines[1]
    assert "rows: expected 3, actual 2" in lines[2]
    assert "row 2: expected (3.0,)" in description and "actual (no row)" in description


def test_unkeyed_sample_by_is_compared_in_order():
    assert compare(SAMPLED, one_column(2.0, 1.0), one_column(1.0, 2.0)) is not None


def test_keyed_sample_by_keeps_time_order_per_key_only():
    expected = Answer(["hostname", "avg_usage_user"],
                      [("host_0", 1.0), ("host_1", 2.0), ("host_0", 3.0), ("host_1", 4.0)])
    hosts_swapped = Answer(expected.columns, [("host_1", 2.0), ("host_0", 1.0), ("host_1", 4.0), ("host_0", 3.0)])
    assert compare(KEYED, hosts_swapped, expected) is None
    time_swapped = Answer(expected.columns, [("host_0", 3.0), ("host_1", 2.0), ("host_0", 1.0), ("host_1", 4.0)])
    description = compare(KEYED, time_swapped, expected)
    assert description is not None and "host_0 row 0: expected ('host_0', 1.0)" in description


def test_filtered_rows_keep_timestamp_order_with_ties_in_any_order():
    expected = Answer(list(COLUMNS), [table_row("host_0", 91.0, 10), table_row("host_1", 92.0, 10),
                                      table_row("host_0", 93.0, 20)])
    ties_swapped = Answer(expected.columns, [expected.rows[1], expected.rows[0], expected.rows[2]])
    assert compare(HIGH_CPU, ties_swapped, expected) is None
    out_of_order = Answer(expected.columns, [expected.rows[2], expected.rows[0], expected.rows[1]])
    assert "not in timestamp order" in compare(HIGH_CPU, out_of_order, expected)


def test_latest_by_is_compared_as_a_set_of_rows():
    expected = Answer(list(COLUMNS), [table_row("host_0", 1.0, 10), table_row("host_1", 2.0, 10)])
    assert compare(LASTPOINT, Answer(expected.columns, expected.rows[::-1]), expected) is None
    assert compare(LASTPOINT, Answer(expected.columns, expected.rows[:1]), expected) is not None


def test_other_columns_differ():
    description = compare(SAMPLED, Answer(["max"], [(1.0,)]), one_column(1.0))
    assert "columns: expected ['max_usage_user'], actual ['max']" in description


def test_a_query_the_reference_cannot_answer_is_a_usage_error():
    query = dataclasses.replace(SAMPLED, sql="SELECT min(usage_user) FROM cpu SAMPLE BY 1m", params=())
    with pytest.raises(UsageError, match="single-groupby-1-1-1"):
        ReferenceData.generate(make_spec(seed=1, scale=2, timestamp_start="2016-01-01T00:00:00Z",
                                         timestamp_end="2016-01-01T00:01:00Z", log_interval="10s")).expected(query)


def test_answer_checker_keeps_the_mismatches_of_the_answers_it_is_given():
    reference = ReferenceData.generate(make_spec(seed=3, scale=2, timestamp_start="2016-01-01T00:00:00Z",
                                                 timestamp_end="2016-01-01T01:00:00Z", log_interval="10s"))
    expected = reference.expected(SAMPLED)
    assert len(expected.rows) == 60
    checker = AnswerChecker(reference)
    checker(SAMPLED, expected)
    assert checker.checked == 1 and checker.mismatches == [] and checker.error() is None
    checker(SAMPLED, Answer(expected.columns, expected.rows[1:]))
    assert checker.checked == 2 and len(checker.mismatches) == 1
    assert str(checker.error()) == "1 of 2 query answers differ from the reference (the first: query type single-groupby-1-1-1)"


def pandas_answer(data: pd.DataFrame, query: Query, fields: str) -> Answer:
    """The same queries answered the plain pandas way (boolean masks, groupby), as a second opinion on the
    reference where the server test does not reach: a data set cut mid-epoch by a row limit."""
    shape = shape_of(query)
    rows = data
    if shape.latest_by:
        return Answer(list(COLUMNS), [_cells(row, fields) for row in rows.groupby("hostname", sort=False).tail(1)
                                      .sort_values("hostname", key=lambda s: s.str[5:].astype(int))
                                      .itertuples(index=False)])
    mask = pd.Series(True, index=rows.index)
    if shape.hosts is not None:
        mask &= rows["hostname"].isin(shape.hosts)
    if shape.time_from is not None:
        mask &= rows["timestamp"] >= shape.time_from
    if shape.time_to is not None:
        mask &= rows["timestamp"] < shape.time_to
    for field, threshold in shape.thresholds:
        mask &= rows[field] > threshold
    rows = rows[mask]
    if shape.sample_by_micros is None:
        return Answer(list(COLUMNS), [_cells(row, fields) for row in rows.itertuples(index=False)])
    rows = rows.assign(bucket=rows["timestamp"] // shape.sample_by_micros)
    keys = ["bucket", *shape.key_columns]
    grouped = rows.groupby(keys, sort=True).agg(
        **{a.name: (a.field, a.function if a.function == "max" else "mean") for a in shape.aggregates})
    grouped = grouped.reset_index()
    if shape.key_columns:
        grouped = grouped.sort_values(["bucket", "hostname"], key=lambda s: s if s.name == "bucket"
                                      else s.str[5:].astype(int), kind="stable")
    if shape.order_by_timestamp == "DESC":
        grouped = grouped.iloc[::-1]
    if shape.limit is not None:
        grouped = grouped.iloc[:shape.limit]
    answer_rows = []
    for record in grouped.to_dict("records"):
        cells = [record[key] for key in shape.key_columns]
        for a in shape.aggregates:
            value = record[a.name]
            cells.append(int(value) if a.function == "max" and fields == "long" else float(value))
        answer_rows.append(tuple(cells))
    return Answer(shape.columns, answer_rows)


def _cells(row: tuple, fields: str) -> tuple:
    tags, values, timestamp = row[:10], row[10:20], row[20]
    convert = int if fields == "long" else float
    return (*(str(tag) for tag in tags), *(convert(value) for value in values), int(timestamp))


@pytest.mark.slow
@pytest.mark.parametrize("fields", ["double", "long"])
def test_reference_equals_plain_pandas_on_a_data_set_cut_mid_epoch(fields):
    # 12 hours of 10 hosts, cut 3 hosts into the last epoch: the last bucket lacks hosts 3..9.
    spec = make_spec(seed=7, scale=10, timestamp_start="2016-01-01T00:00:00Z", timestamp_end=None,
                     log_interval="10s", row_limit=43_200 - 7)
    data = pd.concat(list(frames(spec, 10_000, fields)), ignore_index=True)
    data["timestamp"] = data["timestamp"].to_numpy(dtype="datetime64[ns]").view("int64") // 1000
    data["hostname"] = data["hostname"].astype(str)
    reference = ReferenceData.from_frames(spec, fields, frames(spec, 7_777, fields))
    # The first 3 queries of each type (the golden file holds 10 a type, in blocks): the same paths, a third of the time.
    for index, query in enumerate(golden_queries()):
        if index % 10 >= 3:
            continue
        description = compare(query, reference.expected(query), pandas_answer(data, query, fields))
        assert description is None, description
