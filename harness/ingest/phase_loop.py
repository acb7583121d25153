"""One timed phase (serialize or send) over chunks of DataFrames, on one thread or N, with live counters.

A chunk maps each table to its DataFrame of consecutive rows (cpu-only: one table; devops: one per
measurement); a worker serializes or sends all of a chunk's tables, then flushes once.

Owns the measurement loop of the original py-tsbs-benchmark, rebuilt: chunks are dealt round-robin to
workers (or pulled from a bounded queue in stream mode), each worker serializes into its own buffer or
sends through its own connection, and the phase's clock runs from the moment every worker is ready
until the last one has finished. Per-chunk progress goes to the phase's ``PhaseProgress``, which the
progress printer, the metrics and the record read. A failing worker stops the others; the rows finished before the failure
are reported, never guessed.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence

import pandas as pd
from questdb import QuestDBError, Sender, TimestampNanos

from harness.errors import RunError, UsageError
from harness.ingest.ilp import (TSBS_COLUMNS, Chunk, FrameColumns, append_frame, append_frame_to_sender, chunk_rows,
                                 flush_sender, new_buffer)
from harness.ingest.open_loop import OpenLoop
from harness.ingest.senders import SenderSettings, one_line, open_sender
from harness.telemetry.phase import PhaseProgress, PhaseRecord
from harness.tsbs.schema import TIMESTAMP_COLUMN


class Worker:
    """What one thread does with each chunk; ``process`` returns the ILP bytes it produced."""

    def process(self, chunk: Chunk) -> int:
        raise NotImplementedError

    def finish(self) -> None:
        """Called once after the last chunk (inside the clock)."""

    def close(self) -> None:
        """Called once by the worker's own thread when it is done, whatever happened."""

    def flushing_since(self) -> float | None:
        """``time.monotonic()`` when the flush in progress began; None when not flushing."""
        return None


def _rows_of(chunk: pd.DataFrame, op: str) -> Iterator[tuple[dict, dict, TimestampNanos]]:
    """Row-by-row access as a Python user without the dataframe API would write it: the frame's numeric
    columns are its fields, the timestamp its designated one, every other column a tag."""
    names = [name for name in chunk.columns if name != TIMESTAMP_COLUMN]
    fields = [name for name in names if pd.api.types.is_numeric_dtype(chunk[name].dtype)]
    tags = [name for name in names if name not in fields]
    if op == "iterrows":
        for _, row in chunk.iterrows():
            yield (
                {tag: row[tag] for tag in tags},
                {name: _python_number(row[name]) for name in fields},
                TimestampNanos(row[TIMESTAMP_COLUMN].value),
            )
    else:
        positions = {name: position for position, name in enumerate(chunk.columns)}
        tag_at, field_at = [positions[tag] for tag in tags], [positions[name] for name in fields]
        timestamp_at = positions[TIMESTAMP_COLUMN]
        for row in chunk.itertuples(index=False, name=None):
            yield (
                {tag: row[position] for tag, position in zip(tags, tag_at)},
                {name: _python_number(row[position]) for name, position in zip(fields, field_at)},
                TimestampNanos(row[timestamp_at].value),
            )


def _python_number(value):
    # The row API takes Python int/float; numpy int64 is not an int subclass.
    return value.item() if hasattr(value, "item") else value


class SerializeWorker(Worker):
    """Serializes into an in-memory buffer, cleared after every chunk (bytes counted, not kept)."""

    def __init__(self, op: str, protocol_version: int, columns: FrameColumns = TSBS_COLUMNS):
        self.op = op
        self.buffer = new_buffer(protocol_version)
        self.columns = columns

    def process(self, chunk: Chunk) -> int:
        for table, frame in chunk.items():
            if self.op == "dataframe":
                append_frame(self.buffer, frame, table, *self.columns)
            else:
                for symbols, columns, at in _rows_of(frame, self.op):
                    self.buffer.row(table, symbols=symbols, columns=columns, at=at)
        nbytes = len(self.buffer)
        self.buffer.clear()
        return nbytes


