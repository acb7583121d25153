"""Raw ILP over TCP: bytes written to a socket in large writes, the loopback limit of sending.

Owns the ``replay`` path (like the original's bench_raw_ilp): no client library, no serialization,
just ``sendall`` of an ILP file's bytes. Comparing it with the client's send shows what the client
costs on top of the network.
"""

from __future__ import annotations

import socket
import threading
import time

from harness.errors import RunError
from harness.phase import PhaseProgress
from harness.ingest.sockets import CONNECT_TIMEOUT_SECONDS

DEFAULT_WRITE_SIZE = 4 << 20
# A peer that stops reading (but keeps the connection) must not hang the run forever.
WRITE_TIMEOUT_SECONDS = 60.0


class RawSendFailed(RunError):
    def __init__(self, message: str, bytes_sent: int):
        super().__init__(message)
        self.bytes_sent = bytes_sent


def line_pieces(data: bytes, size: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive pieces of ``data`` of at least ``size`` bytes (the last may be shorter),
    each ending at a line end, so that pieces sent on different connections are whole ILP lines."""
    pieces, start = [], 0
    while start < len(data):
        end = data.find(b"\n", min(start + size, len(data)) - 1)
        end = len(data) if end == -1 else end + 1
        pieces.append((start, end))
        start = end
    return pieces


def send_raw(data: bytes, host: str, port: int, write_size: int, progress: PhaseProgress,
             workers: int = 1) -> float:
    """Write ``data`` to host:port in line-aligned pieces of ``write_size`` bytes, dealt round-robin to
    ``workers`` connections (one thread each, as TSBS's loader has one connection per worker), counting
    rows and bytes per worker into ``progress``; returns the seconds from the first write until every
    connection was closed in order."""
    connections = []
    try:
        for _ in range(workers):
            connections.append(socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS))
    except OSError as exc:
        for connection in connections:
            connection.close()
        raise RunError(f"nothing listening at {host}:{port} (raw ILP over TCP): {exc.strerror or exc}") from None
    view = memoryview(data)
    pieces = line_pieces(data, write_size)
    sent = [0] * workers
    failures: list[str] = []
    stop = threading.Event()

    def write(index: int, connection: socket.socket) -> None:
        try:
            with connection:
                connection.settimeout(WRITE_TIMEOUT_SECONDS)
                for start, end in pieces[index::workers]:
                    if stop.is_set():
                        return
                    connection.sendall(view[start:end])
                    sent[index] += end - start
                    progress.add(index, data.count(b"\n", start, end), end - start)
                connection.shutdown(socket.SHUT_WR)
        except OSError as exc:
            failures.append(f"writing to {host}:{port} failed: {exc.strerror or exc}")
            stop.set()

    threads = [threading.Thread(target=write, args=(index, connection), name=f"replay-{index}", daemon=True)
               for index, connection in enumerate(connections)]
    started = progress.started = time.perf_counter()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)
    except BaseException:
        stop.set()  # Ctrl-C: the writers end after the piece in hand
        raise
    seconds = time.perf_counter() - started
    if failures:
        raise RawSendFailed(failures[0], sum(sent))
    return seconds
