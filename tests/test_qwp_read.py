"""Reads and queries over QWP (``read --protocol qwp``, ``queries run --protocol qwp``: the client's
``QuestDB.query()``) against a real QWP server (the pinned QWP jar): a small data set loaded over QWP read back into
every kind of frame with two workers and ``--check``; a changed value caught; an iot table (NULLs, late rows) and
the user's file of every dtype (``--check-against``) equal; a server killed mid-read and a server without QWP each
ending in one line; TSBS's 16 query types answered as the reference, a rejected and a timed-out query counted. And,
without a server, the comparison's canonical form of every kind of frame and the query answer made of Arrow."""

from __future__ import annotations

import datetime
import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from helpers import assert_one_line_error, run_cli
from test_read_check_against import dtype_frame  # the file of every dtype, made as that module makes it

from harness.commands.bench import run_bench
from harness.commands.queries_run import QueriesRunOptions, run_queries
from harness.commands.read import ReadOptions, run_read
from harness.errors import RunError
from harness.frames.convert import from_pandas
from harness.frames.kinds import FrameKind
from harness.queries.answer import from_arrow, from_records
from harness.read.check import canonical, equal
from harness.read.connection import Endpoint
from harness.read.frames import BOOLEAN, DOUBLE, LONG, STRING, TIMESTAMP, TIMESTAMP_NS
from harness.read.loop import read_frames
from harness.read.slices import table_slices
from harness.records.run_record import QueryCheck
from harness.records.store import load_results
from harness.run.bench_options import BenchOptions
from harness.telemetry.phase import PhaseProgress
from harness.tsbs.query_types import QUERY_TYPES

TABLE = "qwp_read_cpu"  # not cpu, which the qwp_questdb fixture drops (the queries below load cpu, and read it)
DATA_SET = dict(seed=5, scale=10, row_count=3000)
# The query data set of tests/test_queries_run.py: 32 hosts over 25 hours, one epoch a minute (every type runs).
QUERY_DATA_SET = dict(seed=7, scale=32, timestamp_start="2016-01-01T00:00:00Z", timestamp_end="2016-01-02T01:00:00Z",
                      log_interval="60s")
QUERY_ROWS = 32 * 25 * 60


def load(server, tmp_path, **values):
    settings = dict(send=True, transport="qwp", host=server.host, http_port=server.http_port,
                    ilp_port=server.ilp_port, server_metrics_port=server.min_port,
                    results=str(tmp_path / f"load-{len(list(tmp_path.iterdir()))}.json"), reporting_period=0,
                    sample_interval=0)
    with open("/dev/null", "w") as devnull:
        record = run_bench(BenchOptions(**{**settings, **values}), out=devnull)
    assert record.status == "ok", record.error
    return record


@pytest.fixture(scope="module")
def loaded(qwp_server, tmp_path_factory):
    load(qwp_server, tmp_path_factory.mktemp("load"), table=TABLE, **DATA_SET)
    return qwp_server


def read_options(server, tmp_path, **values) -> ReadOptions:
    settings = dict(protocol="qwp", host=server.host, http_port=server.http_port, pg_port=server.pg_port,
                    server_metrics_port=server.min_port, results=str(tmp_path / "read.json"), reporting_period=0,
                    sample_interval=0)
    return ReadOptions(**{**settings, **values})


# --- read ----------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("frame", list(FrameKind))
def test_every_kind_of_frame_reads_the_table_exactly(loaded, tmp_path, frame, devnull):
    record = run_read(read_options(loaded, tmp_path, frame=frame, table=TABLE, workers=2, check=True, **DATA_SET),
                      out=devnull)
    assert record.status == "ok"
    figures = record.read
    assert record.phases["read"].rows == figures.expected_rows == figures.checked_rows == DATA_SET["row_count"]
    assert (figures.protocol, figures.frame) == ("qwp", frame) and figures.first_rows_seconds > 0
    assert record.mode == ("read-qwp-2w" if frame == FrameKind.pandas else f"read-qwp-{frame}-2w")
    assert record.phases["read"].bytes == 0  # the client hides its socket
    (written,) = load_results([record.path])
    assert written.read == figures and written.read.path() == ("qwp" if frame == "pandas" else f"qwp ({frame})")


