"""Raw ILP over TCP: bytes written to a socket in large writes, the loopback limit of sending.

Owns the ``replay`` path (like the original's bench_raw_ilp): no client library, no serialization,
just ``sendall`` of an ILP file's pieces as ``harness.ingest.ilp_file`` reads them. Comparing it with the
client's send shows what the client costs on top of the network.
"""

from __future__ import annotations

import queue
import socket
import threading
import time

from harness.errors import RunError, UsageError
from harness.ingest.ilp_file import WAIT_SECONDS, IlpFile, Piece
from harness.ingest.sockets import CONNECT_TIMEOUT_SECONDS
from harness.telemetry.phase import PhaseProgress

DEFAULT_WRITE_SIZE = 4 << 20
# A peer that stops reading (but keeps the connection) must not hang the run forever.
WRITE_TIMEOUT_SECONDS = 60.0


class RawSendFailed(RunError):
    """A send that ended early. ``delivered``: every connection was closed in order after its last write
    (the file failed, not a connection), so the server receives every byte written."""

    def __init__(self, message: str, bytes_sent: int, delivered: bool = False):
        super().__init__(message)
        self.bytes_sent = bytes_sent
        self.delivered = delivered


# Pieces queued per worker beyond the one it is writing: enough to keep every connection busy while the
# reader fills the next, few enough that memory stays a handful of pieces.
QUEUED_PIECES = 2


def buffers_needed(workers: int) -> int:
    """Buffers a reader needs so that no worker waits on it: each worker's queue, the piece each is writing,
    and the one being read."""
    return workers * (QUEUED_PIECES + 1) + 1


def send_pieces(source: IlpFile, host: str, port: int, progress: PhaseProgress, workers: int = 1) -> float:
    """Write the pieces of ``source`` to host:port over ``workers`` connections (one thread each, as TSBS's
    loader has one connection per worker), each piece taken from one bounded queue by whichever is free
    first (TSBS's workers share one channel: a connection the server reads more slowly takes fewer pieces
    instead of holding the others back), each buffer released to the reader once written; counts rows and
    bytes per worker into ``progress``. Returns the seconds from the first read until every connection was
    closed in order. A read failure ends the send after the pieces already read are written
    (``RawSendFailed`` with its message); a write failure stops every worker after the piece in hand."""
    connections = []
    try:
        for _ in range(workers):
            connections.append(socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS))
    except OSError as exc:
        for connection in connections:
            connection.close()
        raise RunError(f"nothing listening at {host}:{port} (raw ILP over TCP): {exc.strerror or exc}") from None
    pending: queue.Queue[Piece | None] = queue.Queue(workers * QUEUED_PIECES)
    sent = [0] * workers
    failures: list[str] = []
    stop = threading.Event()

    def write(index: int, connection: socket.socket) -> None:
        try:
            with connection:
                connection.settimeout(WRITE_TIMEOUT_SECONDS)
                while (piece := pending.get()) is not None:
                    try:
                        if not stop.is_set():
                            payload = piece.payload()
                            connection.sendall(payload)
                            sent[index] += len(payload)
                            progress.add(index, piece.rows, len(payload), piece.table_rows)
                    finally:
                        source.release(piece)
                connection.shutdown(socket.SHUT_WR)
        except OSError as exc:
            failures.append(f"writing to {host}:{port} failed: {exc.strerror or exc}")
            stop.set()
            source.stop()

    def deal(piece: Piece | None) -> None:
        """Queue a piece for the workers, unless the send has stopped; or an end (None), one for each worker,
        while any runs (once the send has stopped, they drain the queue without writing)."""
        while any(thread.is_alive() for thread in threads):
            try:
                pending.put(piece, timeout=WAIT_SECONDS)
                return
            except queue.Full:
                if stop.is_set() and piece is not None:
                    break
        if piece is not None:  # never to be written
            source.release(piece)

    threads = [threading.Thread(target=write, args=(index, connection), name=f"replay-{index}", daemon=True)
               for index, connection in enumerate(connections)]
    started = progress.started = time.perf_counter()
    read_failure = None
    try:
        for thread in threads:
            thread.start()
        try:
            for piece in source.pieces():
                deal(piece)
        except UsageError as exc:  # the file, read on the way: what was read before still goes out
            read_failure = str(exc)
        for _ in range(workers):
            deal(None)
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=WAIT_SECONDS)
    except BaseException:
        stop.set()  # Ctrl-C: the writers end after the piece in hand
        source.stop()
        raise
    seconds = time.perf_counter() - started
    if failures or read_failure:
        raise RawSendFailed(failures[0] if failures else read_failure, sum(sent), delivered=not failures)
    return seconds
