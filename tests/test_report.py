"""The time series and the HTML report, from real runs against a real QuestDB: samples that add up to the
phase totals, the server's WAL lag rising while its apply is suspended, reports of one and of two runs that
headless Chromium renders from disk with every chart and nothing fetched, and bad input in one line."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from helpers import assert_one_line_error, run_cli
from PIL import Image, ImageStat
from questdb import Sender

from harness.report.html import write_report
from prerequisites import chromium_path, require
from harness.records.store import load_results
from harness.commands.bench import run_bench
from harness.run.bench_options import BenchOptions
from harness.telemetry.timeseries import Sampler
from harness.tsbs.cpu_only import generator as cpu_only
from harness.questdb.schema import create_table

ROOT = Path(__file__).resolve().parents[1]
# A run record of schema version 1, from before records held a time series (tests/fixtures/records/README.md).
RECORD_V1 = ROOT / "tests" / "fixtures" / "records" / "run-record-v1.json"


def bench(tmp_path, questdb, name: str, **overrides):
    values = dict(send=True, host=questdb.host, ilp_port=questdb.ilp_port, http_port=questdb.http_port,
                  server_metrics_port=questdb.min_port, row_count=300_000, scale=1000, seed=5, reporting_period=0,
                  sample_interval=0.2, results=str(tmp_path / f"{name}.json"))
    values.update(overrides)
    return run_bench(BenchOptions(**values), out=open("/dev/null", "w"))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, questdb_server):
    tmp_path = tmp_path_factory.mktemp("report-runs")
    return [bench(tmp_path, questdb_server, "one-thread"), bench(tmp_path, questdb_server, "two-workers", workers=2)]


@pytest.mark.slow
def test_the_time_series_adds_up_to_the_phase_totals(two_runs):
    for record in two_runs:
        samples = record.timeseries.samples
        assert len(samples) >= 3
        assert [sample.t for sample in samples] == sorted(sample.t for sample in samples)
        for phase in ("serialize", "send"):
            last = samples[-1].rows[phase]
            assert sum(last) == record.phases[phase].rows
            assert sum(samples[-1].bytes[phase]) == record.phases[phase].bytes
            # Every step's increase, summed, is the total: no sample goes backwards.
            steps = [sum(b.rows.get(phase, [0])) - sum(a.rows.get(phase, [0])) for a, b in zip(samples, samples[1:])]
            assert min(steps) >= 0 and sum(steps) + sum(samples[0].rows.get(phase, [0])) == record.phases[phase].rows
        written = [sample.server["wal_written_rows"] for sample in samples if sample.server]
        assert written and written == sorted(written) and written[-1] - written[0] > 0
        assert samples[-1].client_cpu_seconds > samples[0].client_cpu_seconds
        # The local QuestDB's own process: its CPU seconds grow while it ingests, its memory is read.
        server_cpu = [sample.server_cpu_seconds for sample in samples]
        assert None not in server_cpu and server_cpu == sorted(server_cpu) and server_cpu[-1] > server_cpu[0]
        assert all(sample.server_rss_bytes > 0 for sample in samples)


@pytest.mark.slow
def test_a_suspended_wal_apply_shows_a_rising_lag(questdb_factory):
    questdb = questdb_factory(extra_env={"QDB_DEV_MODE_ENABLED": "true"})  # SUSPEND WAL wants dev mode
    sql = questdb.client
    create_table(sql, cpu_only.schema("double"))
    sql.exec("ALTER TABLE cpu SUSPEND WAL")
    frame = next(iter(cpu_only.chunks(cpu_only_spec(), 1_000, "double")))[cpu_only.TABLE_NAME]
    sampler = Sampler({}, 0.1, f"http://{questdb.host}:{questdb.min_port}/metrics")
    try:
        with sampler, Sender.from_conf(f"http::addr={questdb.host}:{questdb.http_port};") as sender:
            # The lag before any send is the baseline; the server's metrics trail its commits by a moment,
            # so the samples are read until they show all five transactions waiting (or 20 s pass).
            wait_until(lambda: sampler.series.transactions_behind())
            baseline = sampler.series.transactions_behind()[0][1]
            for _ in range(5):
                sender.dataframe(frame, table_name="cpu", symbols=True, at="timestamp")
                sender.flush()  # one transaction each, none applied
            wait_until(lambda: sampler.series.most_transactions_behind() >= baseline + 5)
    finally:
        sql.exec("ALTER TABLE cpu RESUME WAL")
    lags = [lag for _, lag in sampler.series.transactions_behind()]
    assert max(lags) >= baseline + 5, lags


@pytest.mark.slow
def test_a_series_the_server_answers_null_for_is_left_out_of_that_sample_alone():
    """QuestDB 9.3.4 may answer ``null`` for a value while a table is made: the other series stay."""
    import http.server
    import threading

    from harness.telemetry.timeseries import server_metrics

    text = (b"# TYPE questdb_wal_written_rows_total counter\nquestdb_wal_written_rows_total 1200\n"
            b"# TYPE questdb_wal_apply_seq_txn gauge\nquestdb_wal_apply_seq_txn null\n"
            b"# TYPE questdb_memory_free gauge\nquestdb_memory_free null\n"
            b"questdb_wal_apply_writer_txn 7\n")

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        values = server_metrics(f"http://127.0.0.1:{server.server_port}/metrics")
    finally:
        server.shutdown()
    assert values == {"wal_written_rows": 1200, "writer_txn": 7}


def wait_until(condition, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def cpu_only_spec():
    from harness.tsbs.use_cases import make_spec

    return make_spec(seed=3, scale=1000, timestamp_end=None, row_limit=1_000)


@pytest.mark.slow
def test_report_of_one_run_and_of_two(tmp_path, two_runs):
    one = write_report([two_runs[0]], tmp_path / "one.html").read_text()
    assert one.count("<svg") == 4  # rows/s, MiB/s, client cores, server WAL
    assert "one-thread.json" in one and "M rows/s" in one and "time_to_visible" not in one
    assert "client and server: busy cores" in one and "QuestDB server process" in one
    both = write_report(two_runs, tmp_path / "both.html").read_text()
    assert both.count("<svg") == 2 * 4 + 1  # each run's charts and the overlay
    assert "Comparison (ratios to the first)" in both and "two-workers.json" in both
    # The command line writes the same next to the first results file by default.
    result = run_cli("report", str(two_runs[0].path), str(two_runs[1].path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Report: {two_runs[0].path.with_suffix('.html')}\n"


def chromium() -> str:
    require("chromium")
    return chromium_path()


@pytest.mark.slow
def test_chromium_renders_every_chart_from_disk_with_nothing_fetched(tmp_path, two_runs):
    page = write_report(two_runs, tmp_path / "both.html")
    text = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", text), "the report links to the network"
    # Every host name resolves to nothing: a fetch could not succeed, and the page must not need one.
    common = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
              f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg") == text.count("<svg") == 9
    assert "CONSOLE" not in dom.stderr, dom.stderr[-2000:]
    shot = tmp_path / "report.png"
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1200,4000", page.as_uri()],
                   capture_output=True, text=True, timeout=120, check=True)
    image = Image.open(shot).convert("L")
    assert image.size == (1200, 4000)
    assert ImageStat.Stat(image).stddev[0] > 10  # charts and text, not a blank page


@pytest.mark.slow
def test_bad_input_is_one_line(tmp_path):
    not_ours = tmp_path / "not-ours.json"
    not_ours.write_text(json.dumps({"hello": 1}))
    truncated = tmp_path / "truncated.json"
    truncated.write_text('{"schema_version": 2, "phases": {')
    for path, fragment in ((not_ours, "not a harness results file"), (truncated, "cannot read results file"),
                           (tmp_path / "missing.json", "cannot read results file")):
        assert_one_line_error(run_cli("report", str(path), timeout=60), 2, fragment)


def test_a_record_without_a_time_series_renders_what_it_has(tmp_path):
    records = load_results([RECORD_V1])
    text = write_report(records, tmp_path / "v1.html").read_text()
    assert "No time series in this record" in text and "<svg" not in text
    assert "Phases" in text and "Parameters" in text
