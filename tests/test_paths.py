"""Every path into QuestDB (``harness.ingest_paths``), against a real QuestDB: ILP over HTTP and TCP, asyncpg's and
psycopg's INSERTs, pandas' to_sql, the /imp upload, COPY and read_parquet (asyncpg's COPY FROM STDIN, which QuestDB
refuses, in one line). Each writes TSBS's cpu-only rows and a frame with nulls, strings and
integers into a table of its own, counted back exact and read back value by value (to the microsecond: what
PGWire, /imp's pattern and the TIMESTAMP column carry); a path whose server refuses, or that finds no server, ends
in one line."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
from helpers import assert_one_line_error, free_port, run_cli

from harness.errors import RunError
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.registry import PATHS, open_writer
from harness.ingest_paths.rows import python_rows
from harness.ingest_paths.target import PathTarget
from harness.questdb.schema import create_table
from harness.read.connection import Endpoint
from harness.run.bench_options import BenchOptions
from harness.tsbs.schema import TableSchema

PATH_NAMES = [path.value for path in IngestPath]
# What QuestDB 9.3.4 refuses: asyncpg's copy_records_to_table (COPY ... FROM STDIN); what it lacks: QWP.
REFUSED = ["asyncpg-copy"]
NEEDS_QWP = ["qwp"]
TAKING = [name for name in PATH_NAMES if name not in REFUSED + NEEDS_QWP]
# The paths each written once: on the session's QuestDB, QWP's on the QWP server.
WRITING = TAKING + NEEDS_QWP


@pytest.fixture
def server_of_path(request):
    """The test's path's server: the session's QuestDB (9.3.4), or the QWP server for a path that needs QWP."""
    return request.getfixturevalue("qwp_questdb" if request.node.callspec.params["path"] in NEEDS_QWP else "questdb")


def target_of(questdb, schema: TableSchema) -> PathTarget:
    return PathTarget(Endpoint(questdb.host, questdb.http_port, questdb.pg_port), schema, questdb.ilp_port)


def fresh_table(questdb, schema: TableSchema) -> None:
    questdb.client.drop_table(schema.table)
    create_table(questdb.client, schema)


def wait_for(questdb, table: str, rows: int) -> int:
    deadline = time.monotonic() + 60
    while (count := questdb.client.count(table)) < rows and time.monotonic() < deadline:
        time.sleep(0.05)
    return count


def written(questdb, path: str, schema: TableSchema, frames: list[pd.DataFrame]) -> dict[str, list]:
    """``frames`` written by ``path`` into ``schema``'s table, made fresh; the table read back in time order, its
    values as /exec gives them (a null as None) by column."""
    fresh_table(questdb, schema)
    writer = open_writer(IngestPath(path), target_of(questdb, schema))
    try:
        if PATHS[IngestPath(path)].server_side:  # the whole file staged, then loaded once
            writer.stage(frames)
            writer.load()
        else:
            for frame in frames:
                writer.write(frame)
    finally:
        writer.close()
    rows = sum(len(frame) for frame in frames)
    assert wait_for(questdb, schema.table, rows) == rows
    names, values = questdb.client.query(f"select * from '{schema.table}' order by {schema.timestamp}")
    return {name: [row[index] for row in values] for index, name in enumerate(names)}


def cpu_only(rows: int, chunk_rows: int):
    plan = BenchOptions(row_count=rows, scale=10, seed=3, worker_chunk_row_count=chunk_rows).plan()
    (schema,) = plan.schemas
    return schema, [chunk["cpu"] for chunk in plan.chunks()]