class SendWorker(Worker):
    """Sends through its own connection and flushes after every chunk, timing each flush.

    With ``resend_for`` seconds (exactly-once over HTTP, into a deduplicating table), a chunk whose
    flush failed is sent again on a new connection until it succeeds or that long has passed since the
    first failure: each flush is one transaction, so a chunk either committed or not, and one sent twice
    replaces itself. Re-sent chunks and the seconds spent without a connection are counted."""

    # Between two attempts while the server is away: short against a restart, long against a busy loop.
    RESEND_PAUSE_SECONDS = 0.5

    def __init__(self, op: str, target: SenderSettings, progress: PhaseProgress, index: int,
                 resend_for: float | None = None, columns: FrameColumns = TSBS_COLUMNS):
        self.op = op
        self.columns = columns
        self.target = target
        self.progress = progress
        self.index = index
        self.resend_for = resend_for
        self.sender: Sender | None = open_sender(target)
        self.address = target.address
        self._flush_started: float | None = None

    def _send(self, chunk: Chunk) -> int:
        for table, frame in chunk.items():
            if self.op == "dataframe":
                symbols, at = self.columns
                append_frame_to_sender(self.sender, frame, table, symbols, at)
            else:
                for symbols, columns, at in _rows_of(frame, self.op):
                    self.sender.row(table, symbols=symbols, columns=columns, at=at)
        nbytes = len(self.sender)
        started = time.perf_counter()
        self._flush_started = time.monotonic()
        try:
            flush_sender(self.sender)
        finally:
            self._flush_started = None
        self.progress.flushed(self.index, time.perf_counter() - started)
        return nbytes

    def flushing_since(self) -> float | None:
        return self._flush_started

    def process(self, chunk: Chunk) -> int:
        first_failure = None
        while True:
            try:
                if self.sender is None:
                    self.sender = open_sender(self.target)
                nbytes = self._send(chunk)
                break
            except (QuestDBError, RunError) as exc:
                if self.resend_for is None:
                    raise RunError(f"sending to {self.address} failed: {self.target.refusal(one_line(exc))}") from None
                now = time.monotonic()
                first_failure = first_failure or now
                if now - first_failure > self.resend_for:
                    raise RunError(f"sending to {self.address} failed for {self.resend_for:g}s "
                                   f"(--retry-timeout): {self.target.refusal(one_line(exc))}") from None
                self.close()
                time.sleep(self.RESEND_PAUSE_SECONDS)
                self.progress.resent(self.index)
        if first_failure is not None:
            self.progress.waited(time.monotonic() - first_failure)
        return nbytes

    def close(self) -> None:
        if self.sender is None:
            return
        sender, self.sender = self.sender, None
        try:
            sender.close(flush=False)
        except QuestDBError:
            pass  # the phase's own error (if any) is the one worth reporting


def deal_round_robin(chunks: Sequence[Chunk], workers: int, first_index: int = 0) -> list[list[tuple[int, Chunk]]]:
    """Chunk i goes to worker i % workers, as the original benchmark dealt them; each keeps its number
    in the data set (``first_index`` is the first one's), so the phase can say which were acknowledged."""
    numbered = list(enumerate(chunks, first_index))
    return [numbered[worker::workers] for worker in range(workers)]


def stream_depth(workers: int, depth_per_worker: int = 2) -> int:
    """How many chunks a ``ChunkStream`` holds made and not yet taken."""
    return max(2, depth_per_worker * workers)


