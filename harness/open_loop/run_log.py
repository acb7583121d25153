"""The run an open loop reports into (``RunLog``): what it asks of it, and no more."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.records.run_record import RunRecord


class RunLog(Protocol):
    """The run's record, which holds the open loop's figures, and its output."""

    record: RunRecord

    def say(self, text: str) -> None: ...
