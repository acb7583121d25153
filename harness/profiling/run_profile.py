"""A run's profile, both sides, a recording a phase: begun before the run's work, cut when each phase is recorded
(the samples since the cut before), finished when the run ends. What it leaves beside the record
(``<record>.profile/``): each side's collapsed stacks a phase, a speedscope file a side (a profile a phase), and in
the record (``ProfileFigures``) each side's buckets, top frames, CPUs and the verdict.

A side whose profiler dies, or stops answering, is recorded as missing with the reason; the run goes on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harness.errors import UsageError
from harness.telemetry.stack_buckets import CLIENT_BUCKETS, SERVER_BUCKETS, bucket_samples, shares
from harness.profiling.client import ClientRecording, check_py_spy, py_spy_version
from harness.profiling.server import ServerProfiler
from harness.telemetry.stacks import Stacks, merged, top_frames, write_collapsed, write_speedscope
from harness.profiling.verdict import Side, verdict
from harness.records.run_record import ProfileFigures, SideProfile

DEFAULT_RATE_HZ = 100


@dataclass(frozen=True)
class Profiling:
    """A profiled run (``--profile``): ``rate`` samples a second each side, QuestDB's threads by wall clock
    (``wall``) or CPU, the client's native frames too (``native``); QuestDB is the JVM serving ``host:http_port``,
    unless the run sends ``into_sink``."""

    rate: int = DEFAULT_RATE_HZ
    wall: bool = False
    native: bool = False
    host: str = "localhost"
    http_port: int = 9000
    into_sink: bool = False
TOP_FRAMES = 15
# The client's modes: every thread by wall clock, Python frames only (py-spy not pausing the process), or with native
# frames too (--profile-native: py-spy pausing the process at each sample).
CLIENT_NATIVE = "wall, all threads, native frames"
CLIENT_PYTHON = "wall, all threads, Python frames"
# The samples after the last phase was recorded (validation, the wait until visible), if any.
AFTER = "after the phases"


@dataclass
class _Segment:
    """One side's recording between two cuts: its stacks and the CPU-s its process used."""

    stacks: Stacks | None
    cpu_seconds: float | None
    seconds: float
    missing: str | None = None


@dataclass
class _SideState:
    segments: dict[str, _Segment] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


