"""``tune``: the sweep around the user's own setting, alternated in rounds against the real socat sink and a real
QuestDB; its recommendation follows the paired intervals and nothing else; its code, run as printed, sends the
file; the budget ends the rounds; the scratch table is dropped however the sweep ends; the notebook API returns
the typed records."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import harness
from harness.commands.tune import SCRATCH_PREFIX, TuneOptions, run_tune
from harness.errors import UsageError
from harness.questdb.wal import wait_for_count
from harness.records.benchmark_record import Comparison, Measurement, Round
from harness.records.intervals import summarize
from harness.run.bench_options import BenchOptions
from harness.run.tune import AS_IS, Setting, grid, recommend, setting_code
from helpers import assert_one_line_error, run_cli

ROWS = 20_000


def object_strings_frame(rows: int = ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    hosts = np.array([f"host_{index}" for index in range(50)], dtype=object)
    return pd.DataFrame({
        "ts": pd.date_range("2024-05-01", periods=rows, freq="s"),
        "host": pd.Series(hosts[rng.integers(0, 50, rows)], dtype=object),
        "note": pd.Series([f"n{index % 997}" for index in range(rows)], dtype=object),
        "value": rng.random(rows),
    })


@pytest.fixture
def parquet_file(tmp_path):
    path = tmp_path / "trades.parquet"
    object_strings_frame().to_parquet(path, row_group_size=5_000)
    return str(path)


def sink_options(tmp_path, socat_sink, **overrides) -> TuneOptions:
    values = dict(sink_port=socat_sink.port, host=socat_sink.host, rounds=2, budget=300,
                  worker_chunk_row_count=2_000, results=str(tmp_path / "tune.json"))
    values.update(overrides)
    return TuneOptions(**values)


def test_the_grid_starts_from_the_users_setting_and_proposes_the_audits_conversions(parquet_file, tmp_path):
    options = BenchOptions(data=parquet_file, object_strings=True, workers=2, send=True)
    settings = grid(options, options.source(), cpus=2)
    assert settings[0] == Setting(AS_IS, {})
    names = [setting.name for setting in settings]
    assert "dtypes converted" in names and "protocol 2 (binary doubles)" in names
    assert "2 workers" not in names  # the user's own already
    assert "chunks of 2,000 rows" in names and "chunks of 50,000 rows" in names
    # Without Python-object strings the audit proposes nothing: no conversion to sweep.
    plain = BenchOptions(data=parquet_file)
    assert "dtypes converted" not in [setting.name for setting in grid(plain, plain.source(), cpus=2)]


def _comparison(ratios: dict[str, list[float]]) -> Comparison:
    """A comparison whose variants ran at the given multiples of the baseline's rows/s, round by round."""
    rounds = []
    for number in range(1, len(next(iter(ratios.values()))) + 1):
        measurements = {AS_IS: Measurement(seconds=1.0, rows=1_000)}
        measurements.update({name: Measurement(seconds=1.0 / values[number - 1], rows=1_000)
                             for name, values in ratios.items()})
        rounds.append(Round(number, list(measurements), measurements))
    comparison = Comparison("settings", AS_IS, [AS_IS, *ratios], rounds)
    comparison.summary = summarize(comparison)
    return comparison


def test_the_recommendation_is_the_best_setting_ahead_by_its_interval_else_none():
    settings = [Setting(AS_IS, {}), Setting("fast", {"workers": 2}), Setting("faster", {"workers": 4}),
                Setting("noisy", {"worker_chunk_row_count": 5})]
    ahead = recommend(_comparison({"fast": [1.2, 1.3, 1.25, 1.22, 1.28, 1.3], "faster": [1.4, 1.5, 1.45, 1.41,
                                                                                       1.48, 1.5],
                                   "noisy": [2.5, 0.5, 2.4, 0.6, 2.6, 0.4]}), settings)
    assert ahead.setting.name == "faster" and re.search(r"faster: \+4[56]% over .* 1\.4\dx \[1\.4\d-1\.50\] ahead",
                                                        ahead.text), ahead.text
    level = recommend(_comparison({"noisy": [1.5, 0.8, 1.4, 0.7, 1.6, 0.9]}), settings)
    assert level.setting is None and "level" in level.text and "keep the setting as is" in level.text
    behind = recommend(_comparison({"fast": [0.5, 0.6, 0.55, 0.5, 0.52, 0.58]}), settings)
    assert behind.setting is None and "behind" in behind.text
    single = recommend(_comparison({"fast": [1.5]}), settings)
    assert single.setting is None and "fewer than 2 rounds" in single.text


