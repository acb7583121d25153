"""An ILP file's pieces sent as they are read, over N connections of a wire that takes bytes (the ``replay`` path,
like the original's bench_raw_ilp: raw ILP over TCP, ``harness.ingest.wire.raw``): no client library, no
serialization, just the pieces ``harness.ingest.ilp_file`` reads, each written whole. Comparing it with the
client's send shows what the client costs on top of the network.
"""

from __future__ import annotations

import queue
import threading
import time

from harness.errors import RunError, UsageError
from harness.ingest.ilp_file import WAIT_SECONDS, IlpFile, Piece
from harness.ingest.wire.interface import Connection, Wire
from harness.telemetry.phase import PhaseProgress

DEFAULT_WRITE_SIZE = 4 << 20
# Pieces queued per worker beyond the one it is writing: enough to keep every connection busy while the
# reader fills the next, few enough that memory stays a handful of pieces.
QUEUED_PIECES = 2


class RawSendFailed(RunError):
    """A send that ended early. ``delivered``: every connection was closed in order after its last write
    (the file failed, not a connection), so the server receives every byte written."""

    def __init__(self, message: str, bytes_sent: int, delivered: bool = False):
        super().__init__(message)
        self.bytes_sent = bytes_sent
        self.delivered = delivered


def buffers_needed(workers: int) -> int:
    """Buffers a reader needs so that no worker waits on it: each worker's queue, the piece each is writing,
    and the one being read."""
    return workers * (QUEUED_PIECES + 1) + 1


def send_pieces(source: IlpFile, wire: Wire, progress: PhaseProgress, workers: int = 1) -> float:
    """Write the pieces of ``source`` over ``workers`` connections of ``wire`` (one thread each, as TSBS's loader
    has one connection per worker), each piece taken from one bounded queue by whichever is free first (TSBS's
    workers share one channel: a connection the server reads more slowly takes fewer pieces instead of holding the
    others back), each buffer released to the reader once written; counts rows and bytes per worker into
    ``progress``. Returns the seconds from the first read until every connection was closed in order. A read
    failure ends the send after the pieces already read are written (``RawSendFailed`` with its message); a write
    failure stops every worker after the piece in hand."""
    connections: list[Connection] = []
    try:
        for _ in range(workers):
            connections.append(wire.connect())
    except RunError:
        for connection in connections:
            connection.close()
        raise
    return _FileSend(source, connections, progress).run()


class _FileSend:
    """One send of a file's pieces: a writer thread per connection, fed by the reading thread."""

    def __init__(self, source: IlpFile, connections: list[Connection], progress: PhaseProgress):
        self.source = source
        self.connections = connections
        self.progress = progress
        self.pending: queue.Queue[Piece | None] = queue.Queue(len(connections) * QUEUED_PIECES)
        self.sent = [0] * len(connections)
        self.failures: list[str] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._write, args=(index, connection), name=f"replay-{index}",
                                         daemon=True) for index, connection in enumerate(connections)]

    def _write(self, index: int, connection: Connection) -> None:
        """Connection ``index``: every piece it takes written whole, until the end (None); closed in order."""
        try:
            while (piece := self.pending.get()) is not None:
                try:
                    if not self.stop.is_set():
                        payload = piece.payload()
                        connection.write(payload)
                        self.sent[index] += len(payload)
                        self.progress.add(index, piece.rows, len(payload), piece.table_rows)
                finally:
                    self.source.release(piece)
        except RunError as exc:
            self.failures.append(str(exc))
            self.stop.set()
            self.source.stop()
        finally:
            connection.close()

    def _deal(self, piece: Piece | None) -> None:
        """Queue a piece for the workers, unless the send has stopped; or an end (None), one for each worker,
        while any runs (once the send has stopped, they drain the queue without writing)."""
        while any(thread.is_alive() for thread in self.threads):
            try:
                self.pending.put(piece, timeout=WAIT_SECONDS)
                return
            except queue.Full:
                if self.stop.is_set() and piece is not None:
                    break
        if piece is not None:  # never to be written
            self.source.release(piece)

    def run(self) -> float:
        started = self.progress.started = time.perf_counter()
        read_failure = None
        try:
            for thread in self.threads:
                thread.start()
            try:
                for piece in self.source.pieces():
                    self._deal(piece)
            except UsageError as exc:  # the file, read on the way: what was read before still goes out
                read_failure = str(exc)
            for _ in self.threads:
                self._deal(None)
            for thread in self.threads:
                while thread.is_alive():
                    thread.join(timeout=WAIT_SECONDS)
        except BaseException:
            self.stop.set()  # Ctrl-C: the writers end after the piece in hand
            self.source.stop()
            raise
        seconds = time.perf_counter() - started
        if self.failures or read_failure:
            raise RawSendFailed(self.failures[0] if self.failures else read_failure, sum(self.sent),
                                delivered=not self.failures)
        return seconds