@pytest.mark.slow
def test_frames_come_as_the_client_makes_them_in_table_order(loaded):
    slices = table_slices(loaded.client, TABLE, None, None, 2)
    endpoint = Endpoint(loaded.host, loaded.http_port, loaded.pg_port)

    def frames(kind: FrameKind) -> list:
        return list(read_frames(slices, "qwp", endpoint, 500, PhaseProgress("read", 2), kind))

    pandas_frames = frames(FrameKind.pandas)
    assert all(isinstance(frame, pd.DataFrame) for frame in pandas_frames)
    whole = pd.concat([frame.astype({"hostname": str}) for frame in pandas_frames], ignore_index=True)
    assert len(whole) == DATA_SET["row_count"] and whole["timestamp"].is_monotonic_increasing
    first = pandas_frames[0]
    # SYMBOL as a categorical, the designated timestamp as microseconds without a zone (the client's own dtypes).
    assert isinstance(first["hostname"].dtype, pd.CategoricalDtype) and first["timestamp"].dtype == "datetime64[us]"
    assert first["usage_user"].dtype == "float64" and whole["hostname"].iloc[11] == "host_1"
    arrow = frames(FrameKind.arrow)
    assert all(isinstance(table, pa.Table) for table in arrow) and sum(map(len, arrow)) == DATA_SET["row_count"]
    assert pa.types.is_dictionary(arrow[0].schema.field("hostname").type)
    assert arrow[0].schema.field("timestamp").type == pa.timestamp("us", "UTC")
    polars = frames(FrameKind.polars)
    assert all(isinstance(frame, pl.DataFrame) for frame in polars) and sum(map(len, polars)) == len(whole)
    assert isinstance(polars[0].schema["hostname"], pl.Categorical)
    arrow_backed = frames(FrameKind.pandas_arrow)
    assert all(isinstance(dtype, pd.ArrowDtype) for dtype in arrow_backed[0].dtypes)


@pytest.mark.slow
def test_the_check_catches_a_changed_value_in_every_kind_of_frame(qwp_server, tmp_path):
    table = "qwp_read_tampered"
    load(qwp_server, tmp_path, table=table, **DATA_SET)
    qwp_server.client.exec(f"update {table} set usage_nice = 0.25 where hostname = 'host_7' and "
                           f"timestamp = '2016-01-01T00:01:00.000000Z'")
    deadline = time.monotonic() + 30
    while qwp_server.client.query(f"select count() from {table} where usage_nice = 0.25")[1][0][0] != 1:
        assert time.monotonic() < deadline, "the UPDATE never became visible"
        time.sleep(0.1)
    for frame in ("pandas", "arrow", "polars"):
        results = tmp_path / f"{frame}.json"
        run = run_cli("read", "--protocol", "qwp", "--frame", frame, "--table", table, "--check", "--seed", "5",
                      "--scale", "10", "--row-count", "3000", "--host", qwp_server.host, "--http-port",
                      str(qwp_server.http_port), "--pg-port", str(qwp_server.pg_port), "--server-metrics-port",
                      str(qwp_server.min_port), "--reporting-period", "0", "--sample-interval", "0", "--results",
                      str(results), timeout=300)
        assert_one_line_error(run, 1, "error: check: row 67 (2016-01-01 00:01:00+00:00, hostname 'host_7'), column "
                                      "usage_nice: the table has 0.25, the data set ")
        record = json.loads(results.read_text())
        assert record["status"] == "failed" and record["read"]["check_error"] in run.stderr
    qwp_server.client.drop_table(table)


@pytest.mark.slow
def test_an_iot_table_with_nulls_and_late_rows_checks_equal(qwp_server, tmp_path, devnull):
    data_set = dict(use_case="iot", seed=3, scale=10, timestamp_end="2016-01-01T02:00:00Z")
    for table in ("readings", "diagnostics"):
        qwp_server.client.drop_table(table)
    load(qwp_server, tmp_path, **data_set)
    for table, frame in (("readings", "pandas"), ("diagnostics", "polars")):
        record = run_read(read_options(qwp_server, tmp_path, frame=frame, table=table, workers=2, check=True,
                                       **data_set), out=devnull)
        assert record.status == "ok" and record.read.checked_rows == record.read.expected_rows > 5000
        qwp_server.client.drop_table(table)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "qwp"])
def test_a_file_of_every_dtype_reads_back_equal_in_every_kind_of_frame(qwp_server, tmp_path, transport):
    """Sent over ILP/HTTP or QWP, read back over QWP: every dtype, its NULLs and a TIMESTAMP_NS's nanoseconds
    (QWP carries them, as HTTP does) equal to the file."""
    path = tmp_path / f"qwp_own_{transport}.parquet"
    dtype_frame(600).to_parquet(path)
    load(qwp_server, tmp_path, data=str(path), at="ts", transport=transport, replace_table=True)
    for frame in FrameKind:
        out = io.StringIO()
        record = run_read(read_options(qwp_server, tmp_path, frame=frame, check_against=str(path), workers=2), out=out)
        assert record.read.checked_rows == 600 and f"equal to {path} (24 columns)" in out.getvalue()
        assert "at microseconds" not in out.getvalue()  # no TIMESTAMP_NS column read coarser
    qwp_server.client.drop_table(path.stem)


