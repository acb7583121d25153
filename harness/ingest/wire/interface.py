"""The interface every wire implements: a ``Wire`` (a protocol with its settings: its traits, connections, what
it needs of the server) and its ``Connection`` (frames, rows or bytes handed, then committed). What a commit's
return means is the wire's ``Delivery``: committed by the server, or only written.

Checked against the contracts of the protocols it carries. ILP over HTTP: a flush is one request, committed as one
transaction and answered, so a failed one left nothing (``committed``, no prefix in doubt). ILP over TCP and raw ILP:
bytes written, never answered (``written``). QWP (``questdb.connect()``'s ``QuestDB.dataframe()``): each call
commits what it carried and returns once it has, with no flush of its own, so ``frame`` commits and ``commit`` has
nothing left to do (``committed``); a call that fails midway may have committed a prefix of its batches
(``prefix_in_doubt``: a re-send then needs a deduplicating table); its connections are lent from one pool the wire
holds, opened with the first connection and closed with the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from harness.errors import RunError

if TYPE_CHECKING:
    from harness.ingest.wire.settings import SenderSettings


class Delivery(StrEnum):
    """What a connection's ``commit()`` means when it returns."""

    # The server has committed what the commit carried (one transaction) and said so: a failed commit left none
    # of it, unless the wire's ``prefix_in_doubt`` says a part may have landed.
    committed = "committed"
    # The bytes are written to the connection: nothing answers, and what the server received is at most that.
    written = "written"


@dataclass(frozen=True)
class WireTraits:
    """What a wire is, as a run asks it instead of its name."""

    name: str  # how messages call it: "ILP over HTTP"
    delivery: Delivery
    # Whether a commit that failed may have left a committed part of what it carried (a batch of a larger call).
    prefix_in_doubt: bool
    # What a connection takes: frames (``Connection.frame``), rows (``row``), bytes (``write``).
    takes: frozenset[str]
    # Whether the profiler's pauses of the client (py-spy's ptrace, ``--profile-native``) break its blocking call:
    # a blocking call with a timeout interrupted (EINTR) fails instead of going on.
    pauses_break_it: bool = False
    # Whether ``frame`` takes every kind of frame as it is (``harness.frames.kinds``); else pandas alone, and a frame
    # of another kind is converted to pandas in the timed send, as the client's user must.
    frames_as_they_are: bool = False
    # Whether the client encodes what it sends apart from sending it (ILP's ``Buffer``): what a serialize phase
    # times. QWP's encodes only while it sends.
    encodes_apart: bool = True

    @property
    def committed(self) -> bool:
        """Whether a commit returns once the server has committed it: its return an acknowledgement."""
        return self.delivery == Delivery.committed


class PrefixInDoubt(RunError):
    """A commit that failed after part of what it carried may have been committed (a wire whose ``prefix_in_doubt``
    says so): ``rows`` it carried are in doubt, somewhere between none and all of them on the server."""

    def __init__(self, message: str, rows: int):
        super().__init__(message)
        self.rows = rows


@dataclass(frozen=True)
class WireVariant:
    """A way of sending a tuning sweep may try beside the user's: its ``name``, the sender settings' fields it
    changes (``BenchOptions``' of the same names), and ``short``, its name among others tried together (None: it is
    tried alone, never with the others)."""

    name: str
    changes: dict
    short: str | None = None


class Connection(Protocol):
    """One connection of a wire, used by one thread. A failure is one line: ``RunError`` (the server, the network),
    ``UsageError`` (a value the client refuses)."""

    def frame(self, table: str, frame, symbols: bool | str | tuple[str, ...], at: str) -> None:
        """Hand ``frame``'s rows of ``table`` to the connection (a frame of any kind, ``symbols``, ``at``: as
        ``dataframe()`` takes them); a wire whose ``Delivery`` is per call may commit it here (a failure that may
        have left a committed prefix: ``PrefixInDoubt``)."""

    def row(self, table: str, symbols: dict, columns: dict, at) -> None:
        """Hand one row, as the client's row API takes it."""

    def write(self, data: bytes) -> None:
        """Hand bytes as they are (raw ILP)."""

    def commit(self) -> int | None:
        """Make what was handed since the last commit durable as the wire's ``Delivery`` says; the bytes it sent,
        or None where the wire cannot tell."""

    def close(self) -> None:
        """Close, dropping what was not committed; never raises (the run's own error is the one worth reporting)."""


class Wire(Protocol):
    """A protocol with its settings: where and how it connects."""

    traits: WireTraits
    settings: SenderSettings

    def connect(self) -> Connection:
        """An open connection; nothing listening is a ``RunError`` naming the address, a bad configuration a
        ``UsageError``."""

    def needed_features(self) -> list[str]:
        """What the server must offer for it (``harness.questdb.features``' names)."""

    def variants(self, into_sink: bool, workers: int) -> list[WireVariant]:
        """Other settings a tuning sweep may try beside these, for a run of ``workers`` threads (``into_sink``: none
        that need a server)."""

    def code_conf(self) -> str:
        """The configuration string a user's own code would connect with."""

    def sending_code(self, symbols: bool | str | tuple[str, ...], at: str) -> tuple[list[str], str, list[str]]:
        """How a user's script sends each DataFrame ``df`` into ``TABLE`` over it (its configuration ``CONF``): the
        script's imports, the ``with`` line that opens a worker's connection, and the lines sending one ``df``."""

    def refusal(self, failure: str) -> str:
        """``failure`` (the client's error, one line) with the why where the server's refusal has a known cause."""

    def unseen_losses(self) -> str:
        """Why rows may be missing though every commit returned, as the end of a shortfall's line ("" if none)."""