@pytest.mark.slow
@pytest.mark.server  # its server is the path's (server_of_path)
@pytest.mark.parametrize("path", WRITING)
def test_each_path_writes_tsbs_rows_exactly(server_of_path, path):
    questdb = server_of_path
    schema, frames = cpu_only(3_000, 1_000)
    schema = schema.renamed(f"paths_cpu_{path.replace('-', '_')}")
    stored = written(questdb, path, schema, frames)
    sent = pd.concat(frames, ignore_index=True).sort_values("timestamp", kind="stable")
    assert len(stored["timestamp"]) == len(sent) == 3_000
    for tag in schema.tags:
        assert sorted(stored[tag]) == sorted(sent[tag].astype(str))
    for field, _ in schema.fields:
        assert sorted(stored[field]) == pytest.approx(sorted(sent[field]))
    # /exec gives timestamps as ISO text to the microsecond, as every path stores them here.
    assert sorted(pd.to_datetime(stored["timestamp"]).tz_localize(None)) == sorted(sent["timestamp"])


MIXED = TableSchema("paths_mixed", tags=("sensor",), fields=(("value", "DOUBLE"), ("count", "LONG"),
                                                              ("note", "VARCHAR")), timestamp="ts")


def mixed_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "sensor": pd.Categorical(["a", "b", "a", "b"]),
        "value": [1.5, np.nan, -2.25, 1e300],
        "count": pd.array([1, None, -3, 2**62], dtype="Int64"),
        "note": ["plain", None, "comma, quote \" and ü", ""],
        "ts": pd.to_datetime(["2024-01-01T00:00:00.000001", "2024-01-01T00:00:01", "2024-01-02T12:00:00.5",
                              "2024-01-03T00:00:00"], format="ISO8601"),
    })


@pytest.mark.slow
@pytest.mark.server  # its server is the path's (server_of_path)
@pytest.mark.parametrize("path", WRITING)
def test_each_path_keeps_nulls_strings_and_integers(server_of_path, path):
    questdb = server_of_path
    schema = MIXED.renamed(f"paths_mixed_{path.replace('-', '_')}")
    stored = written(questdb, path, schema, [mixed_frame()])
    assert list(stored["sensor"]) == ["a", "b", "a", "b"]
    values = list(stored["value"])
    assert values[0] == 1.5 and values[1] is None and values[2] == -2.25 and values[3] == 1e300
    assert list(stored["count"]) == [1, None, -3, 2**62]
    notes = list(stored["note"])
    assert notes[0] == "plain" and notes[1] is None and notes[2] == "comma, quote \" and ü"
    # An empty string: itself, but in CSV (/imp, COPY) an empty field, which is a null.
    assert notes[3] == (None if path in ("http-imp", "copy") else "")
    assert list(stored["ts"]) == ["2024-01-01T00:00:00.000001Z", "2024-01-01T00:00:01.000000Z",
                                  "2024-01-02T12:00:00.500000Z", "2024-01-03T00:00:00.000000Z"]


def test_a_pgwire_row_is_bound_as_python_values():
    (row, null_row) = python_rows(mixed_frame().iloc[:2], [(name, sql_type) for name, sql_type in MIXED.columns])
    assert row == ("a", 1.5, 1, "plain", pd.Timestamp("2024-01-01T00:00:00.000001").to_pydatetime())
    assert null_row[1:4] == (None, None, None)
    assert not any(isinstance(value, float) and math.isnan(value) for value in null_row)


@pytest.mark.parametrize("path", ["asyncpg", "asyncpg-copy", "psycopg", "to-sql", "http-imp", "ilp-http", "copy",
                                  "read-parquet"])
def test_a_write_the_server_refuses_is_one_line(questdb, path):
    schema = MIXED.renamed(f"paths_refused_{path.replace('-', '_')}")
    questdb.client.drop_table(schema.table)
    # A table whose "value" is BOOLEAN and "count" INT: the frame's doubles do not fit the one, its 2**62 the
    # other. (/imp stores a double into a BOOLEAN as false, silently: the INT refuses its row.)
    questdb.client.exec(f"create table '{schema.table}' (sensor SYMBOL, value BOOLEAN, count INT, note VARCHAR, "
                        f"ts TIMESTAMP) timestamp(ts) partition by DAY WAL")
    writer = open_writer(IngestPath(path), target_of(questdb, schema))
    try:
        with pytest.raises(RunError) as raised:
            writer.write(mixed_frame())
    finally:
        writer.close()
    assert "\n" not in str(raised.value) and schema.table in str(raised.value)