class ChunkStream:
    """Generates chunks on a background thread into a bounded queue that the workers drain, so a
    run larger than memory holds only a few chunks at a time."""

    _DONE = object()

    def __init__(self, chunks: Iterable[Chunk], workers: int, depth_per_worker: int = 2, first_index: int = 0):
        self._queue: queue.Queue = queue.Queue(maxsize=stream_depth(workers, depth_per_worker))
        self.first_index = first_index
        self._chunks = enumerate(chunks, first_index)
        self._workers = workers
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self.rows_made = 0  # rows of the chunks taken from the source (sent or not)
        self._thread = threading.Thread(target=self._produce, name="chunk-generator", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait_filled(self, timeout: float) -> None:
        """Until the queue is full or the chunks have all been made (or ``timeout`` seconds): an open loop's
        schedule starts with chunks at hand, not with the generator's first warm-up."""
        deadline = time.monotonic() + timeout
        while (not self._queue.full() and self._thread.is_alive() and not self._stop.is_set()
               and time.monotonic() < deadline):
            time.sleep(0.005)

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
            for item in self._chunks:
                self.rows_made += chunk_rows(item[1])
                if not self._put(item):
                    return
        except BaseException as exc:  # handed to the phase, which reports it
            self.error = exc
        finally:
            for _ in range(self._workers):
                self._put(self._DONE)

    def take(self) -> Iterator[tuple[int, Chunk, tuple[float, float] | None]]:
        """Each chunk with its number, and from when to when the taker waited for it (None: it was at hand)."""
        # Waits in short steps: once the stream is stopped (a worker failed), the producer may never put
        # the end markers, and a worker blocked for good in get() would hang the run.
        while True:
            waited = None
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                asked = time.perf_counter()
                while True:
                    try:
                        item = self._queue.get(timeout=0.2)
                        break
                    except queue.Empty:
                        if self._stop.is_set():
                            return
                waited = (asked, time.perf_counter())
            if item is self._DONE:
                return
            yield (*item, waited)

    def stop(self) -> None:
        self._stop.set()
        # Unblock the producer and drain what it queued.
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def close(self) -> None:
        """Stop, and wait for the producer to put down the chunk it is making: the source is then free for
        another stream (an open loop's next rate), never read by two threads at once."""
        self.stop()
        if self._thread.ident is not None:
            self._thread.join()


def run_phase(
    progress: PhaseProgress,
    workers: list[Worker],
    work: list[list[tuple[int, Chunk]]] | ChunkStream,
    flush_timeout: float | None = None,
    schedule: OpenLoop | None = None,
) -> PhaseRecord:
    """Run ``workers`` over their dealt chunks (or the shared stream) and time the whole phase.

    With a ``schedule`` (an open loop), each chunk waits for its intended time before it goes out, and the
    schedule is told when its send began and ended.

    A flush still unfinished after ``flush_timeout`` seconds fails the phase: ILP over TCP has no timeout
    of its own, so a server that stops reading (frozen, swapped out) would otherwise hold the run forever.
    The stuck worker is left to its daemon thread, never closed under its own feet."""
    count = len(workers)
    failures: list[BaseException] = []
    stuck: set[int] = set()
    stop = threading.Event()
    ready = threading.Barrier(count + 1)

    def halt() -> None:
        stop.set()
        if isinstance(work, ChunkStream):
            work.stop()

    def body(index: int) -> None:
        worker = workers[index]
        try:
            ready.wait()
            chunks = work.take() if isinstance(work, ChunkStream) else ((*item, None) for item in work[index])
            for number, chunk, waited in chunks:
                if stop.is_set():
                    return
                if schedule is not None:
                    intended = schedule.wait(number, stop, waited)
                    if stop.is_set():
                        return
                    if intended is None:  # the schedule has ended: this chunk and the rest are never sent
                        break
                    began = time.perf_counter()
                nbytes = worker.process(chunk)
                rows = {table: len(frame) for table, frame in chunk.items()}
                progress.add(index, chunk_rows(chunk), nbytes, rows)
                progress.acknowledge(number)
                if schedule is not None:
                    schedule.sent(number, intended, began, time.perf_counter(), rows)
            worker.finish()
        except threading.BrokenBarrierError:
            pass  # the phase never started: it was interrupted or another thread could not start
        except BaseException as exc:
            failures.append(exc)
            halt()
        finally:
            # The thread using a sender is the one to close it: the client is not thread-safe, and a
            # close from the main thread during a flush can fail and leave the connection open.
            worker.close()

    # Daemon threads: an interrupted run must not wait for a worker stuck in a send.
    threads = [threading.Thread(target=body, args=(index,), name=f"{progress.phase}-{index}", daemon=True)
               for index in range(count)]
    cpu_started = time.process_time()
    started = time.perf_counter()
    try:
        for thread in threads:
            thread.start()
        if isinstance(work, ChunkStream):
            work.start()
        if schedule is not None:  # before any worker can pass the barrier and ask it
            if isinstance(work, ChunkStream):
                work.wait_filled(STREAM_FILL_SECONDS)
            schedule.begin()
        ready.wait()
        # Whatever is alive now (the dealt chunks, every imported module) is set aside from the cyclic
        # collector for the phase: a full collection scans every tracked object with the GIL held, stalling
        # all workers at once (about 40 ms a collection in a 2M-row serialize, ~5 % of its time at 2 workers:
        # results/reference/2026-11-25-parity/). Objects made during the phase are collected as usual.
        gc.freeze()
        cpu_started = time.process_time()
        started = progress.started = time.perf_counter()
        in_flight = 0
        for thread in threads:
            while thread.is_alive() and not stuck and not in_flight:
                thread.join(timeout=WATCH_SECONDS)
                stuck.update(_stuck_flushes(workers, flush_timeout))
                if schedule is not None:  # the backlog grows while nothing is sent too (a stalled server)
                    now = time.perf_counter()
                    schedule.sample_backlog(now)
                    if schedule.ended(now) and isinstance(work, ChunkStream):
                        work.stop()  # a worker waiting for the source's next chunk takes none
                    if schedule.past_grace(now):
                        in_flight = sum(thread.is_alive() for thread in threads)
        if in_flight:
            failures.append(RunError(f"{in_flight} chunk(s) still in flight {schedule.grace:g}s (--grace) after the "
                                     f"schedule's end: the server stopped taking rows"))
            halt()
        if stuck:
            index = min(stuck)
            failures.append(RunError(f"worker {index}'s flush to {getattr(workers[index], 'address', 'the server')} "
                                     f"did not finish in {flush_timeout:g}s (--flush-timeout): the server "
                                     f"stopped reading"))
            halt()
    except BaseException:
        # Ctrl-C, or a thread that could not start: tell every worker to stop, and give them a moment
        # to finish the chunk in hand and close their connections; one stuck in a send is left behind.
        ready.abort()
        halt()
        deadline = time.monotonic() + INTERRUPT_GRACE_SECONDS
        for thread in threads:
            if thread.ident is not None:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        raise
    finally:
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        gc.unfreeze()
        for worker, thread in zip(workers, threads):
            if thread.ident is None:  # never started, so nothing else will close it
                worker.close()
    if isinstance(work, ChunkStream) and work.error is not None and not failures:
        failures.append(work.error)
    record = progress.record(seconds, cpu_seconds)
    if failures:
        raise PhaseFailed(record, failures[0])
    return record


# How often the phase looks for a stuck flush (and samples an open loop's backlog) while its workers run.
WATCH_SECONDS = 0.2
# How long an open loop's schedule waits for the chunk stream to fill before it starts all the same.
STREAM_FILL_SECONDS = 60.0
# How long Ctrl-C waits for the workers to put down their chunks and close their connections.
INTERRUPT_GRACE_SECONDS = 5.0


def _stuck_flushes(workers: list[Worker], flush_timeout: float | None) -> set[int]:
    if flush_timeout is None:
        return set()
    now = time.monotonic()
    return {index for index, worker in enumerate(workers)
            if (since := worker.flushing_since()) is not None and now - since > flush_timeout}


class PhaseFailed(RunError):
    """A phase stopped by an error; carries what was finished before it."""

    def __init__(self, record: PhaseRecord, cause: BaseException):
        # The harness's own errors are one line already; a bad value of the user's file is a UsageError.
        message = str(cause) if isinstance(cause, (RunError, UsageError)) else \
            f"{type(cause).__name__}: {one_line(cause)}"
        super().__init__(message)
        self.record = record
        self.cause = cause
