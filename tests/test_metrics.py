"""The client's live metrics (harness.telemetry.metrics.RunMetrics) as Prometheus sees them: scraped over real HTTP.

Every test scrapes the real endpoint with urllib and parses it with prometheus_client's own text parser.
The last tests run a real serialize-only benchmark with metrics on and check that the exported counters,
the results JSON's phases and its metrics snapshot all agree, per phase and per worker.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
from helpers import CLIENT_METRICS_PORT, free_port
from prometheus_client.parser import text_string_to_metric_families

from harness.commands.bench import run_bench

from harness.run.bench_options import BenchOptions
from harness.errors import UsageError
from harness.telemetry.metrics import PHASES, RunMetrics

URL = f"http://127.0.0.1:{CLIENT_METRICS_PORT}/metrics"
PARAMETERS = {"workers": "2", "transport": "tcp", "protocol": "auto", "fields": "double", "scale": "100",
              "seed": "7", "op": "dataframe", "target": "questdb"}


def scrape(url: str = URL) -> dict[tuple[str, tuple], float]:
    """One scrape: {(sample name, sorted labels): value}."""
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        assert response.headers.get_content_type() == "text/plain"
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels) -> float:
    return samples[(name, tuple(sorted({key: str(val) for key, val in labels.items()}.items())))]


def total(samples: dict, name: str, **labels) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    wanted = {key: str(val) for key, val in labels.items()}
    return sum(val for (sample, sample_labels), val in samples.items()
               if sample == name and wanted.items() <= dict(sample_labels).items())


def names(samples: dict) -> set[str]:
    return {name for name, _ in samples}


@pytest.fixture
def metrics():
    """A RunMetrics serving on the test port; stopped (without linger) whatever the test does."""
    started = []

    def make(run_id: str = "run0test0001", parameters: dict | None = None, linger: float = 0.0) -> RunMetrics:
        parameters = PARAMETERS if parameters is None else parameters
        run = RunMetrics(run_id, parameters, CLIENT_METRICS_PORT, linger, workers=int(parameters["workers"]))
        run.start()
        started.append(run)
        return run

    yield make
    for run in started:
        run.linger_seconds = 0
        run.close()


@pytest.mark.slow
def test_endpoint_exports_the_documented_names_and_labels(metrics):
    run = metrics("abcdef012345")
    samples = scrape()
    for name in ("harness_rows_total", "harness_ilp_bytes_total", "harness_flushes_total",
                 "harness_flush_duration_seconds_bucket", "harness_flush_duration_seconds_count",
                 "harness_flush_duration_seconds_sum", "harness_errors_total", "harness_phase",
                 "harness_run_start_time_seconds", "harness_run_info", "process_cpu_seconds_total"):
        assert name in names(samples), name
    assert value(samples, "harness_run_info", run_id="abcdef012345", **PARAMETERS) == 1
    start = value(samples, "harness_run_start_time_seconds", run_id=run.run_id)
    assert abs(start - time.time()) < 3600  # a Unix time, in seconds
    for phase in PHASES:
        assert value(samples, "harness_phase", run_id=run.run_id, phase=phase) == 0
    assert value(samples, "harness_errors_total", run_id=run.run_id, kind="none") == 0
    assert value(samples, "harness_flush_duration_seconds_count", run_id=run.run_id) == 0


def test_rows_bytes_and_flush_series_exist_at_zero_before_the_first_chunk(metrics):
    """rate() needs a sample before a series' first increase: with a series born at its first chunk, a
    phase shorter than the scrape interval would never show on the dashboard."""
    run = metrics(parameters={**PARAMETERS, "workers": "3"})
    samples = scrape()
    for worker in range(3):
        for phase in ("serialize", "send"):
            for name in ("harness_rows_total", "harness_ilp_bytes_total"):
                assert value(samples, name, run_id=run.run_id, phase=phase, worker=worker) == 0, (name, phase, worker)
        assert value(samples, "harness_flushes_total", run_id=run.run_id, worker=worker) == 0
    assert total(samples, "harness_rows_total", worker=3) == 0 and ("harness_rows_total", (
        ("phase", "send"), ("run_id", run.run_id), ("worker", "3"))) not in samples


def test_counters_phase_flushes_and_errors_as_scraped(metrics):
    run = metrics()
    run.set_phase("serialize")
    serialize = run.new_phase("serialize", 2)
    serialize.add(0, 1000, 50_000)
    serialize.add(1, 1000, 50_500)
    serialize.add(0, 500, 25_000)
    run.set_phase("send")
    send = run.new_phase("send", 2)
    send.add(1, 2000, 100_000)
    for seconds in (0.0002, 0.003, 0.2, 3.0):
        send.flushed(1, seconds)
    run.error("RunError")
    run.error("RunError")
    samples = scrape()
    rid = run.run_id
    assert value(samples, "harness_rows_total", run_id=rid, phase="serialize", worker=0) == 1500
    assert value(samples, "harness_rows_total", run_id=rid, phase="serialize", worker=1) == 1000
    assert value(samples, "harness_ilp_bytes_total", run_id=rid, phase="serialize", worker=0) == 75_000
    assert value(samples, "harness_ilp_bytes_total", run_id=rid, phase="send", worker=1) == 100_000
    assert value(samples, "harness_rows_total", run_id=rid, phase="send", worker=0) == 0
    assert value(samples, "harness_phase", run_id=rid, phase="send") == 1
    assert total(samples, "harness_phase", run_id=rid) == 1
    assert value(samples, "harness_flushes_total", run_id=rid, worker=1) == 4
    assert value(samples, "harness_flushes_total", run_id=rid, worker=0) == 0
    assert value(samples, "harness_flush_duration_seconds_count", run_id=rid) == 4
    assert value(samples, "harness_flush_duration_seconds_sum", run_id=rid) == pytest.approx(3.2032)
    # Cumulative buckets: 0.0002 <= 0.0005; 0.003 <= 0.005; 0.2 <= 0.25; 3.0 <= 5.0.
    assert value(samples, "harness_flush_duration_seconds_bucket", run_id=rid, le="0.0005") == 1
    assert value(samples, "harness_flush_duration_seconds_bucket", run_id=rid, le="0.005") == 2
    assert value(samples, "harness_flush_duration_seconds_bucket", run_id=rid, le="0.25") == 3
    assert value(samples, "harness_flush_duration_seconds_bucket", run_id=rid, le="2.5") == 3
    assert value(samples, "harness_flush_duration_seconds_bucket", run_id=rid, le="+Inf") == 4
    assert value(samples, "harness_errors_total", run_id=rid, kind="RunError") == 2
    # What the record stores is read from the very counters the endpoint exported.
    recorded = serialize.record(1.0)
    assert (recorded.rows, recorded.bytes) == (2500, 125_500)
    assert [(w.rows, w.bytes) for w in recorded.workers] == [(1500, 75_000), (1000, 50_500)]
    assert send.record(1.0).flushes == 4


@pytest.mark.slow
def test_concurrent_workers_lose_no_counts(metrics):
    run = metrics(parameters={**PARAMETERS, "workers": "4"})
    send = run.new_phase("send", 4)

    def work(worker: int) -> None:
        for _ in range(2000):
            send.add(worker, 10, 333)
            send.flushed(worker, 0.001)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    samples = scrape()
    assert total(samples, "harness_rows_total", run_id=run.run_id, phase="send") == 4 * 2000 * 10
    assert total(samples, "harness_ilp_bytes_total", run_id=run.run_id, phase="send") == 4 * 2000 * 333
    assert value(samples, "harness_flush_duration_seconds_count", run_id=run.run_id) == 8000
    assert total(samples, "harness_flushes_total", run_id=run.run_id) == 8000
    assert send.record(1.0).rows == 80_000 and send.record(1.0).flushes == 8000


@pytest.mark.slow
def test_endpoint_lingers_after_close_then_stops(metrics):
    run = metrics(linger=3.0)
    run.new_phase("serialize", 1).add(0, 7, 70)
    run.set_phase("done")
    closing = threading.Thread(target=run.close)
    closing.start()
    samples = scrape()
    # That scrape happened while close() slept out its linger (the thread had not returned yet).
    assert closing.is_alive()
    assert value(samples, "harness_rows_total", run_id=run.run_id, phase="serialize", worker=0) == 7
    assert value(samples, "harness_phase", run_id=run.run_id, phase="done") == 1
    closing.join(timeout=60)
    assert not closing.is_alive()
    with pytest.raises(urllib.error.URLError):
        scrape()


@pytest.mark.slow
def test_close_without_linger_stops_serving_at_once(metrics):
    run = metrics(linger=0.0)
    assert scrape()
    run.close()
    with pytest.raises(urllib.error.URLError):
        scrape()


def test_busy_port_is_a_usage_error():
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("0.0.0.0", CLIENT_METRICS_PORT))
        holder.listen()
        run = RunMetrics("busy00000001", PARAMETERS, CLIENT_METRICS_PORT)
        with pytest.raises(UsageError, match=f"--metrics-port {CLIENT_METRICS_PORT}"):
            run.start()
        run.close()  # nothing was started: a no-op


def test_without_a_port_nothing_is_served():
    run = RunMetrics("noport000001", PARAMETERS, None, linger_seconds=30.0)
    run.start()
    run.new_phase("send", 1).add(0, 5, 50)
    with pytest.raises(urllib.error.URLError):
        scrape()
    started = time.monotonic()
    run.close()  # no server: no linger either
    assert time.monotonic() - started < 30


# --- a real run ------------------------------------------------------------------------------------------


def scrape_until_finished(options: BenchOptions) -> tuple[dict, dict]:
    """Run ``options`` (metrics on CLIENT_METRICS_PORT, lingering) in a thread; scrape until the run says `done`
    or `failed`, which it does only after its last count. Returns the outcome ({"record": ...} or
    {"error": exception}) and that final scrape."""
    outcome: dict = {}

    def target() -> None:
        try:
            with open(os.devnull, "w") as devnull:
                outcome["record"] = run_bench(options, out=devnull)
        except BaseException as exc:  # reported by the caller
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    final = None
    try:
        while thread.is_alive() and final is None:
            try:
                samples = scrape()
            except urllib.error.URLError:
                time.sleep(0.05)
                continue
            phases = {dict(labels)["phase"]: val for (name, labels), val in samples.items() if name == "harness_phase"}
            if phases.get("done") == 1 or phases.get("failed") == 1:
                final = samples
            else:
                time.sleep(0.05)
    finally:
        thread.join(timeout=300)
    assert final is not None, "the run ended without a scrape while it lingered"
    return outcome, final


def run_with_scrape(options: BenchOptions) -> tuple[dict, dict]:
    """A run that must succeed: (its results record, the final scrape)."""
    outcome, final = scrape_until_finished(options)
    assert "error" not in outcome, outcome.get("error")
    return outcome["record"], final


@pytest.mark.slow
@pytest.mark.parametrize("workers", [None, 3])
def test_exported_counters_agree_with_the_results_json(tmp_path, workers):
    options = BenchOptions(scale=100, seed=7, row_count=60_000, worker_chunk_row_count=4_000, workers=workers,
                           reporting_period=0, results_dir=str(tmp_path / "results"),
                           metrics_port=CLIENT_METRICS_PORT, metrics_linger=5.0)
    record, samples = run_with_scrape(options)
    assert record.status == "ok"
    run_id = record.run_id
    assert value(samples, "harness_run_info", run_id=run_id, workers=workers or 1, transport="tcp",
                 protocol="auto", fields="double", scale=100, seed=7, op="dataframe", target="questdb") == 1

    phase = record.phases["serialize"]
    assert phase.rows == 60_000 and phase.bytes > 0
    # The record's phase == what Prometheus scraped, rows and bytes (both read the phase's one counter).
    assert total(samples, "harness_rows_total", run_id=run_id, phase="serialize") == phase.rows
    assert total(samples, "harness_ilp_bytes_total", run_id=run_id, phase="serialize") == phase.bytes
    # Per worker: the record's per-worker split (kept for more than one worker) == scrape.
    expected_workers = [(w.rows, w.bytes) for w in phase.workers] or [(phase.rows, phase.bytes)]
    assert len(expected_workers) == (workers or 1)
    for index, (rows, nbytes) in enumerate(expected_workers):
        assert value(samples, "harness_rows_total", run_id=run_id, phase="serialize", worker=index) == rows
        assert value(samples, "harness_ilp_bytes_total", run_id=run_id, phase="serialize", worker=index) == nbytes
    # Serialize only: nothing sent, no flushes, no errors.
    assert "send" not in record.phases
    assert total(samples, "harness_rows_total", run_id=run_id, phase="send") == 0
    assert total(samples, "harness_ilp_bytes_total", run_id=run_id, phase="send") == 0
    assert total(samples, "harness_flushes_total", run_id=run_id) == 0
    assert value(samples, "harness_flush_duration_seconds_count", run_id=run_id) == 0
    assert total(samples, "harness_errors_total", run_id=run_id) == 0
    assert value(samples, "harness_phase", run_id=run_id, phase="done") == 1


@pytest.mark.slow
def test_a_failed_run_exports_its_error(tmp_path):
    """Sending to a port where nothing listens fails the run; the scrape during linger shows the error
    kind and phase `failed`, and the results JSON says failed with the error."""
    closed = free_port()
    options = BenchOptions(scale=10, seed=1, row_count=1_000, worker_chunk_row_count=500, send=True,
                           target="sink", host="127.0.0.1", ilp_port=closed, reporting_period=0,
                           results_dir=str(tmp_path / "results"), metrics_port=CLIENT_METRICS_PORT, metrics_linger=5.0)
    outcome, final = scrape_until_finished(options)
    assert "error" in outcome
    assert total(final, "harness_phase", phase="failed") == 1
    kind = type(outcome["error"]).__name__
    assert total(final, "harness_errors_total", kind=kind) == 1
    results = sorted((tmp_path / "results").glob("*.json"))
    assert len(results) == 1
    record = json.loads(results[0].read_text())
    assert record["status"] == "failed"
    assert f"127.0.0.1:{closed}" in record["error"]


def test_rows_are_labelled_by_table_where_a_chunk_holds_several():
    metrics = RunMetrics("tables", {}, workers=1)
    progress = metrics.new_phase("send", 1)
    progress.add(0, 30, 3000, {"cpu": 10, "mem": 20})
    progress.add(0, 30, 3000, {"cpu": 10, "mem": 20})
    value = metrics.registry.get_sample_value
    labels = {"run_id": "tables", "phase": "send"}
    assert value("harness_table_rows_total", {**labels, "table": "cpu"}) == 20
    assert value("harness_table_rows_total", {**labels, "table": "mem"}) == 40
    assert value("harness_rows_total", {**labels, "worker": "0"}) == 60
