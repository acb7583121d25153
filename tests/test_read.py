"""``read`` against a real QuestDB: a small data set loaded with ``bench --send`` read back over every
protocol QuestDB 9.3.4 serves (QWP's: tests/test_qwp_read.py) with two workers and ``--check`` (every value equal
to the regenerated data set); a changed value caught by ``--check``; an iot table (NULLs, rows out of order)
checked; and failures (an empty table, a missing one, a bad ``--sql``, a server killed mid-read) each ending in
one line, a non-zero exit and a record."""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest
from helpers import assert_one_line_error, run_cli

from harness.commands.bench import run_bench

from harness.run.bench_options import BenchOptions
from harness.report.tables import comparison_table
from harness.errors import RunError
from harness.questdb.http import QuestDBSql
from harness.telemetry.phase import PhaseProgress
from harness.commands.read import ReadOptions, run_read
from harness.read.connection import Endpoint
from harness.read.loop import read_frames
from harness.read.slices import table_slices
from harness.read.protocols import ReadProtocol, needed_features
from harness.records.store import load_results

TABLE = "read_cpu"  # not the `questdb` fixture's cpu, which it drops before each test
DATA_SET = dict(seed=5, scale=10, row_count=3000)


def _load(server, tmp_path, **values) -> None:
    settings = dict(send=True, transport="http", host=server.host, http_port=server.http_port,
                    ilp_port=server.ilp_port, server_metrics_port=server.min_port, results=str(tmp_path / "load.json"),
                    reporting_period=0, sample_interval=0)
    run_bench(BenchOptions(**{**settings, **values}), out=open("/dev/null", "w"))


@pytest.fixture(scope="module")
def loaded(questdb_server, tmp_path_factory):
    _load(questdb_server, tmp_path_factory.mktemp("load"), table=TABLE, **DATA_SET)
    return questdb_server


def read_options(server, tmp_path, **values) -> ReadOptions:
    settings = dict(host=server.host, http_port=server.http_port, pg_port=server.pg_port,
                    server_metrics_port=server.min_port, results=str(tmp_path / "read.json"), reporting_period=0)
    return ReadOptions(**{**settings, **values})


def cli(server, *args: str) -> subprocess.CompletedProcess:
    return run_cli("read", "--host", server.host, "--http-port", str(server.http_port), "--pg-port",
                   str(server.pg_port), "--server-metrics-port", str(server.min_port), "--reporting-period", "0",
                   *args, timeout=300)


# Every protocol the session's QuestDB 9.3.4 serves (QWP's reads: tests/test_qwp_read.py, on a QWP server).
@pytest.mark.parametrize("protocol", [protocol for protocol in ReadProtocol if not needed_features(protocol)])
def test_every_protocol_reads_the_table_exactly(loaded, tmp_path, protocol, devnull):
    record = run_read(read_options(loaded, tmp_path, protocol=protocol, table=TABLE, workers=2, chunk_rows=400,
                                   check=True, **DATA_SET), out=devnull)
    assert record.status == "ok"
    figures = record.read
    assert record.phases["read"].rows == figures.expected_rows == figures.checked_rows == DATA_SET["row_count"]
    assert figures.chunks >= DATA_SET["row_count"] // 400 // 2 and figures.first_rows_seconds > 0
    assert figures.peak_rss_bytes > 0 and record.phases["read"].client_cpu_seconds > 0
    # Bytes on the wire, where the driver lets them be counted.
    assert (record.phases["read"].bytes > 0) == (protocol != ReadProtocol.connectorx)
    (loaded_record,) = load_results([record.path])
    assert loaded_record.read == figures and loaded_record.kind == "read"
    assert "read" in comparison_table([loaded_record])


@pytest.mark.parametrize("protocol", [ReadProtocol.asyncpg, ReadProtocol.http_csv])
def test_frames_have_the_dtypes_bench_sends_and_come_in_table_order(loaded, protocol):
    questdb = QuestDBSql(loaded.host, loaded.http_port)
    plan = table_slices(questdb, TABLE, None, None, 3)
    endpoint = Endpoint(loaded.host, loaded.http_port, loaded.pg_port)
    frame = pd.concat(list(read_frames(plan, protocol, endpoint, 500, PhaseProgress("read", 3))), ignore_index=True)
    assert len(frame) == DATA_SET["row_count"]
    assert frame["timestamp"].dtype == "datetime64[us, UTC]" and frame["usage_user"].dtype == "float64"
    assert frame["timestamp"].is_monotonic_increasing
    assert list(frame.columns[:2]) == ["hostname", "region"] and frame["hostname"].iloc[11] == "host_1"


@pytest.mark.slow
def test_check_catches_a_changed_value(questdb, tmp_path):
    _load(questdb, tmp_path, **DATA_SET)
    questdb.client.exec("update cpu set usage_nice = 0.25 where hostname = 'host_7' and "
                        "timestamp = '2016-01-01T00:01:00.000000Z'")
    results = tmp_path / "tampered.json"
    run = cli(questdb, "--protocol", "http-csv", "--check", "--seed", "5", "--scale", "10", "--row-count", "3000",
              "--results", str(results))
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: check: row 67 (2016-01-01 00:01:00+00:00, hostname 'host_7'), column "
                               "usage_nice: the table has 0.25, the data set "), lines[0]
    record = json.loads(results.read_text())
    assert record["status"] == "failed" and record["read"]["check_error"] in lines[0]
    # The same table against another seed differs at once; against its own it was equal but for that row.
    assert cli(questdb, "--protocol", "asyncpg", "--check", "--seed", "6", "--scale", "10", "--row-count", "3000",
               "--results", str(tmp_path / "other.json")).returncode == 1