@pytest.mark.parametrize("path", ["asyncpg", "psycopg", "to-sql", "http-imp", "ilp-http", "ilp-tcp", "copy"])
def test_a_path_that_finds_no_server_is_one_line(path):
    port = free_port()
    target = PathTarget(Endpoint("127.0.0.1", port, port), MIXED, port)
    with pytest.raises(RunError) as raised:
        writer = open_writer(IngestPath(path), target)
        writer.write(mixed_frame())  # /imp connects on its first request
    assert "\n" not in str(raised.value)


def test_asyncpgs_copy_is_refused_by_questdb_in_one_line(questdb):
    schema = MIXED.renamed("paths_copy_refused")
    fresh_table(questdb, schema)
    writer = open_writer(IngestPath.asyncpg_copy, target_of(questdb, schema))
    try:
        with pytest.raises(RunError) as raised:
            writer.write(mixed_frame())
    finally:
        writer.close()
    assert str(raised.value).startswith("asyncpg COPY FROM STDIN (copy_records_to_table) into paths_copy_refused "
                                        "failed: ")
    assert questdb.client.count(schema.table) == 0


def test_to_sqls_chunks_stay_under_its_parameters():
    from harness.ingest_paths.to_sql import CHUNK_PARAMETERS, chunk_rows

    assert chunk_rows(5) == CHUNK_PARAMETERS // 5 and chunk_rows(21) * 21 <= CHUNK_PARAMETERS
    assert chunk_rows(CHUNK_PARAMETERS * 3) == 1


# What a batch with a bad row (a designated timestamp before 1970) leaves: the questdb client refuses the batch
# before sending it (ILP's serializer and QWP's columnar path alike); the PGWire transactions, COPY and read_parquet refuse it whole; /imp imports the others.
BAD_BATCH = {"ilp-http": 0, "ilp-tcp": 0, "qwp": 0, "asyncpg": 0, "psycopg": 0, "to-sql": 0, "http-imp": 9, "copy": 0,
             "read-parquet": 0}


@pytest.mark.slow
@pytest.mark.server  # its server is the path's (server_of_path)
@pytest.mark.parametrize("path", WRITING)
def test_the_probe_measures_what_a_batch_with_a_bad_row_leaves(server_of_path, path):
    questdb = server_of_path
    from harness.ingest_paths.probe import PROBE_ROWS, probe

    schema, frames = cpu_only(100, 100)
    schema = schema.renamed(f"paths_probe_{path.replace('-', '_')}")
    found = probe(IngestPath(path), target_of(questdb, schema), frames[0], questdb.client)
    assert found.refused is None and found.rows == PROBE_ROWS
    assert found.landed == BAD_BATCH[path]
    assert found.error is not None and "\n" not in found.error  # every path says so
    if path.startswith("ilp"):
        assert "negative" in found.error  # the client's own check
    elif path == "qwp":
        assert "cannot contain timestamps before the Unix epoch" in found.error  # QWP's own check
    elif path != "http-imp":
        assert "before 1970-01-01 is not allowed" in found.error
    assert questdb.client.count(schema.table) == 0  # left made and empty for the timing


def test_the_probe_says_why_a_path_cannot_take_the_data(questdb):
    from harness.ingest_paths.probe import probe

    schema, frames = cpu_only(100, 100)
    schema = schema.renamed("paths_probe_refused")
    found = probe(IngestPath.asyncpg_copy, target_of(questdb, schema), frames[0], questdb.client)
    assert found.refused.startswith("asyncpg COPY FROM STDIN") and found.landed is None and found.outcome == "-"


