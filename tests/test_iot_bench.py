"""The iot use case through the harness against a real QuestDB: TSBS's own file replayed, and the same data
set generated as DataFrames and sent with the client, hold the same rows, value for value (compared by
per-column counts and sums in both tables); counts exact in both tables; the refusals that are iot's own."""

from __future__ import annotations

import gzip

import pytest

from harness.commands.bench import run_bench

from harness.run.bench_options import BenchOptions
from harness.errors import UsageError
from harness.commands.replay import ReplayOptions, run_replay
from harness.tsbs.iot.schema import TABLES, schemas
from helpers import GOLDEN_DIR, assert_one_line_error, run_cli

GOLDEN = GOLDEN_DIR / "iot_seed123_scale10_1h_10s.ilp.gz"
GOLDEN_FLAGS = dict(use_case="iot", seed=123, scale=10, timestamp_start="2016-01-01T00:00:00Z",
                    timestamp_end="2016-01-01T01:00:00Z", log_interval="10s")


def fingerprint(client, table: str) -> list:
    """Every column's non-null count and, for numbers, sum; the timestamps' range: equal fingerprints of
    6,500 rows leave no room for a changed, missing or extra value."""
    (schema,) = [schema for schema in schemas() if schema.table == table]
    terms = ["count()", "min(timestamp)", "max(timestamp)"]
    for name, sql_type in schema.columns:
        if sql_type == "SYMBOL":
            terms.append(f"count({name})")
            terms.append(f"count_distinct({name})")
        elif sql_type != "TIMESTAMP":
            terms.extend([f"count({name})", f"round(sum({name}), 6)"])
    _, rows = client.query(f"select {', '.join(terms)} from {table}")
    return rows[0]


@pytest.mark.slow
def test_replayed_file_and_sent_frames_hold_the_same_rows(questdb, tmp_path, devnull):
    golden_lines = gzip.open(GOLDEN).read().count(b"\n")
    replayed = run_replay(ReplayOptions(path=str(GOLDEN), host=questdb.host, ilp_port=questdb.ilp_port,
                                        http_port=questdb.http_port, server_metrics_port=questdb.min_port,
                                        results=str(tmp_path / "replay.json")), out=devnull)
    assert replayed.status == "ok" and replayed.parameters["use_case"] == "iot"
    assert replayed.validation.visible_rows == golden_lines == 6513
    from_file = {table: fingerprint(questdb.client, table) for table in TABLES}
    record = run_bench(BenchOptions(send=True, transport="http", host=questdb.host, ilp_port=questdb.ilp_port,
                                    http_port=questdb.http_port, server_metrics_port=questdb.min_port,
                                    worker_chunk_row_count=1000, workers=2, results=str(tmp_path / "bench.json"),
                                    **GOLDEN_FLAGS), out=devnull)
    assert record.status == "ok"
    assert {table: count.visible for table, count in record.validation.tables.items()} == {
        "readings": 3253, "diagnostics": 3260}
    assert record.phases["send"].rows == 6513
    assert {table: fingerprint(questdb.client, table) for table in TABLES} == from_file


@pytest.mark.slow
def test_a_streamed_send_is_exact_in_both_tables(questdb, tmp_path, devnull):
    record = run_bench(BenchOptions(send=True, stream=True, host=questdb.host, ilp_port=questdb.ilp_port,
                                    http_port=questdb.http_port, server_metrics_port=questdb.min_port,
                                    use_case="iot", seed=5, scale=50, row_count=100_000,
                                    results=str(tmp_path / "r.json"), reporting_period=0), out=devnull)
    counts = {table: questdb.client.count(table) for table in TABLES}
    assert record.status == "ok" and record.validation.visible_rows == sum(counts.values())
    # TSBS drops about a tenth of the points it draws (--row-count counts points, as its --max-data-points).
    assert 80_000 < sum(counts.values()) < 100_000


def late_lines(lines: list[bytes]) -> dict[str, int]:
    """Per table, the golden file's lines behind a newer line of the same table before them."""
    newest, late = {}, {table: 0 for table in TABLES}
    for line in lines:
        table, stamp = line.split(b",", 1)[0].decode(), int(line.rsplit(b" ", 1)[1])
        late[table] += stamp < newest.get(table, stamp)
        newest[table] = max(newest.get(table, stamp), stamp)
    return late


@pytest.mark.slow
def test_sent_as_tsbs_orders_it_and_sorted_the_same_rows_arrive(questdb, tmp_path, devnull):
    """As sent, the record counts the late rows TSBS's file holds (counted here from the file itself) and the
    server reports out-of-order commits; sorted (``--sort``), no late row and the same rows in the tables."""
    late = late_lines(gzip.open(GOLDEN).read().splitlines())
    assert sum(late.values()) > 500
    fingerprints, records = [], {}
    for time_ordered in (False, True):
        record = run_bench(BenchOptions(send=True, host=questdb.host, ilp_port=questdb.ilp_port,
                                        http_port=questdb.http_port, server_metrics_port=questdb.min_port,
                                        worker_chunk_row_count=500, workers=1, time_ordered=time_ordered,
                                        results=str(tmp_path / f"{time_ordered}.json"), reporting_period=0,
                                        **GOLDEN_FLAGS), out=devnull)
        assert record.status == "ok" and record.validation.visible_rows == 6513
        fingerprints.append({table: fingerprint(questdb.client, table) for table in TABLES})
        records[time_ordered] = record
    assert fingerprints[0] == fingerprints[1]
    as_sent, ordered = records[False], records[True]
    assert {table: figures.late_rows for table, figures in as_sent.arrival.items()} == late
    assert {table: figures.late_rows for table, figures in ordered.arrival.items()} == {table: 0 for table in TABLES}
    assert ordered.mode.endswith("-sorted") and ordered.parameters["time_ordered"] is True
    assert as_sent.timeseries.server_increase("o3_commits") > 0
    assert ordered.timeseries.server_increase("o3_commits") == 0
    compared = run_cli("compare", str(as_sent.path), str(ordered.path))
    assert compared.returncode == 0 and "O3 commits" in compared.stdout
    assert f"readings {late['readings'] / 3253:.2%}" in compared.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", [
    (["--exactly-once", "--transport", "http"], "not unique"),
    (["--table", "trucks"], "--table"),
    (["--op", "iterrows"], "--op iterrows"),
])
def test_what_iot_cannot_do_is_refused_in_one_line(args, fragment):
    result = run_cli("bench", "--send", "--use-case", "iot", "--row-count", "1000", "--http-port", "1",
                     "--ilp-port", "1", *args)
    assert_one_line_error(result, 2, fragment)


@pytest.mark.slow
@pytest.mark.parametrize("use_case", ["cpu-only", "devops"])
def test_sort_is_refused_where_rows_are_in_time_order_already(use_case):
    result = run_cli("generate", "--use-case", use_case, "--sort", "--scale", "2", "--file", "-")
    assert result.returncode == 2 and result.stderr == f"error: --sort: {use_case}'s rows are in time order as " \
                                                       f"TSBS writes them: nothing to sort\n"


def test_the_registry_knows_iot():
    from harness.tsbs import use_cases

    iot = use_cases.get("iot")
    assert iot.tables() == ("readings", "diagnostics") and len(iot.query_types) == 13
    with pytest.raises(UsageError, match="supported: cpu-only, devops, iot"):
        use_cases.get("trucks")