@pytest.mark.slow
def test_a_sweep_into_the_sink_records_every_setting_and_its_code_sends_the_file(parquet_file, tmp_path, socat_sink,
                                                                                 questdb, devnull):
    options = sink_options(tmp_path, socat_sink, data=parquet_file, object_strings=True, workers=2,
                           ilp_port=questdb.ilp_port, report=True)
    record = run_tune(options, devnull)
    (comparison,) = record.comparisons
    assert comparison.baseline == AS_IS and "dtypes converted" in comparison.variants
    assert len(comparison.counted_rounds()) == 2 and comparison.rounds[0].is_warm_up
    for variant in comparison.variants:
        assert comparison.summary[variant]["rows"].median == ROWS
    assert (tmp_path / "tune.html").read_text().count("<svg") >= 1
    assert record.parameters["audit"][1]["path"].startswith("Python objects")
    # Whatever the sweep recommends, the code it prints sends the file, as printed, into a real QuestDB.
    code = record.extra["code"]
    assert "questdb.Sender.from_conf" in code and f"addr={questdb.host}:{questdb.ilp_port}" in code
    questdb.client.drop_table("trades")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    wait_for_count(questdb.client, "trades", ROWS, 60)
    assert questdb.client.count("trades") == ROWS
    questdb.client.drop_table("trades")


@pytest.mark.slow
def test_the_converted_code_sends_the_file(parquet_file, tmp_path, questdb):
    """The code of the setting with every change the sweep may recommend (conversions, workers, protocol 2)."""
    options = BenchOptions(data=parquet_file, object_strings=True, convert_dtypes=True, workers=2,
                           protocol_version="2", host=questdb.host, ilp_port=questdb.ilp_port, send=True)
    code = setting_code(options.plan(), options.host, options.ilp_port)
    # The object strings are read as Arrow strings: the conversion made by the reader, not on each piece.
    assert "to_pandas(types_mapper=ARROW_STRINGS.get)" in code and "astype(object)" not in code
    questdb.client.drop_table("trades")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    wait_for_count(questdb.client, "trades", ROWS, 60)
    questdb.client.drop_table("trades")


def test_into_questdb_the_grid_tries_qwp_and_its_settings(parquet_file):
    """From ILP, QWP with each kind of frame it takes through Arrow; from QWP, its batches, a pool of a connection
    per worker, the other frames and ILP over HTTP; into the sink, neither (it answers no QWP)."""
    ilp = BenchOptions(data=parquet_file, transport="http", send=True, workers=2)
    names = [setting.name for setting in grid(ilp, ilp.source(), cpus=2)]
    assert {"QWP", "QWP, arrow frames", "QWP, polars frames", "ILP over tcp"} <= set(names)
    qwp = BenchOptions(data=parquet_file, transport="qwp", send=True, workers=2)
    names = [setting.name for setting in grid(qwp, qwp.source(), cpus=2)]
    assert {"65536 rows per QWP batch", "a pool of 2 QWP connections", "arrow frames", "polars frames",
            "pandas-arrow frames", "ILP over http"} <= set(names) and "pandas frames" not in names
    assert any(name.startswith("all of: ") and "batch 65536" in name and "pool of 2" in name for name in names)
    sink = BenchOptions(data=parquet_file, transport="tcp", send=True, target="sink")
    assert not any("QWP" in setting.name for setting in grid(sink, sink.source(), cpus=2))


@pytest.mark.slow
@pytest.mark.parametrize("frame", ["pandas", "polars"])
def test_the_qwp_code_connects_with_questdb_connect_and_sends_the_file(parquet_file, tmp_path, qwp_questdb, frame):
    options = BenchOptions(data=parquet_file, transport="qwp", frame=frame, workers=2, sender_pool_max=2,
                           host=qwp_questdb.host, http_port=qwp_questdb.http_port, ilp_port=qwp_questdb.ilp_port,
                           send=True)
    code = setting_code(options.plan(), options.host, options.ilp_port)
    assert "questdb.connect(CONF)" in code and "db.dataframe(df" in code and "Sender" not in code
    assert f"CONF = 'ws::addr={qwp_questdb.host}:{qwp_questdb.http_port};sender_pool_max=2;'" in code
    assert ("pl.from_arrow(batch)" in code) == (frame == "polars")
    qwp_questdb.client.drop_table("trades")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    wait_for_count(qwp_questdb.client, "trades", ROWS, 60)
    assert qwp_questdb.client.count("trades") == ROWS
    qwp_questdb.client.drop_table("trades")