def test_a_table_a_path_makes_is_set_against_the_runs():
    from harness.ingest_paths.probe import type_changes

    dtypes = {"sensor": "category", "value": "float64", "count": "Int64", "note": "str", "ts": "datetime64[us, UTC]"}
    same = [(name, sql_type) for name, sql_type in MIXED.columns]
    assert type_changes(MIXED, dtypes, same) == []
    made = [("sensor", "VARCHAR"), ("value", "DOUBLE"), ("note", "VARCHAR"), ("timestamp", "TIMESTAMP_NS"),
            ("more", "INT")]
    assert type_changes(MIXED, dtypes, made) == [
        ("sensor", "category", "SYMBOL", "VARCHAR"), ("count", "Int64", "LONG", "missing"),
        ("ts", "datetime64[us, UTC]", "TIMESTAMP", "named timestamp, TIMESTAMP_NS"), ("more", "-", "-", "extra INT")]


@pytest.mark.slow
@pytest.mark.parametrize("path, changes", [
    # ILP names the designated timestamp "timestamp" (a column of microseconds stays TIMESTAMP; cpu-only's
    # nanoseconds make it TIMESTAMP_NS over HTTP, protocol 2).
    ("ilp-http", [("ts", "TIMESTAMP", "named timestamp")]),
    ("ilp-tcp", [("ts", "TIMESTAMP", "named timestamp")]),
    ("qwp", [("ts", "TIMESTAMP", "named timestamp")]),  # as ILP: the designated timestamp named "timestamp"
    ("http-imp", []),  # the upload's schema says every type
    # COPY infers from the CSV's text: single letters as CHAR.
    ("copy", [("sensor", "SYMBOL", "CHAR")]),
])
@pytest.mark.server  # its server is the path's (server_of_path)
def test_the_table_a_path_makes_itself_is_read_back(server_of_path, path, changes):
    questdb = server_of_path
    from harness.ingest_paths.probe import made_table, type_changes

    schema = MIXED.renamed(f"paths_made_{path.replace('-', '_')}")
    made, why = made_table(IngestPath(path), target_of(questdb, schema), mixed_frame(), questdb.client)
    assert why is None, why
    assert [change[:1] + change[2:] for change in type_changes(schema, {}, made)] == changes
    assert questdb.client.table_columns(schema.table) is None  # dropped again


@pytest.mark.parametrize("path, why", [("asyncpg", "table does not exist"), ("psycopg", "table does not exist"),
                                       ("to-sql", "to_sql into paths_unmade_to_sql failed: "),
                                       ("read-parquet", "rejected")])
def test_a_path_that_makes_no_table_says_why(questdb, path, why):
    from harness.ingest_paths.probe import made_table

    schema = MIXED.renamed(f"paths_unmade_{path.replace('-', '_')}")
    made, reason = made_table(IngestPath(path), target_of(questdb, schema), mixed_frame(), questdb.client)
    assert made is None and why in reason and "\n" not in reason


def test_a_bad_batch_keeps_the_timestamps_zone():
    from harness.ingest_paths.probe import BAD_ROW, bad_batch

    frame = pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=8, freq="s", tz="UTC"), "v": range(8)})
    bad = bad_batch(frame, "ts")
    assert str(bad["ts"].dtype) == str(frame["ts"].dtype) and bad["ts"][BAD_ROW].year == 1960
    assert (bad.drop(index=BAD_ROW) == frame.drop(index=BAD_ROW)).all().all()


def test_the_server_side_paths_need_the_servers_import_root_on_this_machine(questdb):
    from harness.ingest_paths.server_side import import_root

    root, why = import_root(questdb.client, "db.example.invalid", questdb.http_port)
    assert root is None and "is not on this machine" in why
    root, why = import_root(questdb.client, "127.0.0.1", questdb.http_port)
    assert why == "" and root == questdb.root / "import"  # QuestDB's default, under the server's -d


def test_every_path_says_what_its_batch_is():
    assert set(PATHS) == set(IngestPath)
    assert all(traits.batch and traits.package for traits in PATHS.values())


# --- the command --------------------------------------------------------------------------------------------------


def server_flags(questdb) -> list[str]:
    return ["--host", questdb.host, "--http-port", str(questdb.http_port), "--pg-port", str(questdb.pg_port),
            "--ilp-port", str(questdb.ilp_port)]


