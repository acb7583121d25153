"""devops end to end against a real QuestDB: nine tables created, sent by 2 workers, counted and compared."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from harness.commands.bench import run_bench

from harness.run.bench_options import BenchOptions
from harness.commands.replay import ReplayOptions, run_replay
from harness.tsbs.devops import generator as devops
from harness.tsbs.devops.schema import TABLES, schemas
from harness.tsbs.use_cases import make_spec
from helpers import GOLDEN_DIR, assert_one_line_error, run_cli

GOLDEN = (GOLDEN_DIR
          / "devops_seed123_scale5_10m_10s.ilp.gz")
DATASET = dict(use_case="devops", scale=5, seed=123, timestamp_end="2016-01-01T00:10:00Z")


@pytest.fixture
def devops_questdb(questdb_server):
    for table in TABLES:
        questdb_server.client.drop_table(table)
    return questdb_server


def options(tmp_path, server, **overrides) -> BenchOptions:
    values = dict(DATASET, fields="long", worker_chunk_row_count=400, reporting_period=0, send=True,
                  results_dir=str(tmp_path / "results"), validation_query_timeout=60, host=server.host,
                  ilp_port=server.ilp_port, http_port=server.http_port)
    values.update(overrides)
    return BenchOptions(**values)


def generated(fields: str = "long") -> dict[str, pd.DataFrame]:
    spec = make_spec(**DATASET)
    chunks = list(devops.chunks(spec, 10**6, fields))
    (chunk,) = chunks
    return chunk


def server_rows(server, table: str) -> pd.DataFrame:
    columns, rows = server.client.query(f"select * from '{table}' order by timestamp, hostname")
    return pd.DataFrame(rows, columns=columns)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["tcp", "http"])
def test_bench_devops_fills_the_nine_tables_exactly(tmp_path, devops_questdb, transport, devnull):
    record = run_bench(options(tmp_path, devops_questdb, workers=2, transport=transport),
                       out=devnull)
    assert record.status == "ok"
    per_table = 60 * 5  # epochs x hosts
    assert record.phases["send"].rows == 9 * per_table
    assert record.phases["send"].tables == {table: per_table for table in TABLES}
    assert record.validation.visible_rows == 9 * per_table
    assert {table: (count.expected, count.visible) for table, count in record.validation.tables.items()} == \
        {table: (per_table, per_table) for table in TABLES}
    for table in TABLES:
        assert devops_questdb.client.count(table) == per_table
    # The server's columns are the schema's, and sampled rows of several tables are the generated ones.
    for schema in schemas("long"):
        assert devops_questdb.client.table_columns(schema.table) == schema.columns
    frames = generated()
    for table in ("cpu", "disk", "mem", "redis", "nginx"):
        ours = frames[table].sort_values(["timestamp", "hostname"], kind="stable").reset_index(drop=True)
        theirs = server_rows(devops_questdb, table)
        assert len(theirs) == len(ours)
        for row in (0, 7, len(ours) // 2, len(ours) - 1):
            for column in ours.columns:
                expected, actual = ours[column].iloc[row], theirs[column].iloc[row]
                if column == "timestamp":
                    assert pd.Timestamp(actual).value == expected.value
                elif isinstance(expected, (float, np.floating)):
                    assert actual == expected, (table, column, row)
                else:
                    assert str(actual) == str(expected), (table, column, row)


def test_bench_devops_serialize_only_counts_every_table(tmp_path, devops_questdb, devnull):
    record = run_bench(options(tmp_path, devops_questdb, send=False, fields="double", row_count=1000,
                               timestamp_end=None), out=devnull)
    assert record.phases["serialize"].rows == 1000
    assert sum(record.phases["serialize"].tables.values()) == 1000
    assert record.mode.startswith("devops-serialize")


@pytest.mark.slow
def test_replay_of_a_tsbs_devops_file_validates_nine_tables(tmp_path, devops_questdb, devnull):
    record = run_replay(ReplayOptions(path=str(GOLDEN), host=devops_questdb.host, ilp_port=devops_questdb.ilp_port,
                                      http_port=devops_questdb.http_port, results_dir=str(tmp_path),
                                      validation_query_timeout=60), out=devnull)
    assert record.status == "ok"
    assert record.parameters["use_case"] == "devops"
    assert {table: count.visible for table, count in record.validation.tables.items()} == \
        {table: 300 for table in TABLES}
    # TSBS's mem percentages ("100", "15.6...") land in DOUBLE columns.
    mem = dict(devops_questdb.client.table_columns("mem"))
    assert mem["used_percent"] == "DOUBLE" and mem["total"] == "LONG"




@pytest.mark.slow
@pytest.mark.parametrize("args,fragment", [
    (["bench", "--use-case", "devops", "--table", "mine"], "--table"),
    (["bench", "--use-case", "devops", "--op", "iterrows"], "--op iterrows"),
    (["bench", "--use-case", "trucks"], "--use-case"),
    (["generate", "--use-case", "devops-generic"], "--use-case"),
])
def test_options_that_make_no_sense_for_devops_end_in_one_line(args, fragment):
    result = run_cli(*args)
    assert_one_line_error(result, 2, fragment)
