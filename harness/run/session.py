"""The run itself, for every command that leaves a record: its lifecycle (``Run``: the record written however
the run ends), its metrics served while it runs (``metered``), its time series (``sampled``), its
checkpoints while sending, an interrupted phase kept in the record, and the no-op sink it sends into, started
for it alone where nothing listens (``into_sink``).

A command builds its ``RunRecord``, enters ``Run`` (or ``metered``, which enters it) and records phases;
everything here is the same for an ingest run and a query run.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self, TextIO

from harness.errors import RunError, UsageError
from harness.ingest.choices import Target
from harness.records.run_record import RunRecord
from harness.records.store import reserve_results_path, write_results
from harness.report.tables import format_phase
from harness.servers.sink import SinkAddress, sink_at
from harness.telemetry.phase import PhaseProgress, PhaseRecord
from harness.telemetry.timeseries import LOCAL_HOSTS, Sampler, listening_process

if TYPE_CHECKING:
    from harness.options.groups import ProfileOptions, RecordOptions, SamplingOptions
    from harness.telemetry.metrics import RunMetrics


class Run:
    """One run's record and output: ``say`` prints, ``phase`` records and prints a phase, and leaving the
    ``with`` block writes the record, ``ok``, or ``failed``/``interrupted`` with the error (re-raised)."""

    def __init__(self, record: RunRecord, options: RecordOptions, out: TextIO):
        self.record = record
        self.options = options
        self.out = out
        # What the run holds until it ends, released first however it ends (``harness.questdb.claims``).
        self.releases: list[Callable[[], None]] = []
        # Who is handed the record once written, however the run ended (a scale-out client delivers it to its
        # run: ``harness.scaleout.delivery``).
        self.written: list[Callable[[Path], None]] = []
        # Who is told each phase's name once it is recorded (``profiled``: a profile a phase).
        self.phase_ended: list[Callable[[str], None]] = []
        reserve_results_path(record, options.results, options.results_dir)

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
            self.record.error = str(error) if isinstance(error, (RunError, UsageError)) else \
                f"{type(error).__name__}: {error}"
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
        if self.options.report:
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


@contextlib.contextmanager
def sampled(options: SamplingOptions, run: Run, phases: dict[str, PhaseProgress], overlap: bool = False):
    """The run's time series (``--sample-interval``) over the block, kept in the record however it ends.

    The first sample is the series' baseline. By default the block starts once it is taken; with ``overlap``
    the block starts at once and calls the yielded function before its first work the series must see
    whole (the send), so that checks and DDL before it overlap with the sample's ~50-65 ms."""
    if options.sample_interval <= 0:
        yield lambda: None
        return
    target = getattr(options, "target", Target.questdb)  # a read run has no sink
    # /metrics follows the harness's own HTTP requests: their login, and TLS where their string is https::
    # (a login never crosses in plain where the user asked for TLS).
    tls = options.http_tls() if target != Target.sink else None
    url = (None if tls is None
           else f"{tls.scheme}://{options.host}:{options.server_metrics_port}/metrics")
    # The server's CPU and memory where it is a process of this machine (not the sink: nothing to learn; not
    # behind TLS: what listens there is the proxy, QuestDB speaking none).
    local = tls is not None and tls.context is None and options.host in LOCAL_HOSTS
    login = options.http_login() if url is not None else None
    sampler = Sampler(phases, options.sample_interval, url,
                      find_server_process=(lambda: listening_process(options.http_port)) if local else None,
                      server_metrics_headers={"Authorization": login.header()} if login is not None else None,
                      server_metrics_context=tls.context if tls is not None else None)
    run.record.timeseries = sampler.series
    sampler.start()
    try:
        if not overlap:
            sampler.wait_first()
        yield sampler.wait_first
    finally:
        sampler.stop()


@contextlib.contextmanager
def profiled(options: ProfileOptions, run: Run):
    """With ``--profile``, both sides of the block sampled, a profile a phase (``harness.profiling``): the client
    always, QuestDB where it is a JVM of this machine (otherwise the run says why, in one line, and goes on). The
    figures and the verdict go in the record, the verdict is printed."""
    if not getattr(options, "profile", False):
        yield
        return
    from harness.profiling.run_profile import RunProfile

    pid, why = _server_to_profile(options)
    into_sink = getattr(options, "target", Target.questdb) == Target.sink
    sender = getattr(options, "sender_settings", None)
    if options.profile_native and sender is not None and sender().transport in ("http", "https"):
        # py-spy's pauses break the questdb client's ILP/HTTP flush (harness.profiling.client).
        raise UsageError("--profile-native pauses the client at each sample, which breaks its ILP/HTTP flush "
                         "(EINTR): profile it over TCP, or without --profile-native")
    profile = RunProfile(run.record.path.with_suffix(".profile"), options.profile_rate, options.profile_wall, pid,
                         why, into_sink, native=options.profile_native)
    if why:
        run.say(f"Profile: the client only: {why}")
    profile.begin()
    run.phase_ended.append(profile.cut)
    try:
        yield
    except BaseException:
        run.phase_ended.remove(profile.cut)
        profile.abandon()
        raise
    run.phase_ended.remove(profile.cut)
    run.record.profile = figures = profile.finish({name: phase.seconds for name, phase in run.record.phases.items()})
    for side in (figures.client, figures.server):
        if side is not None and side.missing:
            run.say(f"Profile: part of the {'client' if side is figures.client else 'server'}'s profile is "
                    f"missing: {side.missing}")
    run.say(f"Verdict: {figures.verdict}")
    if figures.client.profiler_cpus is not None:
        run.say(f"Profile: {profile.folder}; py-spy itself used "
                f"{figures.client.profiler_cpus:.2f} CPUs")


def _server_to_profile(options) -> tuple[int | None, str | None]:
    """QuestDB's process id to sample and None, or None and why it is not sampled."""
    if getattr(options, "target", Target.questdb) == Target.sink:
        return None, "into the sink, which does no work: nothing of QuestDB's to sample"
    from harness.profiling.jvm_attach import jvm_serving

    return jvm_serving(options.host, options.http_port)


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


class SinkRun(Protocol):
    """The options of a run that may send into the no-op sink (``BenchOptions``, ``TuneOptions``)."""

    def sink_endpoint(self) -> tuple[str, int] | None:
        """host:port the run sends into the sink at, where it would start a private one if nothing listened;
        None for a run that sends elsewhere or must find its sink running."""

    def at_sink(self, sink: SinkAddress) -> Self:
        """The same options, sending into ``sink`` (a private one: its kind recorded)."""


@contextlib.contextmanager
def into_sink(options: SinkRun, out: TextIO) -> Iterator[SinkRun]:
    """The run's options for the block: pointed at a private no-op sink, started for the block and stopped
    however it ends, where the run sends into the sink and nothing listens where it would
    (``harness.servers.sink.sink_at``, which says so on ``out``); else unchanged."""
    endpoint = options.sink_endpoint()
    if endpoint is None:
        yield options
        return
    with sink_at(*endpoint, say=lambda text: print(text, file=out, flush=True)) as sink:
        yield options if sink.private is None else options.at_sink(sink)
