"""A run's block profiled (``profiled``): both sides sampled over it, a profile a phase (``harness.profiling``),
the client always, QuestDB where it is a JVM of this machine (otherwise the run says why, in one line, and goes on);
the figures and the verdict kept in the run's record, the verdict said. What it asks of the run is ``ProfiledRun``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.profiling.run_profile import Profiling
    from harness.records.run_record import RunRecord


class ProfiledRun(Protocol):
    """The run a profile reports into: its record (its path, its phases, its profile), its output, and who is told
    each phase's name once the phase is recorded (a recording a phase)."""

    record: RunRecord
    phase_ended: list[Callable[[str], None]]

    def say(self, text: str) -> None: ...


@contextlib.contextmanager
def profiled(profiling: Profiling | None, run: ProfiledRun):
    """With ``--profile`` (``profiling``; None: not profiled), both sides of the block sampled into the record's
    profile, its verdict said."""
    if profiling is None:
        yield
        return
    from harness.profiling.run_profile import RunProfile  # py-spy and async-profiler: only for a profiled run

    pid, why = server_to_profile(profiling)
    profile = RunProfile(run.record.path.with_suffix(".profile"), profiling.rate, profiling.wall, pid, why,
                         profiling.into_sink, native=profiling.native)
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
        run.say(f"Profile: {profile.folder}; py-spy itself used {figures.client.profiler_cpus:.2f} CPUs")


def server_to_profile(profiling: Profiling) -> tuple[int | None, str | None]:
    """QuestDB's process id to sample and None, or None and why it is not sampled."""
    if profiling.into_sink:
        return None, "into the sink, which does no work: nothing of QuestDB's to sample"
    from harness.profiling.jvm_attach import jvm_serving

    return jvm_serving(profiling.host, profiling.http_port)