def scratch_tables(questdb) -> list[str]:
    _, rows = questdb.client.query("select table_name from tables() where table_name like 'harness_paths_%'")
    return [row[0] for row in rows]


@pytest.mark.slow
def test_every_path_is_measured_against_ilp_http_and_read_back_exact(questdb, tmp_path):
    result = run_cli("paths", "--row-count", "10000", "--rounds", "1", "--scale", "10", *server_flags(questdb),
                     "--results", str(tmp_path / "paths.json"), timeout=300)
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "paths.json").read_text())
    (comparison,) = record["comparisons"]
    assert comparison["baseline"] == "ilp-http" and comparison["variants"] == TAKING
    assert record["extra"]["checks"] == dict.fromkeys(TAKING, "exact")
    for name in TAKING:
        (measured,) = [one["measurements"][name] for one in comparison["rounds"] if one["number"] == 1]
        assert measured["rows"] == 10000 and measured["seconds"] > 0 and measured["client_cpu_seconds"] > 0
        assert measured["peak_rss_bytes"] > 50 * 2**20  # a process of its own: an interpreter with pandas
    probes = record["extra"]["probes"]
    assert {name: found["bad_batch"]["landed"] for name, found in probes.items() if name in TAKING} == \
        {name: landed for name, landed in BAD_BATCH.items() if name in TAKING}
    assert probes["asyncpg-copy"]["refused"].startswith("asyncpg COPY FROM STDIN")
    made = {name: found["made_table"] for name, found in probes.items() if name in TAKING}
    assert all(made[name]["columns"] is None for name in ("asyncpg", "psycopg", "to-sql", "read-parquet"))
    assert made["http-imp"]["changes"] == [] and ["rack", "category", "SYMBOL", "INT"] in made["copy"]["changes"]
    assert "When a path makes the table itself" in result.stdout
    table = result.stdout.split("Results:")[0].splitlines()
    header = next(index for index, line in enumerate(table) if "vs ilp-http" in line)
    shown = TAKING + REFUSED  # QWP skipped: the server lacks it
    rows = [line.split() for line in table[header + 2:header + 2 + len(shown)]]
    assert [row[0] for row in rows] == shown and rows[-1][1] == "refused"
    assert "9 of 10 landed" in table[header + 2 + TAKING.index("http-imp")]
    assert table[header + 2 + len(shown)].startswith("asyncpg-copy: asyncpg COPY FROM STDIN")
    assert record["parameters"]["skipped"] == {"qwp": f"QuestDB 9.3.4 at {questdb.host}:{questdb.http_port} lacks "
                                                      f"QWP ingest: QWP ingest needs QuestDB 10.0 (or a build of its "
                                                      f"QWP line)"}
    assert "Skipped qwp: QuestDB 9.3.4" in result.stdout
    assert scratch_tables(questdb) == []  # every scratch table dropped
    # The report draws a bar chart per figure; compare sets two records side by side.
    report = run_cli("report", str(tmp_path / "paths.json"), "-o", str(tmp_path / "paths.html"))
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "paths.html").read_text()
    assert all(f"paths: paths, {unit}" in page for unit in ("M rows/s", "client CPU seconds", "server CPU seconds"))
    compared = run_cli("compare", str(tmp_path / "paths.json"), str(tmp_path / "paths.json"))
    assert compared.returncode == 0, compared.stderr
    assert sum("psycopg" in line for line in compared.stdout.splitlines()) == 2


@pytest.mark.slow
def test_a_file_path_that_loses_precision_says_where(questdb, tmp_path):
    path = tmp_path / "f32.parquet"
    pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=500, freq="s", tz="UTC"),
                  "v": np.linspace(0.1, 0.9, 500, dtype="float32")}).to_parquet(path)
    result = run_cli("paths", "--data", str(path), "--path", "ilp-http", "--path", "http-imp", "--rounds", "1",
                     *server_flags(questdb), "--results", str(tmp_path / "paths.json"), timeout=300)
    assert result.returncode == 0, result.stderr
    checks = json.loads((tmp_path / "paths.json").read_text())["extra"]["checks"]
    # A float32 goes over ILP as its double exactly; pandas' CSV prints it to float32's digits, read as a double.
    assert checks["ilp-http"] == "exact" and checks["http-imp"].startswith("differs: ") and "column v" in \
        checks["http-imp"]