@pytest.mark.slow
def test_a_server_killed_mid_read_ends_the_read_in_one_line(killable_qwp_questdb, tmp_path):
    load(killable_qwp_questdb, tmp_path, seed=1, scale=100, row_count=200_000)
    slices = table_slices(killable_qwp_questdb.client, "cpu", None, None, 1)
    endpoint = Endpoint(killable_qwp_questdb.host, killable_qwp_questdb.http_port, killable_qwp_questdb.pg_port)
    frames = read_frames(slices, "qwp", endpoint, 100, PhaseProgress("read", 1))
    assert len(next(frames)) > 0
    killable_qwp_questdb.kill()
    with pytest.raises(RunError) as failure:
        for _ in frames:
            pass
    message = str(failure.value)
    assert message.startswith("reading table cpu over qwp failed: ") and "\n" not in message


@pytest.mark.slow
def test_a_server_without_qwp_is_refused_before_reading(questdb, tmp_path):
    for command, results in ((["read", "--protocol", "qwp", "--table", "cpu"], tmp_path / "read.json"),
                             (["queries", "run", "--generate", "--queries", "1", "--seed", "1", "--protocol", "qwp"],
                              tmp_path / "queries.json")):
        run = run_cli(*command, "--host", questdb.host, "--http-port", str(questdb.http_port), "--pg-port",
                      str(questdb.pg_port), "--results", str(results))
        assert_one_line_error(run, 2, "QuestDB 9.3.4 at", "lacks QWP queries", "needs QuestDB 10.0")
        record = json.loads(results.read_text())
        assert record["status"] == "failed" and record["server"]["questdb_version"] == "9.3.4"
        assert record.get("read") is None  # nothing was read


@pytest.mark.slow
@pytest.mark.parametrize("args, fragments", [
    (["--protocol", "asyncpg", "--frame", "arrow"], ("--frame arrow", "--protocol asyncpg hands over pandas",
                                                     "--protocol qwp")),
    (["--protocol", "http-parquet", "--frame", "polars"], ("--frame polars", "--protocol qwp")),
])
def test_a_kind_of_frame_the_protocol_cannot_hand_over_is_refused(args, fragments):
    assert_one_line_error(run_cli("read", *args), 2, *fragments)


# --- queries run ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def query_table(qwp_server, tmp_path_factory):
    """The query data set in table cpu, sent over QWP (the queries name cpu)."""
    qwp_server.client.drop_table("cpu")
    record = load(qwp_server, tmp_path_factory.mktemp("queries"), **QUERY_DATA_SET)
    assert record.validation.visible_rows == QUERY_ROWS
    return qwp_server


def query_options(server, tmp_path, **values) -> QueriesRunOptions:
    settings = dict(generate=True, queries=2, protocol="qwp", host=server.host, http_port=server.http_port,
                    pg_port=server.pg_port, results=str(tmp_path / "queries.json"), reporting_period=0,
                    **QUERY_DATA_SET)
    return QueriesRunOptions(**{**settings, **values})


@pytest.mark.slow
def test_every_query_type_answers_as_the_reference_over_qwp(query_table, tmp_path, devnull):
    record = run_queries(query_options(query_table, tmp_path, workers=2, check=True), out=devnull)
    assert record.status == "ok"
    total = len(QUERY_TYPES) * 2
    assert record.queries.check == QueryCheck(checked=total, mismatches=0, first_mismatches=[])
    statistics = record.queries.statistics
    assert list(statistics) == [*QUERY_TYPES, "all queries"] and statistics["all queries"].count == total
    assert record.mode == "queries-qwp-2w" and record.parameters["protocol"] == "qwp"


@pytest.mark.slow
def test_the_answers_over_qwp_equal_pgwires(query_table, tmp_path, devnull):
    """Two types checked over QWP, as over PGWire on the same server: the reference agrees with both."""
    for protocol in ("qwp", "pgwire"):
        record = run_queries(query_options(query_table, tmp_path, protocol=protocol, check=True,
                                           query_types="lastpoint,single-groupby-1-1-1"), out=devnull)
        assert record.queries.check.checked == 4 and record.queries.check.mismatches == 0


def write_queries(path: Path, *queries: tuple[str, str]) -> Path:
    path.write_text("".join(json.dumps({"query_type": query_type, "label": "l", "description": "d", "sql": sql,
                                        "params": None}) + "\n" for query_type, sql in queries))
    return path


