"""Chunks made ahead of an open loop's schedule (``--chunks-ahead``): by a process of their own, the source's
own chunks in its order, bounded in chunks and in bytes, its errors one line in the parent, stopped when
closed; a chunk the source made after its time counted as the source's lateness (``source_behind``), never as
the server's latency. Against a real QuestDB: a run says who made its chunks and how many they held."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import pandas as pd
import psutil
import pytest
from helpers import run_cli
from test_faults import SIGNALS, assert_interrupted, running, stop_when

from harness.errors import RunError, UsageError
from harness.ingest.phase_loop import ChunkStream, Worker, run_phase
from harness.open_loop.made_ahead import MadeAhead
from harness.open_loop.schedule import RateSchedule
from harness.run.bench_options import BenchOptions
from harness.telemetry.phase import PhaseProgress


def tsbs_chunks(use_case: str, rows: int, chunk_rows: int = 1000):
    return BenchOptions(use_case=use_case, row_count=rows, scale=10, seed=7, worker_chunk_row_count=chunk_rows
                        ).plan().chunks()


@pytest.mark.slow
@pytest.mark.parametrize("use_case", ["cpu-only", "devops"])
def test_a_process_makes_the_sources_own_chunks_in_its_order(use_case):
    direct = list(tsbs_chunks(use_case, 20_000))
    with MadeAhead(tsbs_chunks(use_case, 20_000), chunk_row_count=1000) as ahead:
        made = list(ahead)
    assert len(made) == len(direct) > 1
    for ours, theirs in zip(made, direct):
        assert list(ours) == list(theirs)
        for table in theirs:
            pd.testing.assert_frame_equal(ours[table], theirs[table])


def pids(count: int, pause: float = 0.0):
    """Chunks naming the process that made them."""
    for index in range(count):
        time.sleep(pause)
        yield {"t": pd.DataFrame({"pid": [os.getpid()], "index": [index]})}


@pytest.mark.slow
def test_the_chunks_are_made_in_another_process_held_at_most_as_bounded():
    with MadeAhead(pids(40), chunk_row_count=1, max_rows=5) as ahead:
        time.sleep(0.5)  # time enough to make all 40, were it not bounded
        made = [int(chunk["t"]["pid"][0]) for chunk in ahead]
        assert ahead.max_chunks == 5 and ahead.max_rows == 5
        assert 1 <= ahead.peak_chunks <= 5
    assert len(made) == 40 and set(made) != {os.getpid()} and len(set(made)) == 1
    assert ahead.cpu_seconds is not None and ahead.cpu_seconds >= 0  # its own, read before it was reaped


@pytest.mark.slow
def test_the_bound_holds_in_bytes_too_a_chunk_larger_than_it_going_alone():
    def large(count: int):
        for index in range(count):
            yield {"t": pd.DataFrame({"x": [float(index)] * 250_000})}  # 2 MB each

    with MadeAhead(large(6), chunk_row_count=250_000, max_rows=10**9, max_mib=1) as ahead:
        time.sleep(0.5)
        assert [chunk["t"]["x"][0] for chunk in ahead] == [float(index) for index in range(6)]
        assert ahead.peak_chunks == 1 and 1.5 * 2**20 < ahead.peak_bytes < 2.5 * 2**20


def failing(error: BaseException, after: int):
    yield from pids(after)
    raise error


@pytest.mark.parametrize("error, kind, message", [
    (UsageError("data.csv row 7: not a timestamp"), UsageError, "data.csv row 7: not a timestamp"),
    (ValueError("bad\nvalue"), RunError, "ValueError: bad value"),
])
def test_a_sources_error_comes_back_as_its_one_line_after_the_chunks_before_it(error, kind, message):
    with MadeAhead(failing(error, 3), chunk_row_count=1) as ahead:
        made = []
        with pytest.raises(kind) as raised:
            for chunk in ahead:
                made.append(chunk)
    assert len(made) == 3 and str(raised.value) == message
    assert type(raised.value) is kind


def test_a_maker_that_dies_is_one_error_not_a_hang():
    with MadeAhead(pids(10**6, pause=0.01), chunk_row_count=1) as ahead:
        next(ahead)
        os.kill(ahead._process.pid, signal.SIGKILL)
        with pytest.raises(RunError, match="ended unexpectedly .exit code -9"):
            for _ in ahead:
                pass


def test_closing_early_stops_the_maker():
    ahead = MadeAhead(pids(10**9), chunk_row_count=1, max_rows=3)
    next(ahead)
    process = ahead._process
    ahead.close()
    assert not process.is_alive() and process.exitcode is not None
    assert list(ahead) == []


# --- the source behind, in the schedule -----------------------------------------------------------------------


def test_a_chunk_the_source_made_late_is_the_sources_lateness_not_the_schedules():
    loop = RateSchedule(rate=10, chunk_rows=1, total_rows=1000)  # a chunk every 0.1 s, for 100 s
    loop.begin()
    stop = threading.Event()
    loop.start -= 10  # the first hundred chunks are due: nothing waits
    due = loop.intended(3)
    # The worker asked 0.05 s before chunk 3's time; the source had it 0.2 s after: 0.2 s behind.
    assert loop.wait(3, stop, (due - 0.05, due + 0.2)) == pytest.approx(due + 0.2)
    # It asked 0.3 s after the time (busy with the chunk before) and waited 0.1 s: only the wait is the source's.
    due = loop.intended(4)
    assert loop.wait(4, stop, (due + 0.3, due + 0.4)) == pytest.approx(due + 0.1)
    # Had at hand (no wait), or came before its time: nothing is the source's.
    due = loop.intended(5)
    assert loop.wait(5, stop) == due and loop.wait(6, stop, (due - 0.5, due - 0.4)) == loop.intended(6)
    behind = loop.source_behind.summary()
    assert behind.count == 2 and behind.max == pytest.approx(0.2, rel=0.01)


class Timed(Worker):
    """Notes when each chunk went out: the schedule's hand-over, without a server."""

    def __init__(self):
        self.times: list[float] = []

    def process(self, chunk) -> int:
        self.times.append(time.perf_counter())
        return 0