@pytest.mark.slow
def test_an_iot_table_with_nulls_and_late_rows_checks_equal(questdb, tmp_path, devnull):
    data_set = dict(use_case="iot", seed=3, scale=10, timestamp_end="2016-01-01T02:00:00Z")
    _load(questdb, tmp_path, **data_set)
    for table, protocol in (("readings", ReadProtocol.psycopg), ("diagnostics", ReadProtocol.http_parquet)):
        record = run_read(read_options(questdb, tmp_path, protocol=protocol, table=table, workers=2, chunk_rows=700,
                                       check=True, **data_set), out=devnull)
        assert record.status == "ok" and record.read.checked_rows == record.read.expected_rows > 5000


def test_a_time_range_reads_and_checks_only_its_rows(loaded, tmp_path, devnull):
    record = run_read(read_options(loaded, tmp_path, protocol="connectorx", table=TABLE, check=True,
                                   from_time="2016-01-01T00:10:00Z", to_time="2016-01-01T00:20:00Z", **DATA_SET),
                      out=devnull)
    assert record.status == "ok" and record.read.checked_rows == record.phases["read"].rows == 60 * 10


@pytest.mark.slow
@pytest.mark.parametrize("args, code, message", [
    (["--table", "no_such_table"], 2, "error: table no_such_table does not exist"),
    (["--sql", "select nonsense from"], 2, "error: --sql: "),
    (["--sql", "select 1", "--workers", "2"], 2, "error: --workers splits a table by time"),
    (["--table", "read_empty"], 1, "error: table read_empty holds no rows: nothing to read"),
])
def test_a_failure_is_one_line_and_a_record(questdb, tmp_path, args, code, message):
    questdb.client.exec("create table if not exists read_empty (x double, timestamp timestamp) timestamp(timestamp)")
    results = tmp_path / "r.json"
    run = cli(questdb, *args, "--results", str(results))
    assert_one_line_error(run, code)
    assert run.stderr.startswith(message), run.stderr
    if code == 1:  # a run that started: its record says how it ended
        assert json.loads(results.read_text())["status"] == "failed"


def test_sql_reads_its_answer(loaded, tmp_path, devnull):
    record = run_read(read_options(loaded, tmp_path, protocol="asyncpg",
                                   sql=f"select hostname, usage_user from {TABLE} where hostname = 'host_2'"),
                      out=devnull)
    assert record.status == "ok" and record.phases["read"].rows == 300 and record.read.expected_rows is None


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [ReadProtocol.asyncpg, ReadProtocol.http_csv])
def test_a_server_killed_mid_read_ends_the_read_in_one_line(killable_questdb, tmp_path, protocol):
    # Twice what http-csv's reader may hold ahead (about 50 MiB of CSV): the kill cannot come after the whole
    # answer is already in the client, however slow the machine is to deliver it.
    _load(killable_questdb, tmp_path, seed=1, scale=100, row_count=400_000)
    plan = table_slices(killable_questdb.client, "cpu", None, None, 1)
    endpoint = Endpoint(killable_questdb.host, killable_questdb.http_port, killable_questdb.pg_port)
    frames = read_frames(plan, protocol, endpoint, 100, PhaseProgress("read", 1))
    assert len(next(frames)) > 0
    killable_questdb.kill()
    with pytest.raises(RunError) as failure:
        for _ in frames:
            pass
    message = str(failure.value)
    assert message.startswith(f"reading table cpu over {protocol} failed: ") and "\n" not in message


def test_read_metrics_export_rows_and_bytes_of_the_read_phase():
    from prometheus_client import generate_latest

    from harness.telemetry.metrics import ReadRunMetrics

    metrics = ReadRunMetrics("r1", {"protocol": "asyncpg", "kind": "read"}, workers=2)
    progress = metrics.new_phase("read", 2)
    progress.add(1, 500, 12_345)
    metrics.first_rows_seconds.labels("r1").set(0.25)
    text = generate_latest(metrics.registry).decode()
    assert 'harness_rows_total{phase="read",run_id="r1",worker="1"} 500.0' in text
    assert 'harness_rows_total{phase="read",run_id="r1",worker="0"} 0.0' in text
    assert 'harness_ilp_bytes_total{phase="read",run_id="r1",worker="1"} 12345.0' in text
    assert 'harness_read_first_rows_seconds{run_id="r1"} 0.25' in text
    assert 'harness_phase{phase="read",run_id="r1"} 1.0' in text and 'phase="send"' not in text


@pytest.mark.slow
def test_a_table_made_again_with_other_column_types_reads_right(questdb, tmp_path, devnull):
    """QuestDB keeps compiled statements by their text: the same text over a table dropped and made again
    with LONG for DOUBLE columns would read the new columns as the old type (once). Each read's text is its own."""
    for fields, seed in (("double", 9), ("long", 10)):
        data_set = dict(seed=seed, scale=10, row_count=500, fields=fields)
        _load(questdb, tmp_path, **data_set)
        record = run_read(read_options(questdb, tmp_path, protocol="asyncpg", check=True, **data_set), out=devnull)
        assert record.status == "ok" and record.read.checked_rows == 500