@pytest.mark.slow
def test_a_rejected_query_is_counted_and_the_others_run(query_table, tmp_path):
    path = write_queries(tmp_path / "mixed.jsonl", *[("lastpoint", "SELECT * FROM cpu latest by hostname"),
                                                     ("high-cpu-1", "SELECT * FROM no_such_table")] * 3)
    results = tmp_path / "mixed.json"
    run = run_cli("queries", "run", str(path), "--protocol", "qwp", "--workers", "2", "--host", query_table.host,
                  "--http-port", str(query_table.http_port), "--results", str(results), timeout=300)
    assert_one_line_error(run, 1, "3 of 6 queries failed", "high-cpu-1: 3 rejected", "no_such_table")
    (record,) = load_results([results])
    assert record.queries.failures == {"high-cpu-1": {"rejected": 3}}
    assert record.queries.statistics["lastpoint"].count == 3


@pytest.mark.slow
def test_a_query_over_the_timeout_is_counted_and_the_next_runs_on_a_new_connection(query_table, tmp_path):
    """The QWP server takes no per-query timeout: the runner stops waiting, counts a timeout, and goes on over a
    new connection while the old one finishes the query. Without a working timeout the slow queries would
    answer and the run end with exit 0."""
    path = write_queries(tmp_path / "slow.jsonl", *[("high-cpu-all", "SELECT sum(x) FROM long_sequence(500000000)"),
                                                    ("lastpoint", "SELECT * FROM cpu latest by hostname")] * 2)
    results = tmp_path / "slow.json"
    run = run_cli("queries", "run", str(path), "--protocol", "qwp", "--timeout", "0.5", "--host", query_table.host,
                  "--http-port", str(query_table.http_port), "--reporting-period", "0", "--results", str(results),
                  timeout=300)
    assert_one_line_error(run, 1, "2 of 4 queries failed (high-cpu-all: 2 timeout)",
                          "high-cpu-all: timeout: no answer within 0.5s")
    (record,) = load_results([results])
    assert record.queries.failures == {"high-cpu-all": {"timeout": 2}}
    assert record.queries.statistics["lastpoint"].count == 2


# --- without a server ----------------------------------------------------------------------------------------


def test_every_kind_of_frame_has_one_canonical_form():
    """The comparison reads a column of any kind of frame to the same values: NULLs, a dictionary's values,
    timestamps at the kind's unit (nanoseconds truncated toward zero), infinities as NULL."""
    frame = pd.DataFrame({
        "d": [1.5, np.nan, np.inf], "l": pd.array([7, None, -(2**62)], dtype="Int64"), "b": [True, False, True],
        "s": pd.Categorical(["a", None, "b"]), "v": pd.Series(["x", None, ""], dtype=object),
        "t": pd.to_datetime(["1969-12-31 23:59:59.999999999", None, "2024-01-01 00:00:00.000001999"],
                            format="ISO8601").astype("datetime64[ns]"),
    })
    kinds = {"d": DOUBLE, "l": LONG, "b": BOOLEAN, "s": STRING, "v": STRING, "t": TIMESTAMP}
    expected = {name: canonical(frame[name], kind) for name, kind in kinds.items()}
    assert expected["t"][0] == 0 and expected["t"][2] == 1_704_067_200_000_001 and expected["s"][1] is None
    for kind_of_frame in (FrameKind.pandas_arrow, FrameKind.arrow, FrameKind.polars):
        other = from_pandas(frame, kind_of_frame)
        for name, kind in kinds.items():
            assert equal(kind, canonical(other[name], kind), expected[name]).all(), (kind_of_frame, name)
    nanoseconds = pa.chunked_array([pa.array([-1, 5, None], pa.timestamp("ns", "UTC"))])
    assert canonical(nanoseconds, TIMESTAMP_NS).tolist()[:2] == [-1, 5]
    assert canonical(nanoseconds, TIMESTAMP).tolist()[:2] == [0, 0]


def test_an_answer_of_arrow_equals_the_same_rows_over_pgwire():
    table = pa.table({"hostname": pa.array(["h1", None]).dictionary_encode(), "m": pa.array([1.5, None]),
                      "n": pa.array([3, None], pa.int64()),
                      "timestamp": pa.array([1_000_001, -1], pa.timestamp("us", "UTC")),
                      "ns": pa.array([1_999, -1_999], pa.timestamp("ns", "UTC"))})
    epoch, micro = datetime.datetime(1970, 1, 1), datetime.timedelta(microseconds=1)
    rows = [("h1", 1.5, 3, epoch + 1_000_001 * micro, epoch + micro), (None, None, None, epoch - micro, epoch - micro)]
    assert from_arrow(table) == from_records(["hostname", "m", "n", "timestamp", "ns"], rows)