@pytest.mark.slow
def test_a_slow_source_shows_as_source_behind():
    def slow_third(count: int):
        for index in range(count):
            if index == 3:
                time.sleep(0.8)
            yield {"t": pd.DataFrame({"x": [index]})}

    loop = RateSchedule(rate=20, chunk_rows=1, total_rows=40)  # a chunk every 0.05 s, for 2 s
    stream = ChunkStream(slow_third(40), workers=1, depth_per_worker=1)
    progress = PhaseProgress("send", 1)
    worker = Timed()
    run_phase(progress, [worker], stream, schedule=loop)
    # Chunks 0 and 1 fill the stream's queue before the start; at the start chunk 2 joins them, and chunk 3,
    # due at 0.15 s, is begun: it comes at 0.8 s, 0.65 s behind.
    behind = loop.source_behind.summary()
    assert loop.sent_chunks == 40 and loop.schedule_delay.count == 40 and behind.count >= 1
    assert 0.4 < behind.max < 0.8


# --- a run ------------------------------------------------------------------------------------------------------


def sink_open_loop(sink, tmp_path) -> list[str]:
    """An open loop into the sink that runs for minutes unless stopped."""
    return [sys.executable, "-m", "harness", "bench", "--send", "--target", "sink", "--host", sink.host, "--ilp-port",
            str(sink.port), "--rate", "10000", "--duration", "10m", "--worker-chunk-row-count", "1000", "--scale",
            "100", "--reporting-period", "0", "--results", str(tmp_path / "r.json")]


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("signum, code, word", SIGNALS)
def test_a_signal_ends_an_open_loop_in_one_line_and_its_maker_with_it(tmp_path, socat_sink, signum, code, word):
    makers = []

    def stop(run):
        makers.extend(psutil.Process(run.pid).children())
        run.send_signal(signum)

    result = stop_when(sink_open_loop(socat_sink, tmp_path), lambda line: line.startswith("Open loop:"), stop)
    assert_interrupted(result, code, word, tmp_path / "r.json")
    assert len(makers) == 1 and not makers[0].is_running()


@pytest.mark.slow
@pytest.mark.serial
def test_a_maker_whose_run_is_killed_ends_on_its_own(tmp_path, socat_sink):
    with running(sink_open_loop(socat_sink, tmp_path)) as run:
        assert any(line.startswith("Open loop:") for line in run.stdout)
        (maker,) = psutil.Process(run.pid).children()
        run.kill()  # SIGKILL: nothing of the run's own can stop the maker
        run.communicate()
        maker.wait(timeout=10)  # psutil.TimeoutExpired, failing the test, were it still running
        assert not maker.is_running()


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("maker", ["process", "thread"])
def test_a_run_says_who_made_its_chunks_ahead_and_how_many_they_held(questdb, tmp_path, maker):
    from test_open_loop import server_args

    result = run_cli("bench", "--send", "--rate", "20000", "--duration", "2s", "--worker-chunk-row-count", "2000",
                     "--scale", "100", "--transport", "http", "--chunks-ahead", maker, *server_args(questdb),
                     "--reporting-period", "0", "--results", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    ahead = record["open_loop"]["chunks_ahead"]
    (step,) = record["open_loop"]["steps"]
    assert ahead["maker"] == maker and step["rows"] == 40_000 and step["source_behind"]["count"] >= 0
    if maker == "process":
        assert ahead["max_rows"] == 500_000 and ahead["max_mib"] == 64 and 1 <= ahead["peak_chunks"] <= 250
        assert ahead["cpu_seconds"] > 0
        assert "Chunks made ahead by a process of their own, up to 250 chunks (500,000 rows) or 64 MiB" in result.stdout
        assert "in no client CPU figure of the run" in result.stdout
    else:
        assert ahead["max_chunks"] == 2 and ahead["peak_chunks"] is None
        assert "Chunks made ahead by a thread of the scheduling process" in result.stdout
    assert record["validation"]["visible_rows"] == 40_000
