"""The run itself, for every command that leaves a record: its lifecycle written once (``session``: ``Run``, the
record written however the run ends; its metrics served while it runs, ``metered``; its time series and its
profile), its checkpoints while sending, and an interrupted phase kept in the record.

A command builds its ``RunRecord`` and its ``Lifecycle``, enters ``session`` and records phases; everything here is
the same for an ingest run, a read and a query run.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.errors import RunError, UsageError
from harness.options.declare import Spelling
from harness.records.run_record import RunRecord
from harness.records.store import Recording, reserve_results_path, write_results
from harness.report.tables import format_phase
from harness.telemetry.phase import PhaseProgress, PhaseRecord
from harness.profiling.profiled import profiled
from harness.telemetry.timeseries import Sampling, sampled

if TYPE_CHECKING:
    from harness.profiling.run_profile import Profiling
    from harness.telemetry.metrics import RunMetrics


@dataclass(frozen=True)
class Lifecycle:
    """How a run records and measures itself: where its record goes (``recording``), how its command spells the
    parameters an error names (``spelling``), its time series (``sampling``) and its profile (``profiling``: None,
    not profiled)."""

    recording: Recording
    spelling: Spelling
    sampling: Sampling
    profiling: Profiling | None = None


@contextlib.contextmanager
def session(record: RunRecord, lifecycle: Lifecycle, out: TextIO,
            metrics: Callable[[str], RunMetrics]) -> Iterator[Run]:
    """The block as one run, its lifecycle written once for every command that leaves a run record: the record
    written however it ends (``Run``), its metrics (``metrics`` makes them for the run's id; ``Run.metrics``)
    served (``metered``), both sides profiled (``harness.profiling.profiled``) and the time series sampled
    (``harness.telemetry.timeseries.sampled``) as ``lifecycle`` says.

    The series is the innermost: its last sample is taken as the block ends, before the profile is made into
    figures."""
    run = Run(record, lifecycle.recording, out, lifecycle.spelling)
    run.metrics = metrics(record.run_id)
    with metered(run, run.metrics), profiled(lifecycle.profiling, run), \
            sampled(lifecycle.sampling, run.metrics.phases, record):
        yield run


class Run:
    """One run's record and output: ``say`` prints, ``phase`` records and prints a phase, and leaving the
    ``with`` block writes the record (where ``recording`` says), ``ok``, or ``failed``/``interrupted`` with the error
    (re-raised), the parameters it names spelled as its command says them (``spelling``)."""

    def __init__(self, record: RunRecord, recording: Recording, out: TextIO, spelling: Spelling = Spelling()):
        self.record = record
        self.recording = recording
        self.out = out
        self.spelling = spelling
        # What the run holds until it ends, released first however it ends (``harness.questdb.claims``).
        self.releases: list[Callable[[], None]] = []
        # Who is handed the record once written, however the run ended (a scale-out client delivers it to its
        # run: ``harness.scaleout.delivery``).
        self.written: list[Callable[[Path], None]] = []
        # Who is told each phase's name once it is recorded (``profiled``: a profile a phase).
        self.phase_ended: list[Callable[[str], None]] = []
        # The run's Prometheus metrics, made by ``session`` for the run's id.
        self.metrics: RunMetrics | None = None
        reserve_results_path(record, recording.results, recording.results_dir)

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def phase(self, name: str, title: str | None, phase: PhaseRecord) -> None:
        self.record.phases[name] = phase
        for listener in self.phase_ended:
            listener(name)
        if title:
            self.say(format_phase(title, phase))
            if phase.client_cpu_seconds is not None:
                self.say(f"  Client CPU: {phase.client_cpu_seconds:.2f}s: {phase.client_cpu_cores:.2f} cores "
                         f"busy on average.")

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        for release in reversed(self.releases):
            release()
        if error is None:
            self.record.status = "ok"
        elif isinstance(error, KeyboardInterrupt):
            self.record.status, self.record.error = "interrupted", "interrupted"
        else:
            self.record.status = "failed"
            self.record.error = self.spelling.error(error)
        try:
            path = write_results(self.record)
        except (RunError, UsageError) as exc:
            failure = RunError(str(exc))
            if error is None:
                raise failure from None
            self.say(f"error: {failure}")  # the run's own error is the one raised
            return
        self.say(f"Results: {path}")
        for hand_over in self.written:
            try:
                hand_over(path)
            except (RunError, UsageError) as exc:
                self.say(f"error: {exc}")  # the run's own outcome stands
        if self.recording.report:
            from harness.report.html import write_report  # matplotlib: only for a run that asked for its report

            try:
                self.say(f"Report: {write_report([self.record], path.with_suffix('.html'))}")
            except (UsageError, RunError) as exc:
                self.say(f"error: {exc}")  # the run's own outcome stands


@contextlib.contextmanager
def metered(run: Run, metrics: RunMetrics):
    """The block as one run: metrics served during it, its end (done or failed) in the metrics, the record
    written however it ends. The record is written (and "Results:" printed) before the metrics endpoint
    lingers: a watcher that waits for the run's end still finds the final counters served, and Prometheus
    gets its last scrape. An interrupted run does not linger: the user asked it to stop."""
    interrupted = False
    try:
        with run:
            try:
                metrics.start()
                yield
                metrics.set_phase("done")
            except BaseException as exc:
                interrupted = isinstance(exc, KeyboardInterrupt)
                metrics.set_phase("failed")
                metrics.error(type(exc).__name__)
                raise
    finally:
        metrics.close(linger=not interrupted)


CHECKPOINT_SECONDS = 1.0


@contextlib.contextmanager
def checkpoints(run: Run, progress: PhaseProgress):
    """While sending, the record on disk says every second how many chunks the server has acknowledged,
    so that a run that dies (client killed, machine rebooted) can be resumed from there."""
    stop = threading.Event()

    def write() -> None:
        run.record.acknowledged_chunks = progress.done_below
        try:
            write_results(run.record)
        except (RunError, UsageError):
            pass  # a full disk: the next checkpoint tries again, and the run's end says it in one line

    def loop() -> None:
        while not stop.wait(CHECKPOINT_SECONDS):
            write()

    thread = threading.Thread(target=loop, name="checkpoint", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        run.record.acknowledged_chunks = progress.done_below


@contextlib.contextmanager
def recorded_if_interrupted(run: Run, progress: PhaseProgress):
    """An interrupted phase still goes into the record, with what it had done (for a send: the rows
    flushed, which over TCP is an upper bound of what the server received)."""
    try:
        yield
    except KeyboardInterrupt:
        run.phase(progress.phase, None, progress.record(time.perf_counter() - progress.started))
        raise
