"""What a send phase asks of a schedule of intended times (``run_phase(..., schedule)``): each chunk waits for its
time and reports its send, and the phase watches for the schedule's end and its grace. An open loop's schedule
of one rate (``harness.open_loop.schedule.RateSchedule``) is one."""

from __future__ import annotations

import threading
from typing import Protocol


class SendSchedule(Protocol):
    grace: float  # seconds the chunks in flight at the schedule's end have to finish

    def begin(self) -> None:
        """The first chunk is due now."""

    def wait(self, number: int, stop: threading.Event, waited: tuple[float, float] | None = None) -> float | None:
        """Until chunk ``number`` is due (at once when ``stop`` is set); its intended time, or None when the
        schedule has ended. ``waited``: from when to when the worker waited for the chunk from the source."""

    def sent(self, number: int, intended: float, started: float, ended: float, rows: dict[str, int]) -> None:
        """Chunk ``number`` (``rows`` per table), due at ``intended``, went out at ``started`` and its send ended
        at ``ended``."""

    def sample_backlog(self, now: float) -> None:
        """What is due and has not gone out at ``now``, kept when a sample is due."""

    def ended(self, now: float) -> bool:
        """Whether no chunk may start at ``now``."""

    def past_grace(self, now: float) -> bool:
        """Whether the chunks still in flight at ``now`` have had their grace."""
