"""The generic reader loop: one reader per worker, each on its own thread reading its time slice in chunks (frames
of the kind the read asks for: pandas, or Arrow or Polars where the protocol hands them over) into a small queue
of its own; the consumer takes the slices' frames in slice order, so the answer comes back whole and in order while
at most ``QUEUE_DEPTH + 1`` chunks per worker, and the consumer's one, are held (a worker ahead of the consumer
waits). A worker's failure (server gone, query rejected) ends the read in one line naming the protocol and the
worker; the consumer's own (a ``--check`` difference, Ctrl-C) stops the workers.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

from harness.errors import HarnessError, RunError
from harness.frames.kinds import FrameKind
from harness.questdb.pgwire import refused_login, refused_text
from harness.read.connection import Endpoint
from harness.read.slices import ReadSlices
from harness.read.protocols import PGWIRE_PROTOCOLS, ReadProtocol, open_reader
from harness.telemetry.phase import PhaseProgress

QUEUE_DEPTH = 1  # chunks a worker may have read ahead of the consumer
POLL_SECONDS = 0.1
JOIN_SECONDS = 5.0
_DONE = object()


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return " ".join(text.split())


class _Worker(threading.Thread):
    def __init__(self, index: int, protocol: ReadProtocol, endpoint: Endpoint, sql: str, slices: ReadSlices,
                 chunk_rows: int, progress: PhaseProgress, stop: threading.Event, frame: FrameKind):
        super().__init__(name=f"read-{index}", daemon=True)
        self.index, self.protocol, self.endpoint, self.sql, self.slices = index, protocol, endpoint, sql, slices
        self.frame = frame
        self.chunk_rows, self.progress, self.stop = chunk_rows, progress, stop
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_DEPTH)

    def run(self) -> None:
        reader = None
        try:
            reader = open_reader(self.protocol, self.endpoint, self.frame)
            counted = reader.received_bytes() or 0  # what the connection's set-up took is not the answer's
            frames = reader.frames(self.sql, self.slices.columns, self.chunk_rows)
            try:
                for frame in frames:
                    received = reader.received_bytes()
                    self.progress.add(self.index, len(frame), (received - counted) if received is not None else 0)
                    counted = received if received is not None else counted
                    if not self._put(frame):
                        return
            finally:
                frames.close()  # a read stopped early ends its query here, before its connection closes
            self._put(_DONE)
        except BaseException as exc:  # handed to the consumer, which says it in one line
            self._put(exc)
        finally:
            if reader is not None:
                try:
                    reader.close()
                except Exception:
                    pass  # a connection the server already dropped

    def _put(self, item: object) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False


def read_frames(slices: ReadSlices, protocol: ReadProtocol, endpoint: Endpoint, chunk_rows: int,
                progress: PhaseProgress, frame: FrameKind = FrameKind.pandas) -> Iterator[object]:
    """The slices' answer as frames of ``frame``, in order: one worker per query of the slices."""
    stop = threading.Event()
    workers = [_Worker(index, protocol, endpoint, sql, slices, chunk_rows, progress, stop, frame)
               for index, sql in enumerate(slices.queries)]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            while True:
                try:
                    item = worker.queue.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    continue
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    if isinstance(item, HarnessError):
                        raise item
                    if protocol in PGWIRE_PROTOCOLS and refused_login(item):
                        raise RunError(f"{refused_text(endpoint.host, endpoint.pg_port, endpoint.pg)}: "
                                       f"{_one_line(item)}") from None
                    where = f" (worker {worker.index} of {len(workers)})" if len(workers) > 1 else ""
                    raise RunError(f"reading {slices.what} over {protocol} failed{where}: {_one_line(item)}") from None
                yield item
    finally:
        stop.set()
        for worker in workers:
            worker.join(JOIN_SECONDS)
