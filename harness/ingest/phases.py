"""One timed phase (serialize or send) over DataFrame chunks, on one thread or N, with live counters.

Owns the measurement loop of the original py-tsbs-benchmark, rebuilt: chunks are dealt round-robin to
workers (or pulled from a bounded queue in stream mode), each worker serializes into its own buffer or
sends through its own connection, and the phase's clock runs from the moment every worker is ready
until the last one has finished. Per-chunk progress goes to a ``PhaseProgress`` that the progress
printer and the metrics read. A failing worker stops the others; the rows finished before the failure
are reported, never guessed.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import pandas as pd
from questdb import QuestDBError, Sender, TimestampNanos

from harness.errors import RunError
from harness.ingest.ilp import append_frame, new_buffer
from harness.ingest.senders import SenderTarget, one_line, open_sender
from harness.tsbs.cpu_only import FIELD_COLUMNS, TABLE_NAME, TAG_COLUMNS, TIMESTAMP_COLUMN

OPS = ("dataframe", "iterrows", "itertuples")


class PhaseProgress:
    """Thread-safe running totals of one phase, per worker, read by progress lines and metrics."""

    def __init__(self, phase: str, workers: int, on_chunk: Callable[[str, int, int, int], None] | None = None,
                 on_flush: Callable[[int, float], None] | None = None):
        self.phase = phase
        self.rows = 0
        self.bytes = 0
        self.flushes = 0
        self.worker_rows = [0] * workers
        self.worker_bytes = [0] * workers
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._on_chunk = on_chunk
        self._on_flush = on_flush

    def add(self, worker: int, rows: int, nbytes: int) -> None:
        with self._lock:
            self.rows += rows
            self.bytes += nbytes
            self.worker_rows[worker] += rows
            self.worker_bytes[worker] += nbytes
        if self._on_chunk is not None:
            self._on_chunk(self.phase, worker, rows, nbytes)

    def flushed(self, worker: int, seconds: float) -> None:
        with self._lock:
            self.flushes += 1
        if self._on_flush is not None:
            self._on_flush(worker, seconds)


@dataclass
class PhaseStats:
    rows: int
    bytes: int
    seconds: float
    worker_rows: list[int] = field(default_factory=list)
    worker_bytes: list[int] = field(default_factory=list)
    flushes: int = 0
    # CPU time of the whole client process over the phase (all its threads). Against ``seconds`` it says
    # how many cores the client kept busy: about the workers' count when the client is the bottleneck,
    # far less when it waits for the server.
    cpu_seconds: float | None = None


class Worker:
    """What one thread does with each chunk; ``process`` returns the ILP bytes it produced."""

    def process(self, chunk: pd.DataFrame) -> int:
        raise NotImplementedError

    def finish(self) -> None:
        """Called once after the last chunk (inside the clock)."""

    def close(self) -> None:
        """Called once after the phase, whatever happened (outside the clock)."""


def _rows_of(chunk: pd.DataFrame, op: str) -> Iterator[tuple[dict, dict, TimestampNanos]]:
    """Row-by-row access as a Python user without the dataframe API would write it."""
    if op == "iterrows":
        for _, row in chunk.iterrows():
            yield (
                {tag: row[tag] for tag in TAG_COLUMNS},
                {name: _python_number(row[name]) for name in FIELD_COLUMNS},
                TimestampNanos(row[TIMESTAMP_COLUMN].value),
            )
    else:
        tags, fields = len(TAG_COLUMNS), len(FIELD_COLUMNS)
        for row in chunk.itertuples(index=False, name=None):
            yield (
                dict(zip(TAG_COLUMNS, row[:tags])),
                {name: _python_number(value) for name, value in zip(FIELD_COLUMNS, row[tags : tags + fields])},
                TimestampNanos(row[-1].value),
            )


def _python_number(value):
    # The row API takes Python int/float; numpy int64 is not an int subclass.
    return value.item() if hasattr(value, "item") else value


class SerializeWorker(Worker):
    """Serializes into an in-memory buffer, cleared after every chunk (bytes counted, not kept)."""

    def __init__(self, op: str, protocol_version: int, table: str = TABLE_NAME):
        self.op = op
        self.table = table
        self.buffer = new_buffer(protocol_version)

    def process(self, chunk: pd.DataFrame) -> int:
        if self.op == "dataframe":
            append_frame(self.buffer, chunk, self.table)
        else:
            for symbols, columns, at in _rows_of(chunk, self.op):
                self.buffer.row(self.table, symbols=symbols, columns=columns, at=at)
        nbytes = len(self.buffer)
        self.buffer.clear()
        return nbytes


class SendWorker(Worker):
    """Sends through its own connection and flushes after every chunk, timing each flush."""

    def __init__(self, op: str, target: SenderTarget, progress: PhaseProgress, index: int,
                 table: str = TABLE_NAME):
        self.op = op
        self.table = table
        self.progress = progress
        self.index = index
        self.sender: Sender = open_sender(target)
        self.address = target.address

    def process(self, chunk: pd.DataFrame) -> int:
        try:
            if self.op == "dataframe":
                self.sender.dataframe(chunk, table_name=self.table, symbols=True, at=TIMESTAMP_COLUMN)
            else:
                for symbols, columns, at in _rows_of(chunk, self.op):
                    self.sender.row(self.table, symbols=symbols, columns=columns, at=at)
            nbytes = len(self.sender)
            started = time.perf_counter()
            self.sender.flush()
        except QuestDBError as exc:
            raise RunError(f"sending to {self.address} failed: {one_line(exc)}") from None
        self.progress.flushed(self.index, time.perf_counter() - started)
        return nbytes

    def close(self) -> None:
        try:
            self.sender.close(flush=False)
        except QuestDBError:
            pass  # the phase's own error (if any) is the one worth reporting


def deal_round_robin(chunks: Sequence[pd.DataFrame], workers: int) -> list[list[pd.DataFrame]]:
    """Chunk i goes to worker i % workers, as the original benchmark dealt them."""
    return [list(chunks[index::workers]) for index in range(workers)]


class ChunkStream:
    """Generates chunks on a background thread into a bounded queue that the workers drain, so a
    run larger than memory holds only a few chunks at a time."""

    _DONE = object()

    def __init__(self, chunks: Iterable[pd.DataFrame], workers: int, depth_per_worker: int = 2):
        self._queue: queue.Queue = queue.Queue(maxsize=max(2, depth_per_worker * workers))
        self._chunks = chunks
        self._workers = workers
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._produce, name="chunk-generator", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        try:
            for chunk in self._chunks:
                if not self._put(chunk):
                    return
        except BaseException as exc:  # handed to the phase, which reports it
            self.error = exc
        finally:
            for _ in range(self._workers):
                self._put(self._DONE)

    def take(self) -> Iterator[pd.DataFrame]:
        while True:
            item = self._queue.get()
            if item is self._DONE:
                return
            yield item

    def stop(self) -> None:
        self._stop.set()
        # Unblock the producer and drain what it queued.
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass


def run_phase(
    progress: PhaseProgress,
    workers: list[Worker],
    work: list[list[pd.DataFrame]] | ChunkStream,
) -> PhaseStats:
    """Run ``workers`` over their dealt chunks (or the shared stream) and time the whole phase."""
    count = len(workers)
    failures: list[BaseException] = []
    stop = threading.Event()
    ready = threading.Barrier(count + 1)

    def body(index: int) -> None:
        worker = workers[index]
        ready.wait()
        try:
            chunks = work.take() if isinstance(work, ChunkStream) else work[index]
            for chunk in chunks:
                if stop.is_set():
                    return
                nbytes = worker.process(chunk)
                progress.add(index, len(chunk), nbytes)
            worker.finish()
        except BaseException as exc:
            failures.append(exc)
            stop.set()
            if isinstance(work, ChunkStream):
                work.stop()

    threads = [threading.Thread(target=body, args=(index,), name=f"{progress.phase}-{index}") for index in range(count)]
    for thread in threads:
        thread.start()
    if isinstance(work, ChunkStream):
        work.start()
    ready.wait()
    cpu_started = time.process_time()
    started = progress.started = time.perf_counter()
    try:
        for thread in threads:
            thread.join()
    finally:
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        for worker in workers:
            worker.close()
    if isinstance(work, ChunkStream) and work.error is not None and not failures:
        failures.append(work.error)
    stats = PhaseStats(progress.rows, progress.bytes, seconds, list(progress.worker_rows),
                       list(progress.worker_bytes), progress.flushes, cpu_seconds)
    if failures:
        raise PhaseFailed(stats, failures[0])
    return stats


class PhaseFailed(RunError):
    """A phase stopped by an error; carries what was finished before it."""

    def __init__(self, stats: PhaseStats, cause: BaseException):
        message = str(cause) if isinstance(cause, RunError) else f"{type(cause).__name__}: {one_line(cause)}"
        super().__init__(message)
        self.stats = stats
        self.cause = cause