class RunProfile:
    """Both sides' recordings of a run (``server_pid`` None: the client only, ``no_server`` says why)."""

    def __init__(self, folder: Path, rate_hz: int, wall: bool, server_pid: int | None, no_server: str | None,
                 into_sink: bool, native: bool = False):
        self.folder, self.rate_hz, self.into_sink, self.native = folder, rate_hz, into_sink, native
        self.no_server = no_server
        self.py_spy = check_py_spy()  # before anything runs: installed, and allowed to attach
        self.server = None
        if server_pid is not None:
            folder.mkdir(parents=True, exist_ok=True)
            self.server = ServerProfiler(server_pid, wall, rate_hz, folder)
            self._server_process = psutil.Process(server_pid)
        self._client_process = psutil.Process()
        self._client, self._server = _SideState(), _SideState()
        self._recording: ClientRecording | None = None
        self._py_spy_cpu = 0.0  # py-spy's own CPU-s, its recordings' sum
        self._server_running = False
        self._cut_at = self._client_cpu_at = self._server_cpu_at = None
        self._segment = 0

    # --- the recordings ---------------------------------------------------------------------------------------

    def begin(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.server is not None:
            self.server.start()  # the JVM's refusal is the user's to fix: one line, before anything runs
            self._server_running = True
        self._start_segment()

    def _start_segment(self) -> None:
        self._segment += 1
        self._recording = ClientRecording(self.py_spy, self.rate_hz, self.folder / f".client-{self._segment}.raw",
                                          self.native)
        if self.server is not None and not self._server_running and not self._server.missing:
            try:
                self.server.start()
                self._server_running = True
            except UsageError as exc:
                self._server.missing.append(str(exc).removeprefix("--profile: "))
        self._cut_at = time.perf_counter()
        self._client_cpu_at = self._client_cpu()
        self._server_cpu_at = self._server_cpu()

    def cut(self, phase: str) -> None:
        """The samples since the last cut are ``phase``'s; the next recording starts."""
        self._end_segment(phase)
        self._start_segment()

    def _end_segment(self, phase: str) -> None:
        seconds = time.perf_counter() - self._cut_at
        client_cpu, server_cpu = self._client_cpu(), self._server_cpu()
        stacks, why = self._recording.stop()
        self._recording.output.unlink(missing_ok=True)
        if self._recording.cpu_seconds is not None:
            self._py_spy_cpu += self._recording.cpu_seconds
        if stacks is not None and not stacks and phase != AFTER:
            why = f"no samples: the phase took {seconds:.2f} s, less than py-spy took to begin"
        self._client.segments[phase] = _Segment(stacks, _delta(self._client_cpu_at, client_cpu), seconds, why)
        if why:
            self._client.missing.append(f"{phase}: {why}")
        if self.server is not None:
            stacks, why = (None, self._server.missing[-1] if self._server.missing else "not recording")
            if self._server_running:
                stacks, why = self.server.stop(self.folder / f".server-{self._segment}.collapsed")
                (self.folder / f".server-{self._segment}.collapsed").unlink(missing_ok=True)
                self._server_running = False
                if why:
                    self._server.missing.append(f"{phase}: {why}")
            self._server.segments[phase] = _Segment(stacks, _delta(self._server_cpu_at, server_cpu), seconds, why)

    def _client_cpu(self) -> float:
        """This process's CPU-s and its children's but py-spy's (a forked maker of chunks is the client's)."""
        total = sum(self._client_process.cpu_times()[:2])
        for child in self._client_process.children(recursive=True):
            try:
                if "py-spy" in child.name():
                    continue
                total += sum(child.cpu_times()[:2])
            except psutil.Error:
                continue
        return total

    def _server_cpu(self) -> float | None:
        if self.server is None:
            return None
        try:
            return sum(self._server_process.cpu_times()[:2])
        except psutil.Error:
            return None

    # --- the end ----------------------------------------------------------------------------------------------

    def finish(self, phases: dict[str, float]) -> ProfileFigures:
        """The last recording ended (``AFTER`` the phases, where it holds samples), the files written, the figures
        and the verdict. ``phases``: each recorded phase's seconds (the verdict reads the send phase, or else the
        longest)."""
        self._end_segment(AFTER)
        if self.server is not None:
            self.server.keep_log()
        for state in (self._client, self._server):
            after = state.segments.get(AFTER)
            if after is not None and not (after.stacks and sum(after.stacks.values())):
                del state.segments[AFTER]
        client = self._side("client", self._client, CLIENT_BUCKETS, py_spy_version(self.py_spy),
                            CLIENT_NATIVE if self.native else CLIENT_PYTHON)
        if client.seconds:
            client.profiler_cpus = round(self._py_spy_cpu / client.seconds, 3)
        server = None
        if self.server is not None:
            server = self._side("server", self._server, SERVER_BUCKETS, f"async-profiler {self.server.version}",
                                self.server.mode)
        phase = "send" if "send" in phases else max(phases, key=phases.get, default=None)
        client_set, server_set = self._cpu_sets()
        found = verdict(self._verdict_side(self._client, phase, CLIENT_BUCKETS),
                        self._verdict_side(self._server, phase, SERVER_BUCKETS) if server is not None else None,
                        len(client_set), self.into_sink, same_machine=bool(client_set & server_set),
                        server_cores=len(server_set) or None)
        text = found.text if phase is None else f"{found.text} (the {phase} phase)"
        return ProfileFigures(client=client, server=server, verdict=text, bound=found.bound,
                              folder=self.folder.name, server_not_profiled=self.no_server)

    def _cpu_sets(self) -> tuple[set[int], set[int]]:
        """The CPUs each side may use (a container's CPU set, taskset's); the server's empty where not known."""
        server: set[int] = set()
        if self.server is not None:
            try:
                server = set(self._server_process.cpu_affinity())
            except psutil.Error:
                pass
        return set(os.sched_getaffinity(0)), server

    def _side(self, name: str, state: _SideState, buckets, profiler: str, mode: str) -> SideProfile:
        recorded = {phase: segment.stacks for phase, segment in state.segments.items() if segment.stacks}
        files = {}
        for phase, stacks in recorded.items():
            file = f"{name}-{_file_name(phase)}.collapsed"
            write_collapsed(stacks, self.folder / file)
            files[f"collapsed {phase}"] = file
        if recorded:
            write_speedscope(recorded, f"{name} ({profiler})", self.rate_hz, self.folder / f"{name}.speedscope.json")
            files["speedscope"] = f"{name}.speedscope.json"
        whole = merged(recorded.values())
        seconds = sum(segment.seconds for segment in state.segments.values())
        cpu = [segment.cpu_seconds for segment in state.segments.values()]
        return SideProfile(profiler=profiler, mode=mode, rate_hz=self.rate_hz, samples=sum(whole.values()),
                           buckets=bucket_samples(whole, buckets),
                           phases={phase: bucket_samples(stacks, buckets) for phase, stacks in recorded.items()},
                           top_frames=[[frame, count] for frame, count in top_frames(whole, TOP_FRAMES)],
                           cpus=(round(sum(cpu) / seconds, 3) if seconds and None not in cpu else None),
                           seconds=round(seconds, 3),
                           files=files, missing="; ".join(state.missing) or None)

    @staticmethod
    def _verdict_side(state: _SideState, phase: str | None, buckets) -> Side:
        segment = state.segments.get(phase) if phase is not None else None
        if segment is None:
            return Side(None, None)
        cpus = segment.cpu_seconds / segment.seconds if segment.cpu_seconds is not None and segment.seconds else None
        return Side(cpus, shares(bucket_samples(segment.stacks, buckets)) if segment.stacks else None)

    def abandon(self) -> None:
        """Stop whatever still records (a run that failed before its end): no figures."""
        if self._recording is not None and self._recording.alive():
            self._recording.stop()
            self._recording.output.unlink(missing_ok=True)
        if self.server is not None and self._server_running:
            self.server.stop(self.folder / ".server-abandoned.collapsed")
            (self.folder / ".server-abandoned.collapsed").unlink(missing_ok=True)
            self._server_running = False
        if self.server is not None:
            self.server.keep_log()


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else max(after - before, 0.0)


def _file_name(phase: str) -> str:
    return "".join(character if character.isalnum() else "-" for character in phase).strip("-")