@pytest.mark.slow
@pytest.mark.parametrize("flags, fragment", [
    (["--path", "carrier-pigeon"], "--path 'carrier-pigeon': not a path"),
    (["--use-case", "devops"], "devops writes 9 tables"),
    (["--table", "mine"], "--table: every path writes into a scratch table of its own"),
    (["--rounds", "0"], "--rounds"),
])
def test_bad_paths_options_are_one_line(flags, fragment):
    assert_one_line_error(run_cli("paths", *flags, "--http-port", str(free_port())), 2, fragment)


@pytest.mark.slow
def test_the_qwp_path_is_measured_against_ilp_http_on_a_server_with_qwp(qwp_questdb, tmp_path):
    path = tmp_path / "data.parquet"
    mixed = pd.concat([mixed_frame()] * 500, ignore_index=True)
    mixed["ts"] = pd.date_range("2024-01-01", periods=len(mixed), freq="s")
    mixed.to_parquet(path)
    result = run_cli("paths", "--data", str(path), "--path", "qwp", "--path", "ilp-http", "--rounds", "2",
                     "--batch-rows", "500", *server_flags(qwp_questdb), "--results", str(tmp_path / "paths.json"),
                     timeout=300)
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "paths.json").read_text())
    (comparison,) = record["comparisons"]
    assert comparison["baseline"] == "ilp-http" and comparison["variants"] == ["ilp-http", "qwp"]
    assert record["extra"]["checks"] == {"ilp-http": "exact", "qwp": "exact"}
    line = next(line for line in result.stdout.splitlines() if line.startswith("qwp "))
    assert "x [" in line  # its paired interval against ILP/HTTP


@pytest.mark.slow
def test_paths_that_no_path_takes_is_one_line(questdb, tmp_path):
    result = run_cli("paths", "--row-count", "100", "--scale", "10", "--path", "asyncpg-copy", *server_flags(questdb),
                     "--results", str(tmp_path / "paths.json"))
    assert_one_line_error(result, 1, "no path takes the data: asyncpg-copy: asyncpg COPY FROM STDIN")
    assert json.loads((tmp_path / "paths.json").read_text())["extra"]["probes"]["asyncpg-copy"]["refused"]
    assert scratch_tables(questdb) == []


@pytest.mark.slow
def test_paths_without_a_server_is_one_line():
    assert_one_line_error(run_cli("paths", "--row-count", "100", "--http-port", str(free_port())), 1)


@pytest.mark.slow
@pytest.mark.parametrize("path, package", [("asyncpg", "asyncpg"), ("to-sql", "sqlalchemy")])
def test_a_path_whose_driver_is_missing_is_one_line_naming_its_package(path, package):
    # The driver made unimportable in the command's own process, as where it was never installed.
    script = (f"import sys; sys.modules['{package}'] = None; from harness.cli import main; "
              f"main(['paths', '--path', '{path}', '--row-count', '100'])")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert_one_line_error(result, 2, f"the {path} path needs the {package} package", f"pip install {package}")


@pytest.mark.slow
def test_the_notebook_function_measures_a_dataframes_paths(questdb, tmp_path):
    import harness

    frame = mixed_frame().rename(columns={"ts": "timestamp"})
    record = harness.paths(frame, at="timestamp", paths=["ilp-http", "psycopg"], rounds=1, host=questdb.host,
                           http_port=questdb.http_port, pg_port=questdb.pg_port, ilp_port=questdb.ilp_port,
                           results=str(tmp_path / "paths.json"), quiet=True)
    assert record.extra["status"] == "ok"
    assert record.extra["checks"] == {"ilp-http": "exact", "psycopg": "exact"}
    assert record.comparisons[0].variants == ["ilp-http", "psycopg"]
