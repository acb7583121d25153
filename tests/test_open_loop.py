"""The open loop (``bench --rate``): chunks at fixed intended times, every latency from them, the freshness
probe, the backlog, thresholds. The schedule's arithmetic and the thresholds' grammar without a server; then
against a real QuestDB: a rate far below capacity is sustained with freshness percentiles and no backlog, a
rate far above it is not (and ``--threshold rate_sustained`` exits 1), and a server paused mid-run shows the
pause in the freshness of the chunks it delayed."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from helpers import assert_one_line_error, run_cli
from test_server_faults import wait_for_rows

from harness.errors import UsageError
from harness.open_loop.schedule import RateSchedule
from harness.open_loop.thresholds import Threshold, failed_lines
from harness.options.declare import check_options
from harness.records.run_record import RateStep
from harness.run.bench_options import BenchOptions
from harness.telemetry.latency import Latencies, LatencySummary, decoded

# --- the schedule -------------------------------------------------------------------------------------------


def test_chunks_are_due_at_fixed_intended_times_and_late_ones_count_from_them():
    loop = RateSchedule(rate=1000, chunk_rows=100, total_rows=1000, first_chunk=5, acknowledged=True)
    loop.begin()
    start = loop.start
    assert loop.interval == pytest.approx(0.1)
    assert loop.intended(5) == start and loop.intended(8) == pytest.approx(start + 0.3)
    # Chunk 5 on time; chunk 6 starts 0.25 s after its time (late: over an interval), its send ends 0.05 s later.
    loop.sent(5, loop.intended(5), start + 0.001, start + 0.02, {"cpu": 100})
    loop.sent(6, loop.intended(6), loop.intended(6) + 0.25, loop.intended(6) + 0.30, {"cpu": 100})
    assert loop.late_chunks == 1 and loop.sent_rows == 200 and loop.sent_chunks == 2
    delay, ack = loop.schedule_delay.summary(), loop.ack_latency.summary()
    assert delay.count == ack.count == 2
    assert delay.max == pytest.approx(0.25, rel=0.01) and ack.max == pytest.approx(0.30, rel=0.01)
    assert ack.p50 == pytest.approx(0.02, rel=0.01)


def test_the_backlog_is_the_chunks_due_that_have_not_gone_out():
    loop = RateSchedule(rate=1000, chunk_rows=100, total_rows=1000)
    loop.begin()
    # 0.35 s in, four chunks are due (at 0, 0.1, 0.2, 0.3); one has gone out.
    loop.started_chunks = 1
    assert loop.behind(loop.start + 0.35) == 300
    # Never more than the run's chunks, never below zero.
    assert loop.behind(loop.start + 100) == 900
    loop.started_chunks = 10
    assert loop.behind(loop.start + 100) == 0


def test_the_achieved_rate_counts_the_schedule_or_the_last_start_whichever_ends_later():
    loop = RateSchedule(rate=1000, chunk_rows=100, total_rows=1000)
    loop.begin()
    # The last chunk (due at 0.9 s) started on time; its answer came late: the rate was held all the same.
    loop.sent_rows, loop.last_started, loop.last_sent = 1000, loop.start + 0.9, loop.start + 3.0
    assert loop.achieved_rate() == pytest.approx(1000)
    loop.last_started = loop.start + 1.9  # it started a second late: half the rate
    assert loop.achieved_rate() == pytest.approx(500)


def test_no_chunk_starts_once_the_schedule_has_ended_and_its_rows_are_unsent():
    loop = RateSchedule(rate=1000, chunk_rows=100, total_rows=1000, grace=2.0)  # ends 1 s after its start
    loop.begin()
    start, stop = loop.start, threading.Event()
    assert loop.end == pytest.approx(start + 1.0)
    assert not loop.ended(start + 0.99) and loop.ended(start + 1.0)
    assert not loop.past_grace(start + 2.99) and loop.past_grace(start + 3.0)
    loop.sent(0, start, start, start + 0.01, {"cpu": 100})
    loop.start -= 1.5  # 1.5 s have gone by: chunk 9 (due at 0.9 s) is late, and the schedule over
    assert loop.wait(9, stop) is None and loop.started_chunks == 0
    assert loop.unsent_rows == 900


def test_a_worker_waits_for_its_chunks_time():
    loop = RateSchedule(rate=100, chunk_rows=10, total_rows=100)  # a chunk every 0.1 s
    loop.begin()
    stop = threading.Event()
    intended = loop.wait(3, stop)
    assert time.perf_counter() >= intended == pytest.approx(loop.start + 0.3)
    stop.set()  # a stopped phase does not wait
    before = time.perf_counter()
    loop.wait(50, stop)
    assert time.perf_counter() - before < 1


def test_latencies_are_an_hdr_histogram_kept_whole():
    latencies = Latencies()
    for milliseconds in range(1, 101):
        latencies.record(milliseconds / 1000)
    summary = latencies.summary()
    assert summary.count == 100
    assert summary.p50 == pytest.approx(0.050, rel=0.01) and summary.p99 == pytest.approx(0.099, rel=0.01)
    assert summary.max == pytest.approx(0.100, rel=0.01)
    assert decoded(summary).get_total_count() == 100
    assert Latencies().summary() == LatencySummary(0)


@pytest.mark.parametrize("last_delay, late_chunks, sustained", [
    (0.0, 0, True),  # on time
    (0.04, 0, True),  # 12 chunks in 3 s, the last 40 ms late (1.3 % short): never a chunk behind
    (0.4, 1, False),  # the last more than a chunk interval late
])
def test_a_rate_is_sustained_at_its_rate_or_never_a_chunk_behind(last_delay, late_chunks, sustained):
    from harness.open_loop.figures import rate_step

    schedule = RateSchedule(rate=20_000, chunk_rows=5_000, total_rows=60_000, start=100.0)
    schedule.sent_rows, schedule.sent_chunks, schedule.late_chunks = 60_000, 12, late_chunks
    schedule.last_started = schedule.intended(11) + last_delay
    figures = rate_step(schedule, None)
    assert figures.sustained is sustained and figures.achieved_rows_per_second == round(60_000 / (3 + last_delay), 1)


# --- thresholds -----------------------------------------------------------------------------------------------


def step(**figures) -> RateStep:
    values = dict(target_rows_per_second=1000, achieved_rows_per_second=1000, sustained=True, rows=1000, chunks=10,
                  late_chunks=0, max_backlog_rows=0, schedule_delay=LatencySummary(10, 0.001, 0.002, 0.003, 0.004,
                                                                                   0.005),
                  freshness=LatencySummary(10, 0.1, 0.2, 0.8, 0.9, 1.5))
    values.update(figures)
    return RateStep(**values)


def test_thresholds_are_judged_on_the_figures():
    assert Threshold.parse("freshness_p99<1s").judge([step()]).passed
    assert not Threshold.parse("freshness_max < 1s").judge([step()]).passed
    assert Threshold.parse("schedule_delay_p99<=3ms").judge([step()]).passed
    assert Threshold.parse("max_backlog<1").judge([step()]).passed
    assert not Threshold.parse("rate_sustained").judge([step(sustained=False)]).passed
    # Every step must hold it; a figure the run lacks fails it.
    assert not Threshold.parse("freshness_p99<1s").judge([step(), step(freshness=LatencySummary(5, 2, 2, 2, 2, 2))]
                                                         ).passed
    outcome = Threshold.parse("ack_p99<200ms").judge([step()])
    assert not outcome.passed and outcome.value is None
    assert failed_lines([outcome]) == ["threshold failed: ack_p99<200ms (the run has no such figure)"]
    lines = failed_lines([Threshold.parse("freshness_max<1s").judge([step()]),
                          Threshold.parse("rate_sustained").judge([step(sustained=False)])])
    assert lines == ["threshold failed: freshness_max<1s (freshness_max was 1.500s)",
                     "threshold failed: rate_sustained (rate_sustained was no)"]


@pytest.mark.parametrize("text, message", [
    ("freshness_p99", "needs a comparison"),
    ("freshness_p99<1", "is a time"),
    ("freshness_p99<fast", "is a time"),
    ("p99<1s", "unknown figure 'p99'"),
    ("rate_sustained<1", "yes or no"),
    ("max_backlog<many", "is a number"),
    ("freshness_p99 = 1s", "write FIGURE<VALUE"),
])
def test_a_threshold_that_does_not_parse_is_refused(text, message):
    with pytest.raises(UsageError, match=message):
        Threshold.parse(text)


# --- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options, message", [
    (dict(rate="0"), "--rate must be a positive number"),
    (dict(rate="-5"), "--rate must be a positive number"),
    (dict(rate="nan"), "--rate must be a positive number"),
    (dict(rate="fast"), "--rate must be a positive number"),
    (dict(rate="1000", duration="soon"), "--duration must be a duration"),
    (dict(rate="1000", duration="0s"), "--duration must be longer than zero"),
    (dict(rate="1000", probe_interval="often"), "--probe-interval must be a duration"),
    (dict(rate="1000", grace="a while"), "--grace must be a duration"),
    (dict(rate="1000", grace="0s"), "--grace must be longer than zero"),
    (dict(grace="5s"), "--grace belongs to an open-loop run"),
    (dict(rate="1000", threshold=["latency<1s"]), "unknown figure"),
    (dict(duration="10s"), "--duration belongs to an open-loop run"),
    (dict(threshold=["rate_sustained"]), "--threshold belongs to an open-loop run"),
    (dict(rate="1000", send=False), "--rate schedules the send: add --send"),
    (dict(rate="1000", clients=2), "--rate runs as one client"),
    (dict(rate="1000", target="sink", threshold=["freshness_p99<1s"]), "freshness is measured into QuestDB"),
    (dict(rate="1000", threshold=["ack_p99<1s"]), "ILP over TCP has no acknowledgement"),
    (dict(rate="1000", query_rate=5.0), "--queries FILE and --query-rate Q go together"),
    (dict(rate="1000", queries="q.jsonl"), "--queries FILE and --query-rate Q go together"),
    (dict(queries="q.jsonl", query_rate=5.0), "--queries belongs to an open-loop run"),
    (dict(rate="1000", threshold=["query_p99<1s"]), "the queries are those of --queries"),
    (dict(rate="1000", queries="no-such.jsonl", query_rate=5.0), "--queries no-such.jsonl: no such file"),
    (dict(rate="1000", queries=__file__, query_rate=5.0, query_protocol="grpc"), "pgwire or http"),
    (dict(rate="1:5", duration="1s"), "a ramp is FIRST:LAST:STEP"),
    (dict(rate="100:500:150", duration="1s"), "must land on 500"),
    (dict(rate="500:100:100", duration="1s"), "must land on 100"),
    (dict(rate="100:500:100"), "holds each rate for --duration"),
    (dict(rate="100:500:100", duration="1s", slo="never"), "--slo must be a duration"),
    (dict(search=True), "--search belongs to an open-loop run"),
    (dict(rate="1000", search=True, duration="1s"), "--search bisects between two rates"),
    (dict(rate="100:500:100", search=True, duration="1s"), "--search bisects between two rates"),
    (dict(rate="500:100", search=True, duration="1s"), "a search's range rises"),
    (dict(rate="100:500", search=True), "holds each rate for --duration"),
    (dict(rate="100:500", search=True, duration="1s", repeat=0), "--repeat"),
    (dict(rate="100:500", search=True, duration="1s", search_resolution=0.0), "--search-resolution"),
    (dict(rate="100:500:100", duration="1s", repeat=2), "--repeat runs a --search again"),
])
def test_bad_open_loop_options_are_refused(options, message):
    values = dict(send=True, row_count=1000)
    values.update(options)
    with pytest.raises(UsageError, match=message):
        options = BenchOptions(**values)
        check_options(options)
        options.check_values()


# --- the knee, searched ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("knee, low, high, resolution, found", [
    (137_000, 10_000, 1_000_000, 0.05, None),  # found: within 5 % below the knee (checked below)
    (137_000, 200_000, 1_000_000, 0.05, "none"),  # the lowest rate missed: no knee
    (5_000_000, 10_000, 1_000_000, 0.05, 1_000_000),  # the highest held: the knee is the range's end
    (137_000, 10_000, 1_000_000, 0.5, None),
])
def test_the_search_bisects_to_its_resolution(knee, low, high, resolution, found):
    from harness.open_loop.knee import search_knee

    probed = []

    def probe(rate):
        probed.append(rate)
        return step(target_rows_per_second=rate, sustained=rate <= knee)

    result = search_knee(probe, low, high, resolution, slo_seconds=1.0)
    assert probed[:2] == ([low] if found == "none" else [low, high])
    if found == "none":
        assert result is None
    elif found is not None:
        assert result == found
    else:
        missed = min(rate for rate in probed if rate > knee)
        assert result <= knee < missed and missed - result <= resolution * result
        assert len(probed) <= 2 + math.ceil(math.log2((high - low) / (resolution * low)))


def test_a_search_ends_with_what_it_found_when_the_data_runs_out():
    from harness.open_loop.knee import search_knee

    steps = iter([step(target_rows_per_second=100, sustained=True), step(target_rows_per_second=1000,
                                                                         sustained=False)])
    assert search_knee(lambda rate: next(steps, None), 100, 1000, 0.05, 1.0) == 100
    # A rate sustained whose freshness p99 is over the SLO is not held; nor one with a chunk the probe never saw.
    slow = step(target_rows_per_second=100, freshness=LatencySummary(10, 0.1, 0.2, 2.0, 2.0, 2.0))
    assert search_knee(lambda rate: slow, 100, 1000, 0.05, 1.0) is None
    assert search_knee(lambda rate: step(target_rows_per_second=100, unseen_chunks=1), 100, 1000, 0.05, 1.0) is None


def test_an_open_loop_run_cannot_be_resumed(tmp_path):
    from harness.run.bench_options import resumed_options

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": 4, "kind": "bench", "mode": "send", "status": "failed",
                                "acknowledged_chunks": 3, "seed": 1,
                                "parameters": {"exactly_once": True, "rate": "1000"}, "phases": {}}))
    with pytest.raises(UsageError, match="open loop"):
        resumed_options(str(path))


@pytest.mark.slow
def test_bad_input_on_the_command_line_is_one_line():
    result = run_cli("bench", "--send", "--rate", "0", "--row-count", "1000")
    assert_one_line_error(result, 2, "--rate must be a positive number")


# --- against QuestDB ------------------------------------------------------------------------------------------


def server_args(server) -> list[str]:
    return ["--host", server.host, "--http-port", str(server.http_port), "--ilp-port", str(server.ilp_port),
            "--server-metrics-port", str(server.server.min_port), "--reporting-period", "0"]


@pytest.mark.slow
@pytest.mark.serial
def test_a_rate_far_below_capacity_is_sustained_with_freshness_percentiles(questdb, tmp_path):
    queries = tmp_path / "q.jsonl"
    generated = run_cli("queries", "generate", "--scale", "100", "--seed", "1", "--queries", "10", "--query-type",
                        "single-groupby-1-1-1", "--timestamp-end", "2016-01-01T02:00:00Z")
    queries.write_text(generated.stdout)
    # 20,000 rows/s in chunks of 5,000 (a chunk every 250 ms) for 3 s: a few per cent of what this machine sends;
    # TSBS queries beside it over PGWire, 5 a second.
    result = run_cli("bench", "--send", "--rate", "20000", "--duration", "3s", "--worker-chunk-row-count", "5000",
                     "--transport", "http", "--scale", "100", "--seed", "1", *server_args(questdb),
                     "--pg-port", str(questdb.server.pg_port), "--queries", str(queries), "--query-rate", "5",
                     "--threshold", "rate_sustained", "--threshold", "freshness_p99<30s",
                     "--threshold", "query_p99<30s", "--results", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    (step,) = record["open_loop"]["steps"]
    assert step["sustained"] and step["rows"] == 60_000 and step["chunks"] == 12
    # The achieved rate is over the longer of the schedule and the last chunk's late start: never above the rate
    # asked; how far below is the machine's load, not the harness's correctness (a loaded CI starts the last chunk
    # tens of milliseconds late).
    assert 0 < step["achieved_rows_per_second"] <= 20_000
    assert step["freshness"]["count"] == 12 and step["acknowledged"]["count"] == 12
    assert 0 < step["freshness"]["p50"] <= step["freshness"]["p99"] <= step["freshness"]["max"]
    # Visible no sooner than the server took the rows.
    assert step["freshness"]["p50"] >= step["acknowledged"]["p50"] * 0.5
    # Caught up: nothing behind at the end, and never half the run behind (a busy machine delays a chunk or two).
    assert step["unseen_chunks"] == 0 and step["backlog"][-1][1] == 0 and step["max_backlog_rows"] < 30_000
    probe = record["open_loop"]["probe"]
    assert probe["queries"] > 0 and probe["failures"] == 0
    assert [outcome["passed"] for outcome in record["open_loop"]["thresholds"]] == [True, True, True]
    beside = record["open_loop"]["queries"]
    assert beside["done"] >= 10 and beside["latency"]["count"] == beside["done"] and not beside["failures"]
    assert list(beside["by_type"]) == ["single-groupby-1-1-1"]
    assert record["validation"]["visible_rows"] == 60_000
    assert "freshness:" in result.stdout and "Threshold rate_sustained: passed" in result.stdout


@pytest.mark.slow
@pytest.mark.serial
def test_a_rate_far_above_capacity_is_not_sustained_and_fails_its_threshold(questdb, tmp_path):
    # 50 million rows/s: far beyond what 2 cores send; the schedule (300,000 rows: 6 ms) ends with most of its
    # chunks not started, and the run says so.
    result = run_cli("bench", "--send", "--rate", "50000000", "--row-count", "300000", "--scale", "100", "--seed",
                     "1", *server_args(questdb), "--threshold", "rate_sustained", "--threshold", "max_backlog<1000000",
                     "--results", str(tmp_path / "r.json"))
    assert result.returncode == 1, result.stderr
    assert result.stderr == "error: threshold failed: rate_sustained (rate_sustained was no)\n", result.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    (step,) = record["open_loop"]["steps"]
    assert record["status"] == "ok" and record["validation"]["visible_rows"] == step["rows"]
    assert not step["sustained"] and step["max_backlog_rows"] > 0
    assert step["unsent_rows"] > 0 and step["rows"] + step["unsent_rows"] == 300_000
    # None where no chunk started before the 6 ms schedule ended (a busy machine): no rate achieved at all.
    assert step["achieved_rows_per_second"] is None or step["achieved_rows_per_second"] < 50_000_000 * 0.99
    assert "rows never sent (the schedule ended)" in result.stdout


@pytest.mark.slow
@pytest.mark.serial
def test_an_overloaded_run_ends_at_its_duration_with_the_rows_it_never_sent(questdb, tmp_path):
    # 3 million rows/s for 3 s: this machine sends a small share of it. Every late chunk going out would drain a
    # backlog of millions of rows for minutes; the run ends at its duration, its grace and its validation.
    started = time.monotonic()
    result = run_cli("bench", "--send", "--rate", "3000000", "--duration", "3s", "--grace", "5s", "--row-count",
                     "20000000", "--transport", "http", "--scale", "100", "--seed", "3", *server_args(questdb),
                     "--threshold", "rate_sustained", "--results", str(tmp_path / "r.json"), timeout=300)
    took = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert result.stderr == "error: threshold failed: rate_sustained (rate_sustained was no)\n", result.stderr
    assert took < 3 + 5 + 60, f"took {took:.0f}s"  # the duration, the grace, start-up and the validation
    record = json.loads((tmp_path / "r.json").read_text())
    (step,) = record["open_loop"]["steps"]
    assert record["status"] == "ok" and record["parameters"]["grace"] == "5s"
    assert step["unsent_rows"] > 0 and step["rows"] + step["unsent_rows"] == 9_000_000
    assert record["validation"]["visible_rows"] == step["rows"] > 0
    assert step["freshness"]["count"] + step["unseen_chunks"] == step["chunks"] and step["freshness"]["count"] > 0
    assert f"{step['unsent_rows']} rows never sent" in result.stdout
    assert "NOT sustained" in result.stdout


@pytest.mark.slow
@pytest.mark.serial
def test_a_paused_server_shows_in_the_freshness_of_the_chunks_it_delayed(killable_questdb, tmp_path):
    server = killable_questdb
    command = [sys.executable, "-m", "harness", "bench", "--send", "--rate", "20000", "--duration", "8s",
               "--worker-chunk-row-count", "2000", "--transport", "http", "--scale", "100", "--seed", "2",
               *server_args(server), "--results", str(tmp_path / "r.json")]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = server.server.pid()
    try:
        wait_for_rows(server.client, "cpu")
        time.sleep(1)
        os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        time.sleep(2)
        os.kill(pid, signal.SIGCONT)
        paused = time.monotonic() - stopped
        stdout, stderr = run.communicate(timeout=120)
    finally:
        os.kill(pid, signal.SIGCONT)
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, stderr
    (step,) = json.loads((tmp_path / "r.json").read_text())["open_loop"]["steps"]
    # The first chunk due in the pause, at most one interval (2,000 rows at 20,000 rows/s) after it began, waited
    # the rest of it out; timed from when it really went out, it would not show. The p99 of 80 chunks is the
    # second slowest: the next chunk due, one interval later.
    interval = 2_000 / 20_000
    assert step["freshness"]["max"] >= paused - interval, (paused, step["freshness"])
    assert step["freshness"]["p99"] >= paused - 2 * interval, (paused, step["freshness"])
    assert step["acknowledged"]["max"] >= paused - interval, (paused, step["acknowledged"])
    assert step["freshness"]["count"] == 80 and step["late_chunks"] > 0
    # What a closed-loop tool reports, timed from each send's start: the chunks that waited for the pause before
    # going out (a fifth of the run's) show in the open loop's p90 and vanish from it.
    from_send = step["acknowledged_from_send"]
    assert from_send["count"] == step["acknowledged"]["count"] == 80
    assert step["acknowledged"]["p90"] >= paused / 2 > from_send["p90"], (paused, step["acknowledged"], from_send)
    assert len(step["acknowledged_from_send_series"]) == len(step["acknowledged_series"]) == 80


@pytest.mark.slow
@pytest.mark.serial
def test_a_ramp_names_its_knee_beside_the_closed_loop_rate(questdb, tmp_path):
    # The closed-loop rate first, on its own, to place the ramp's rates around it.
    closed = run_cli("bench", "--send", "--stream", "--transport", "http", "--workers", "2", "--row-count", "300000",
                     "--scale", "100", "--seed", "3", *server_args(questdb), "--results", str(tmp_path / "closed.json"))
    assert closed.returncode == 0, closed.stderr
    capacity = json.loads((tmp_path / "closed.json").read_text())["phases"]["send"]
    capacity = capacity["rows"] / capacity["seconds"]
    # A tenth of it, then 2.1 and 4.1 times it: on a shared machine whose speed varies 2x for minutes (and a
    # short closed-loop run that includes its start), only rates that far apart are surely held and not.
    first, step = round(capacity * 0.1, -3), round(capacity * 2, -3)
    rates = f"{first:.0f}:{first + 2 * step:.0f}:{step:.0f}"
    result = run_cli("bench", "--send", "--rate", rates, "--duration", "2s", "--transport", "http", "--workers", "2",
                     "--scale", "100", "--seed", "3", "--slo", "2s", *server_args(questdb),
                     "--results", str(tmp_path / "ramp.json"))
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "ramp.json").read_text())["open_loop"]
    assert [step_["target_rows_per_second"] for step_ in figures["steps"]] == [first + step * n for n in range(3)]
    # A tenth of the closed-loop rate is held, four times it is not: the knee lies between.
    assert figures["steps"][0]["sustained"] and not figures["steps"][-1]["sustained"]
    knee, closed_loop = figures["knee_rows_per_second"], figures["closed_loop_rows_per_second"]
    assert closed_loop is not None and knee is not None and first <= knee < first + 2 * step
    held = [step_["target_rows_per_second"] for step_ in figures["steps"] if step_["sustained"]
            and step_["freshness"]["p99"] < 2.0]
    assert knee == max(held)
    assert f"Knee: {knee:,.0f} rows/s" in result.stdout and f"closed loop {closed_loop:,.0f} rows/s" in result.stdout


@pytest.mark.slow
@pytest.mark.serial
def test_a_repeated_search_gives_the_knees_median_and_spread(socat_sink, tmp_path):
    # Into the sink (no freshness: a rate is held when sustained), 2,000 to 400,000 rows/s to 50 %, twice; each
    # search after a closed-loop step of 400,000 rows.
    result = run_cli("bench", "--send", "--target", "sink", "--ilp-port", str(socat_sink.port), "--rate",
                     "2000:400000", "--search", "--repeat", "2", "--search-resolution", "0.5", "--duration", "1s",
                     "--grace", "2s", "--worker-chunk-row-count", "1000", "--row-count", "4000000", "--scale", "100",
                     "--reporting-period", "0", "--results", str(tmp_path / "r.json"), timeout=600)
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "r.json").read_text())["open_loop"]
    searches, steps = figures["searches"], figures["steps"]
    assert [search["repetition"] for search in searches] == [1, 2] and figures["search_resolution"] == 0.5
    for search in searches:
        probes = [probe for probe in steps if probe["search"] == search["repetition"]]
        assert [probe["target_rows_per_second"] for probe in probes[:2]] == [2000, 400000]
        knee = search["knee_rows_per_second"]
        assert knee is not None and search["closed_loop_rows_per_second"] > 0
        assert any(probe["target_rows_per_second"] == knee and probe["sustained"] for probe in probes)
        missed = [probe["target_rows_per_second"] for probe in probes if not probe["sustained"]]
        assert knee == 400000 or min(rate for rate in missed if rate > knee) - knee <= 0.5 * knee
    knees = sorted(search["knee_rows_per_second"] for search in searches)
    assert figures["knee_rows_per_second"] == pytest.approx(sum(knees) / 2)
    assert f"lowest {knees[0]:,.0f}, highest {knees[1]:,.0f}" in result.stdout
    assert "the median of 2 search(es) to 50%" in result.stdout and "Search probes:" in result.stdout


@pytest.mark.slow
@pytest.mark.serial
def test_an_open_loop_into_the_sink_keeps_its_schedule(socat_sink, tmp_path):
    result = run_cli("bench", "--send", "--target", "sink", "--ilp-port", str(socat_sink.port), "--rate", "40000",
                     "--duration", "2s", "--worker-chunk-row-count", "4000", "--scale", "100", "--workers", "2",
                     "--reporting-period", "0", "--results", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    (step,) = record["open_loop"]["steps"]
    assert step["sustained"] and step["rows"] == 80_000 and step["freshness"] is None
    assert step["acknowledged"] is None and record["open_loop"]["probe"] is None


# --- the record, the report, compare ---------------------------------------------------------------------------


def test_an_open_loop_neither_waits_on_a_full_collection_nor_on_a_long_gil_turn():
    import gc
    import sys

    from harness.open_loop.prompt_threads import SWITCH_SECONDS, prompt_threads

    interval = sys.getswitchinterval()
    with prompt_threads():
        # What existed before (the libraries' objects: tens of thousands) is out of the collector's walks.
        assert sys.getswitchinterval() == SWITCH_SECONDS and gc.get_freeze_count() > 10_000
    assert gc.get_freeze_count() == 0 and sys.getswitchinterval() == interval


def test_a_long_runs_series_stays_bounded():
    from harness.telemetry.latency import BoundedSeries

    series = BoundedSeries(limit=100)
    for index in range(10_000):
        series.add(index, index / 1000)
    assert 50 <= len(series.points) <= 100
    assert series.points[0] == [0, 0] and series.points[-1][0] > 9000  # the whole run, coarser


@pytest.mark.slow
def test_an_open_loop_record_reads_back_and_shows_in_the_report_and_compare(tmp_path):
    from harness.records.run_record import OpenLoopFigures, ProbeFigures, RunRecord, ThresholdOutcome
    from harness.records.store import load_results, write_results
    from harness.report.html import write_report
    from harness.report.tables import comparison_table

    steps = [step(target_rows_per_second=rate, backlog=[[0.0, 0], [1.0, 1000]],
                  freshness_series=[[0.1, 0.2], [0.9, 0.4]], acknowledged=LatencySummary(9, 0.1, 0.1, 0.2, 0.2, 0.3),
                  acknowledged_series=[[0.1, 0.1]], acknowledged_from_send=LatencySummary(9, 0.01, 0.01, 0.02, 0.02, 0.03),
                  acknowledged_from_send_series=[[0.1, 0.01]], unsent_rows=rate) for rate in (1000, 2000)]
    record = RunRecord(kind="bench", mode="send", parameters={"rate": "1000:2000:1000"})
    record.open_loop = OpenLoopFigures(steps, ProbeFigures(0.01, 300, 99.0, 1), [ThresholdOutcome("rate_sustained",
                                                                                                   1.0, True)],
                                       slo_seconds=1.0, closed_loop_rows_per_second=2500.0, knee_rows_per_second=2000)
    record.status = "ok"
    record.path = tmp_path / "r.json"
    write_results(record)
    (loaded,) = load_results([str(tmp_path / "r.json")])
    assert loaded.open_loop == record.open_loop
    page = write_report([loaded], tmp_path / "r.html").read_text()
    assert "open loop at 2,000 rows/s" in page and "latency against rate" in page and "knee" in page
    assert "what coordinated omission hides" in page and "acknowledged, from the send" in page
    assert "2000 rows never sent (the schedule ended)" in page
    table = comparison_table([loaded])
    assert "freshness p50" in table and "2,000" in table.splitlines()[-1]
    open_loop = table.split("\n\n")[-1].splitlines()
    assert "unsent" in open_loop[0] and " 2000 " in open_loop[-1]


@pytest.mark.slow
@pytest.mark.serial
def test_the_users_own_file_goes_out_on_the_schedule(questdb, tmp_path):
    import numpy as np
    import pandas as pd

    path = tmp_path / "open_loop_readings.parquet"  # its table's name: none of the session server's other tests
    rows = 20_000
    pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=rows, freq="s"),
                  "sensor": np.random.default_rng(1).choice(["a", "b"], rows),
                  "value": np.arange(rows, dtype="float64")}).to_parquet(path)
    result = run_cli("bench", "--send", "--data", str(path), "--rate", "20000", "--worker-chunk-row-count", "5000",
                     "--transport", "http", "--replace-table", *server_args(questdb),
                     "--results", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    (step,) = record["open_loop"]["steps"]
    assert step["rows"] == rows and step["freshness"]["count"] == 4
    assert record["validation"]["visible_rows"] == rows
