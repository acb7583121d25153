"""Raw ILP over TCP: bytes written to a socket in large writes, the loopback limit of sending.

Owns the ``replay`` path (like the original's bench_raw_ilp): no client library, no serialization,
just ``sendall`` of an ILP file's bytes. Comparing it with the client's send shows what the client
costs on top of the network.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

from harness.errors import RunError
from harness.ingest.phases import PhaseProgress
from harness.ingest.senders import CONNECT_TIMEOUT_SECONDS

DEFAULT_WRITE_SIZE = 4 << 20
# A peer that stops reading (but keeps the connection) must not hang the run forever.
WRITE_TIMEOUT_SECONDS = 60.0


@dataclass
class RawSendStats:
    bytes: int
    seconds: float


class RawSendFailed(RunError):
    def __init__(self, message: str, bytes_sent: int):
        super().__init__(message)
        self.bytes_sent = bytes_sent


def send_raw(data: bytes, host: str, port: int, write_size: int = DEFAULT_WRITE_SIZE,
             progress: PhaseProgress | None = None) -> RawSendStats:
    """Write ``data`` to host:port; the clock covers the writes and the orderly close."""
    try:
        connection = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS)
    except OSError as exc:
        raise RunError(f"nothing listening at {host}:{port} (raw ILP over TCP): {exc.strerror or exc}") from None
    view = memoryview(data)
    sent = 0
    connection.settimeout(WRITE_TIMEOUT_SECONDS)
    started = time.perf_counter()
    if progress is not None:
        progress.started = started
    try:
        with connection:
            while sent < len(view):
                piece = view[sent : sent + write_size]
                connection.sendall(piece)
                sent += len(piece)
                if progress is not None:
                    progress.add(0, data.count(b"\n", sent - len(piece), sent), len(piece))
            connection.shutdown(socket.SHUT_WR)
    except OSError as exc:
        raise RawSendFailed(f"writing to {host}:{port} failed: {exc.strerror or exc}", sent) from None
    return RawSendStats(sent, time.perf_counter() - started)