@pytest.mark.slow
def test_a_sweep_into_a_server_without_qwp_skips_its_settings_in_a_line(parquet_file, tmp_path, questdb, devnull):
    options = TuneOptions(data=parquet_file, target="questdb", transport="http", host=questdb.host,
                          http_port=questdb.http_port, ilp_port=questdb.ilp_port, rounds=1, budget=300,
                          results=str(tmp_path / "tune.json"),
                          settings=[Setting(AS_IS, {}), Setting("QWP", {"transport": "qwp"})])
    out = io.StringIO()
    record = run_tune(options, out)
    assert record.parameters["skipped"] == {"QWP": f"QuestDB 9.3.4 at {questdb.host}:{questdb.http_port} lacks QWP "
                                                   f"ingest: QWP ingest needs QuestDB 10.0 (or a build of its QWP "
                                                   f"line)"}
    assert "Skipped QWP: QuestDB 9.3.4" in out.getvalue()
    assert record.comparisons[0].variants == [AS_IS]


@pytest.mark.slow
def test_the_budget_ends_the_rounds(parquet_file, tmp_path, socat_sink, devnull):
    record = run_tune(sink_options(tmp_path, socat_sink, data=parquet_file, rounds=50, budget=0.001), devnull)
    (comparison,) = record.comparisons
    assert len(comparison.counted_rounds()) == 1
    assert "fewer than 2 rounds" in record.extra["recommendation"]["text"]


@pytest.mark.slow
def test_into_questdb_the_scratch_table_is_dropped(parquet_file, tmp_path, questdb, devnull):
    options = TuneOptions(data=parquet_file, target="questdb", host=questdb.host, http_port=questdb.http_port,
                          ilp_port=questdb.ilp_port, rounds=1, budget=300, results=str(tmp_path / "t.json"),
                          settings=[Setting(AS_IS, {}), Setting("2 workers", {"workers": 2})])
    record = run_tune(options, devnull)
    scratch = record.parameters["scratch_table"]
    assert scratch.startswith(SCRATCH_PREFIX)
    assert questdb.client.table_columns(scratch) is None
    assert questdb.client.table_columns("trades") is None  # the file's own name was never touched
    assert all(summary["rows"].median == ROWS for summary in record.comparisons[0].summary.values())


@pytest.mark.slow
def test_a_sweep_that_fails_says_so_in_one_line_and_leaves_its_record(parquet_file, tmp_path):
    """Into QuestDB where none runs (into the sink, a sweep starts a sink of its own: tests/test_private_sink.py)."""
    from helpers import free_port

    port = free_port()
    result = run_cli("tune", "--data", parquet_file, "--target", "questdb", "--host", "127.0.0.1", "--http-port",
                     str(port), "--ilp-port", str(port), "--rounds", "1", "--results", str(tmp_path / "failed.json"))
    assert_one_line_error(result, 1, "a trial failed", f"127.0.0.1:{port}")
    assert "private no-op sink" not in result.stdout
    recorded = json.loads((tmp_path / "failed.json").read_text())
    assert recorded["extra"]["status"] == "failed" and f"127.0.0.1:{port}" in recorded["extra"]["error"]


@pytest.mark.slow
def test_a_sweep_never_names_a_table_of_yours(parquet_file):
    assert_one_line_error(run_cli("tune", "--data", parquet_file, "--table", "mine"), 2, "--table",
                          "never into a table of yours")
    with pytest.raises(UsageError, match="--keep-table"):
        run_tune(TuneOptions(data=parquet_file, keep_table=True))


@pytest.mark.slow
def test_the_notebook_api_returns_the_typed_records(socat_sink, questdb, tmp_path):
    frame = object_strings_frame(5_000)
    audits = harness.inspect(frame, quiet=True)
    assert [audit.column for audit in audits] == list(frame.columns)
    assert audits[1].path.startswith("Python objects") and audits[1].fix
    questdb.client.drop_table("api_frame")
    record = harness.measure(frame, table="api_frame", host=questdb.host, http_port=questdb.http_port,
                             ilp_port=questdb.ilp_port, results_dir=str(tmp_path), quiet=True, sample_interval=0)
    assert record.validation.visible_rows == 5_000 == questdb.client.count("api_frame")
    figures = record.to_frame()
    assert figures.loc["send", "rows"] == 5_000 and figures.loc["validate", "rows"] == 5_000
    questdb.client.drop_table("api_frame")
    sweep = harness.tune(frame, target="sink", sink_port=socat_sink.port, host=socat_sink.host, rounds=1,
                         budget=120, quiet=True, results=str(tmp_path / "api-tune.json"),
                         settings=[Setting(AS_IS, {}), Setting("dtypes converted", {"convert_dtypes": True})])
    view = sweep.to_frame()
    assert set(view.variant) == {AS_IS, "dtypes converted"}
    assert sweep.extra["code"].count("frame") >= 1  # a DataFrame's code expects it as ``frame``
