"""QWP (``--transport qwp``: the client's ``questdb.connect()``, columnar over WebSocket) against a real QWP server
(the pinned QWP jar): TSBS's data and the user's files sent in every kind of frame, counted back exact; the row
baselines through the pool's row senders; and every flag that means nothing over QWP, or a server without it,
refused in one line before anything is sent."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import harness
from harness.commands.bench import run_bench
from harness.run.bench_options import BenchOptions
from helpers import assert_one_line_error, run_cli

ROWS = 20_000


def server_args(server) -> list[str]:
    return ["--host", server.host, "--http-port", str(server.http_port), "--ilp-port", str(server.ilp_port)]


def qwp_bench(server, results, *extra: str):
    return run_cli("bench", "--send", "--transport", "qwp", "--row-count", str(ROWS), "--scale", "100", "--seed", "3",
                   "--reporting-period", "0", "--sample-interval", "0", "--results", str(results),
                   *server_args(server), *extra, timeout=300)


def sample_frame(rows: int = 5_000) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({
        "ts": pd.date_range("2024-03-01", periods=rows, freq="s"),
        "host": pd.Categorical(rng.choice(["h1", "h2", "h3"], rows)),
        "region": rng.choice(["eu", "us"], rows),
        "load": rng.random(rows),
        "count": rng.integers(0, 1000, rows),
    })


@pytest.mark.slow
@pytest.mark.parametrize("frame", ["pandas", "arrow", "polars"])
def test_tsbs_data_over_qwp_is_counted_back_exact(qwp_questdb, tmp_path, frame):
    results = tmp_path / "r.json"
    result = qwp_bench(qwp_questdb, results, "--workers", "2", "--frame", frame)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr)
    assert qwp_questdb.client.count("cpu") == ROWS
    record = json.loads(results.read_text())
    assert record["validation"]["visible_rows"] == ROWS
    assert record["parameters"]["transport"] == "qwp"
    wire = record["plan"]["wire"]
    assert (wire["name"], wire["delivery"], wire["prefix_in_doubt"]) == ("QWP", "committed", True)
    assert record["plan"]["frame_to_client"] == f"{frame} frames as they are"
    assert "serialize" not in record["phases"] and record["phases"]["send"]["rows"] == ROWS
    assert "encodes only while it sends" in result.stdout


@pytest.mark.slow
def test_tsbs_values_over_qwp_equal_ilps(qwp_questdb, tmp_path):
    """The same seed over QWP and over ILP/HTTP into the same server: the same rows, value for value."""
    common = ("--row-count", "3000", "--scale", "10", "--seed", "9", "--fields", "long")
    tables = {}
    for transport in ("qwp", "http"):
        qwp_questdb.client.drop_table("cpu")
        result = run_cli("bench", "--send", "--transport", transport, *common, "--reporting-period", "0",
                         "--sample-interval", "0", "--results", str(tmp_path / f"{transport}.json"),
                         *server_args(qwp_questdb), timeout=300)
        assert result.returncode == 0, result.stderr
        columns, rows = qwp_questdb.client.query("select * from cpu order by hostname, timestamp")
        tables[transport] = pd.DataFrame(rows, columns=columns)
    pd.testing.assert_frame_equal(tables["qwp"], tables["http"])


@pytest.mark.slow
@pytest.mark.parametrize("op", ["iterrows", "itertuples"])
def test_the_row_baselines_go_through_the_pools_row_senders(qwp_questdb, tmp_path, op):
    results = tmp_path / "r.json"
    result = run_cli("bench", "--send", "--transport", "qwp", "--op", op, "--row-count", "2000", "--scale", "10",
                     "--reporting-period", "0", "--sample-interval", "0", "--results", str(results),
                     *server_args(qwp_questdb), timeout=300)
    assert result.returncode == 0, result.stderr
    assert qwp_questdb.client.count("cpu") == 2000


@pytest.mark.slow
@pytest.mark.parametrize("frame", ["pandas", "pandas-arrow", "arrow", "polars"])
def test_a_file_over_qwp_in_every_kind_of_frame(qwp_questdb, tmp_path, devnull, frame):
    qwp_questdb.client.drop_table("qwp_sample")
    path = tmp_path / "sample.csv.gz"
    sample_frame().to_csv(path, index=False)
    options = BenchOptions(data=str(path), send=True, transport="qwp", frame=frame, workers=2,
                           worker_chunk_row_count=1000, host=qwp_questdb.host, http_port=qwp_questdb.http_port,
                           ilp_port=qwp_questdb.ilp_port, reporting_period=0, sample_interval=0,
                           results_dir=str(tmp_path / "results"), symbols="host,region", table="qwp_sample")
    record = run_bench(options, out=devnull)
    assert record.status == "ok" and record.validation.visible_rows == 5_000
    assert qwp_questdb.client.count("qwp_sample") == 5_000
    columns, rows = qwp_questdb.client.query("select host, region, load, count from qwp_sample order by ts")
    sent = sample_frame()
    stored = pd.DataFrame(rows, columns=columns)
    assert stored["host"].tolist() == sent["host"].astype(str).tolist()
    assert stored["region"].tolist() == sent["region"].tolist()
    assert np.allclose(stored["load"], sent["load"], rtol=0, atol=1e-12)
    assert stored["count"].tolist() == sent["count"].tolist()
    qwp_questdb.client.drop_table("qwp_sample")


def test_an_arrow_frame_over_ilp_is_converted_and_the_run_says_so(questdb, tmp_path, devnull):
    questdb.client.drop_table("qwp_sample")
    path = tmp_path / "sample.parquet"
    sample_frame().to_parquet(path)
    options = BenchOptions(data=str(path), send=True, transport="http", frame="arrow", table="qwp_sample",
                           host=questdb.host,
                           http_port=questdb.http_port, ilp_port=questdb.ilp_port, reporting_period=0,
                           sample_interval=0, results_dir=str(tmp_path / "results"))
    record = run_bench(options, out=devnull)
    assert record.validation.visible_rows == 5_000
    assert "converted to pandas" in record.plan["frame_to_client"]
    questdb.client.drop_table("qwp_sample")


@pytest.mark.slow
def test_measure_takes_a_polars_frame_in_a_notebook(qwp_questdb, tmp_path):
    import polars as pl

    qwp_questdb.client.drop_table("dataframe")
    frame = pl.from_pandas(sample_frame(3_000))
    record = harness.measure(frame, transport="qwp", host=qwp_questdb.host, http_port=qwp_questdb.http_port,
                             results_dir=str(tmp_path), quiet=True, sample_interval=0)
    assert record.validation.visible_rows == 3_000
    assert record.plan["frame"] == "polars" and record.plan["frame_to_client"] == "polars frames as they are"
    table = harness.measure(pa.Table.from_pandas(sample_frame(1_000)), transport="qwp", table="from_arrow",
                            host=qwp_questdb.host, http_port=qwp_questdb.http_port, results_dir=str(tmp_path),
                            quiet=True, sample_interval=0)
    assert table.validation.visible_rows == 1_000
    for name in ("dataframe", "from_arrow"):
        qwp_questdb.client.drop_table(name)


@pytest.mark.slow
@pytest.mark.parametrize("args, fragments", [
    (["--transport", "qwp"], ("--transport qwp", "add --send")),
    (["--send", "--transport", "qwp", "--protocol-version", "2"], ("--protocol-version", "QWP")),
    (["--send", "--transport", "tcp", "--max-rows-per-batch", "100"], ("--max-rows-per-batch", "ILP/TCP")),
    (["--send", "--transport", "http", "--sender-pool-max", "2"], ("--sender-pool-max", "ILP/HTTP")),
    (["--send", "--transport", "qwp", "--sender-pool-max", "65"], ("--sender-pool-max",)),
    (["--send", "--transport", "qwp", "--max-rows-per-batch", "0"], ("--max-rows-per-batch",)),
    (["--send", "--transport", "qwp", "--frame", "polars", "--op", "iterrows"], ("--op iterrows", "--frame pandas")),
    (["--send", "--transport", "qwp", "--frame", "arrow", "--symbol-dtype", "str"], ("--symbol-dtype",)),
    (["--send", "--transport", "qwp", "--target", "sink"], ("sink", "QWP")),
])
def test_flags_that_mean_nothing_over_qwp_are_refused(args, fragments):
    result = run_cli("bench", "--row-count", "100", *args, "--dry-run")
    assert_one_line_error(result, 2, *fragments)


@pytest.mark.slow
def test_qwp_against_a_server_without_it_names_its_version(questdb, tmp_path):
    result = qwp_bench(questdb, tmp_path / "r.json")
    assert_one_line_error(result, 2, "QuestDB 9.3.4", "lacks QWP ingest", "QuestDB 10.0")
    assert questdb.client.table_columns("cpu") is None  # nothing made, nothing sent
