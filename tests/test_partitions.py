"""The partitioning of a user's table (``--partition-by``, ``harness.own_data.partitioning``): the default chosen from
the data's time span, rows and width within the server's ``vm.max_map_count`` (twenty years of daily rows by YEAR, a
wide year of 15-minute rows by MONTH, a day of second rows by DAY), the limit read or assumed and said, a unit given
that needs more mappings than the server allows said in a warning; a value not a unit refused in one line, exit 2,
no table left; and against a real QuestDB, a year of 15-minute rows 201 columns wide landing exact in a table
partitioned as chosen and recorded so, and an existing table partitioned otherwise refused naming the flag."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from harness.commands.bench import run_bench
from harness.commands.read import ReadOptions, run_read
from harness.own_data.partitioning import (
    LINUX_DEFAULT_MAP_COUNT,
    MapLimit,
    TimeSpan,
    choose,
    given,
    map_limit,
    partitions,
)
from harness.own_data.source import data_source
from harness.run.bench_options import BenchOptions
from helpers import assert_one_line_error, run_cli

LIMIT = MapLimit(LINUX_DEFAULT_MAP_COUNT, "read from a test")


def _span(start: str, rows: int, freq: str) -> TimeSpan:
    """``rows`` a ``freq`` apart from ``start``: the last instant computed, not a billion instants made."""
    first = pd.Timestamp(start)
    return TimeSpan(first, first + pd.tseries.frequencies.to_offset(freq) * (rows - 1), rows, "a test")


def _doubles(count: int) -> list[str]:
    return ["DOUBLE"] * count + ["TIMESTAMP"]


def test_twenty_years_of_daily_rows_are_partitioned_by_year():
    chosen = choose(_span("2004-01-01", 7305, "D"), _doubles(4), LIMIT)
    assert chosen.by == "YEAR" and chosen.chosen and chosen.warning is None
    assert "7,305 rows × 5 columns" in chosen.line and "YEAR the finest of the fewest (20)" in chosen.line


def test_a_wide_year_of_15_minute_rows_is_partitioned_by_month_its_days_over_the_servers_mappings():
    chosen = choose(_span("2024-01-01", 35_136, "15min"), _doubles(200), LIMIT)
    assert chosen.by == "MONTH"
    assert chosen.line.startswith("partitioned by MONTH: ~2,928 rows × 201 columns a month")
    assert "DAY: 366 days × 201 columns would need ~73,566 mappings, over half the server's vm.max_map_count " \
           "65,530 (read from a test)" in chosen.line
    assert chosen.mappings == 12 * 201


def test_a_day_of_second_rows_is_partitioned_by_day():
    chosen = choose(_span("2024-03-01", 86_400, "s"), _doubles(4), LIMIT)
    assert chosen.by == "DAY" and "~86,400 rows × 5 columns a day" in chosen.line


def test_many_rows_are_partitioned_finer_until_the_mappings_stop_it():
    chosen = choose(_span("2024-03-01", 1_000_000_000, "31ms"), _doubles(10), LIMIT)
    assert chosen.by == "DAY" and "HOUR: 8,612 hours × 11 columns would need ~94,732 mappings" in chosen.line
    raised = choose(_span("2024-03-01", 1_000_000_000, "31ms"), _doubles(10), MapLimit(1_048_576, "read"))
    assert raised.by == "HOUR"


def test_text_columns_count_two_files_and_a_table_too_wide_for_any_unit_is_said():
    assert choose(_span("2024-01-01", 35_136, "15min"), ["VARCHAR"] * 200 + ["TIMESTAMP"], LIMIT).mappings == 12 * 401
    widest = choose(_span("1990-01-01", 12_000, "D"), _doubles(2_000), LIMIT)
    assert widest.by == "YEAR" and "a read of the whole table may fail" in widest.warning


def test_a_unit_given_over_the_servers_mappings_is_warned_of_not_refused():
    span = _span("2024-01-01", 35_136, "15min")
    day = given("DAY", span, _doubles(200), LIMIT)
    assert day.by == "DAY" and not day.chosen
    assert "DAY: 366 days × 201 columns would need ~73,566 mappings" in day.warning
    assert given("MONTH", span, _doubles(200), LIMIT).warning is None


def test_partitions_are_counted_by_the_calendar():
    assert partitions("WEEK", TimeSpan(pd.Timestamp("2024-03-03 23:00"), pd.Timestamp("2024-03-04 01:00"), 2,
                                       "")) == 2  # a Sunday and the Monday after: two of QuestDB's weeks
    assert partitions("MONTH", TimeSpan(pd.Timestamp("2023-12-31"), pd.Timestamp("2024-01-01"), 2, "")) == 2
    assert partitions("HOUR", TimeSpan(pd.Timestamp("2024-01-01 00:59"), pd.Timestamp("2024-01-01 01:00"), 2,
                                       "")) == 2
    assert partitions("NONE", _span("2000-01-01", 10, "YS")) == 1


def test_the_map_count_is_read_where_the_server_is_local_and_assumed_elsewhere(tmp_path):
    kept = tmp_path / "max_map_count"
    kept.write_text("262144\n")
    assert map_limit(True, str(kept)) == MapLimit(262_144, f"read from {kept}")
    missing = map_limit(True, str(tmp_path / "none"))
    assert missing.count == LINUX_DEFAULT_MAP_COUNT and "assumed" in missing.said and "could not be read" in missing.said
    remote = map_limit(False, str(kept))
    assert remote.count == LINUX_DEFAULT_MAP_COUNT and "not on this machine" in remote.said


def test_a_file_is_partitioned_from_its_own_span_said_and_named(tmp_path):
    path = tmp_path / "daily.csv"
    frame = pd.DataFrame({"day": pd.date_range("2004-01-01", periods=7305, freq="D").strftime("%Y-%m-%d"),
                          "load": np.arange(7305) / 7})
    frame.to_csv(path, index=False)
    source = data_source(str(path), limit=LIMIT)
    assert source.schemas()[0].partition_by == "YEAR"
    assert source.partitioning.span.first == pd.Timestamp("2004-01-01")
    assert source.partitioning.span.last == pd.Timestamp("2023-12-31")
    assert any(line.startswith("Table daily partitioned by YEAR: ") for line in source.describe())
    assert data_source(str(path), partition_by="week", limit=LIMIT).schemas()[0].partition_by == "WEEK"


@pytest.mark.slow
def test_a_value_not_a_unit_is_refused_in_one_line(tmp_path):
    path = tmp_path / "small.csv"
    pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=3, freq="h"), "x": [1.0, 2.0, 3.0]}).to_csv(path,
                                                                                                       index=False)
    assert_one_line_error(run_cli("inspect", "--data", str(path), "--partition-by", "fortnight"), 2,
                          "--partition-by", "'fortnight'")
    assert_one_line_error(run_cli("bench", "--partition-by", "DAY", "--dry-run"), 2, "--partition-by", "TSBS")
    assert_one_line_error(run_cli("bench", "--data", str(path), "--partition-by", "none", "--dry-run"), 2,
                          "--partition-by NONE", "WAL")


# --- against a real QuestDB --------------------------------------------------------------------------------------


def _server(questdb) -> list[str]:
    return ["--host", questdb.host, "--http-port", str(questdb.http_port), "--ilp-port", str(questdb.ilp_port),
            "--server-metrics-port", str(questdb.min_port)]


def _partitioned_by(questdb, table: str) -> str:
    return questdb.client.table_layout(table).get("partitionBy")


def _tables(questdb) -> set[str]:
    _, rows = questdb.client.query("select table_name from tables()")
    return {str(row[0]) for row in rows}


@pytest.mark.slow
def test_a_bad_unit_leaves_no_table(questdb_server, tmp_path):
    path = tmp_path / "partition_bad.csv"
    pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=3, freq="h"), "x": [1.0, 2.0, 3.0]}).to_csv(path,
                                                                                                       index=False)
    questdb_server.client.drop_table("partition_bad")
    result = run_cli("bench", "--send", "--data", str(path), "--partition-by", "fortnight", *_server(questdb_server),
                     "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "--partition-by", "'fortnight'")
    assert "partition_bad" not in _tables(questdb_server)


@pytest.mark.slow
def test_a_wide_year_of_15_minute_rows_lands_exact_partitioned_as_chosen(questdb_server, tmp_path):
    rows, table = 35_136, "partition_wide_year"
    frame = pd.DataFrame(np.random.default_rng(7).normal(size=(rows, 200)), columns=[f"v{i}" for i in range(200)])
    frame.insert(0, "ts", pd.date_range("2024-01-01", periods=rows, freq="15min"))
    path = tmp_path / "wide_year.parquet"
    frame.to_parquet(path, index=False)
    questdb_server.client.drop_table(table)
    out = io.StringIO()
    try:
        record = run_bench(BenchOptions(data=str(path), table=table, send=True, transport="http", reporting_period=0,
                                        sample_interval=0, results=str(tmp_path / "bench.json"),
                                        host=questdb_server.host, http_port=questdb_server.http_port,
                                        ilp_port=questdb_server.ilp_port, server_metrics_port=questdb_server.min_port),
                           out=out)
        assert record.status == "ok" and record.validation.visible_rows == rows
        chosen = record.plan["partitioning"]
        assert chosen["by"] == _partitioned_by(questdb_server, table)
        assert chosen["by"] in ("MONTH", "YEAR") and chosen["chosen"]
        assert f"Table {table} partitioned by {chosen['by']}: " in out.getvalue()
        assert chosen["span"]["rows"] == rows and chosen["max_map_count"] > 0
        read_out = io.StringIO()
        read = run_read(ReadOptions(check_against=str(path), table=table, host=questdb_server.host,
                                    http_port=questdb_server.http_port, pg_port=questdb_server.pg_port,
                                    server_metrics_port=questdb_server.min_port, reporting_period=0,
                                    sample_interval=0, results=str(tmp_path / "read.json")), out=read_out)
        assert read.status == "ok"
        printed = read_out.getvalue()
        assert f"every value of {rows} rows equal" in printed
        assert f"Table {table} partitioned by {chosen['by']}: " in printed
    finally:
        questdb_server.client.drop_table(table)


@pytest.mark.slow
def test_an_existing_table_partitioned_otherwise_is_refused_naming_the_flag(questdb_server, tmp_path):
    table = "partition_kept"
    path = tmp_path / f"{table}.csv"
    pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=500, freq="h"), "x": np.arange(500) / 3}).to_csv(
        path, index=False)
    questdb_server.client.drop_table(table)
    try:
        made = run_cli("bench", "--send", "--data", str(path), "--partition-by", "month", *_server(questdb_server),
                       "--results", str(tmp_path / "made.json"))
        assert made.returncode == 0, made.stderr
        assert "partitioned by MONTH, as --partition-by says" in made.stdout
        assert _partitioned_by(questdb_server, table) == "MONTH"
        refused = run_cli("bench", "--send", "--data", str(path), "--keep-table", "--partition-by", "DAY",
                          *_server(questdb_server), "--results", str(tmp_path / "refused.json"))
        assert_one_line_error(refused, 2, f"table {table} exists", "partitioned by MONTH, this run's by DAY",
                              "--partition-by MONTH matches it")
        read = run_cli("read", "--check-against", str(path), "--partition-by", "day", "--host", questdb_server.host,
                       "--http-port", str(questdb_server.http_port), "--pg-port", str(questdb_server.pg_port),
                       "--server-metrics-port", str(questdb_server.min_port), "--results",
                       str(tmp_path / "read.json"))
        assert_one_line_error(read, 2, "--partition-by DAY", f"table {table} is partitioned by MONTH")
        assert questdb_server.client.count(table) == 500
    finally:
        questdb_server.client.drop_table(table)


@pytest.mark.slow
def test_paths_make_every_paths_table_with_one_partitioning(questdb_server, tmp_path):
    path = tmp_path / "three_years.csv"
    pd.DataFrame({"day": pd.date_range("2021-01-01", periods=1096, freq="D").strftime("%Y-%m-%d"),
                  "load": np.arange(1096) / 4}).to_csv(path, index=False)
    result = run_cli("paths", "--data", str(path), "--path", "ilp-http", "--path", "http-imp", "--rounds", "1",
                     "--host", questdb_server.host, "--http-port", str(questdb_server.http_port), "--pg-port",
                     str(questdb_server.pg_port), "--ilp-port", str(questdb_server.ilp_port), "--results",
                     str(tmp_path / "paths.json"), timeout=300)
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "paths.json").read_text())
    assert record["parameters"]["partitioning"]["by"] == "YEAR"
    assert "Every path's table partitioned by YEAR: " in result.stdout
    # Each path's table read back, its values and its partitioning checked (a table partitioned otherwise differs).
    assert record["extra"]["checks"] == {"ilp-http": "exact", "http-imp": "exact"}
