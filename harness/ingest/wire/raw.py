"""Raw ILP over TCP: bytes written to a socket as they are, no client library (the replay's wire). Nothing
answers: a write returns once the kernel has the bytes, and a connection closed in order (its writing side shut
first) hands the server every byte written."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from harness.errors import RunError, UsageError
from harness.ingest.sockets import CONNECT_TIMEOUT_SECONDS
from harness.ingest.wire.interface import Delivery, WireTraits, WireVariant
from harness.ingest.wire.settings import SenderSettings

RAW = WireTraits("raw ILP/TCP", Delivery.written, prefix_in_doubt=False, takes=frozenset({"bytes"}),
                 encodes_apart=False)
# A peer that stops reading (but keeps the connection) must not hang the run forever.
WRITE_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class RawWire:
    """Raw ILP to ``settings``' host and ILP port."""

    settings: SenderSettings
    traits = RAW

    @property
    def address(self) -> str:
        return f"{self.settings.host}:{self.settings.ilp_port}"

    def connect(self) -> RawConnection:
        try:
            connection = socket.create_connection((self.settings.host, self.settings.ilp_port),
                                                  timeout=CONNECT_TIMEOUT_SECONDS)
        except OSError as exc:
            raise RunError(f"nothing listening at {self.address} (raw ILP over TCP): {exc.strerror or exc}") from None
        connection.settimeout(WRITE_TIMEOUT_SECONDS)
        return RawConnection(connection, self.address)

    def needed_features(self) -> list[str]:
        return []

    def variants(self, into_sink: bool, workers: int) -> list[WireVariant]:
        return []

    def code_conf(self) -> str:
        return f"tcp::addr={self.address};"

    def sending_code(self, symbols, at) -> tuple[list[str], str, list[str]]:
        raise UsageError("raw ILP sends a file's bytes as they are, not DataFrames")

    def refusal(self, failure: str) -> str:
        return failure

    def unseen_losses(self) -> str:
        return (" (over raw ILP/TCP, QuestDB closes a connection without a word on a line it cannot parse: its log "
                "says which)")


class RawConnection:
    """One socket: bytes written whole (``sendall``), a commit only counts them."""

    def __init__(self, connection: socket.socket, address: str):
        self._socket = connection
        self._address = address
        self._written = 0

    def frame(self, table, frame, symbols, at) -> None:
        raise UsageError("raw ILP takes bytes, not frames")

    def row(self, table, symbols, columns, at) -> None:
        raise UsageError("raw ILP takes bytes, not rows")

    def write(self, data: bytes) -> None:
        try:
            self._socket.sendall(data)
        except OSError as exc:
            raise RunError(f"writing to {self._address} failed: {exc.strerror or exc}") from None
        self._written += len(data)

    def commit(self) -> int:
        written, self._written = self._written, 0
        return written

    def close(self) -> None:
        """Shut the writing side first (the server then reads every byte written), then close."""
        try:
            self._socket.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # a connection the peer already closed: the write's own error says why
        self._socket.close()
