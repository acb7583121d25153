"""One timed phase (serialize or send) over chunks of DataFrames, on one thread or N, with live counters.

A chunk maps each table to its DataFrame of consecutive rows (cpu-only: one table; devops: one per
measurement); a worker serializes or sends all of a chunk's tables, then flushes once.

Owns the measurement loop of the original py-tsbs-benchmark, rebuilt: chunks are dealt round-robin to
workers (or pulled from a bounded queue in stream mode), each worker serializes into its own buffer or
sends through its own connection, and the phase's clock runs from the moment every worker is ready
until the last one has finished. Per-chunk progress goes to the phase's ``PhaseProgress``, which the
progress printer, the metrics and the record read. A failing worker stops the others; the rows finished before the
failure are reported, never guessed. What a worker does with a chunk is ``harness.ingest.workers``'.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence

from harness.errors import RunError, UsageError, one_line
from harness.tsbs.use_case import Chunk, chunk_rows
from harness.ingest.send_schedule import SendSchedule
from harness.telemetry.phase import PhaseProgress, PhaseRecord


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
    schedule: SendSchedule | None = None,
) -> PhaseRecord:
    """Run ``workers`` over their dealt chunks (or the shared stream) and time the whole phase.

    With a ``schedule`` (an open loop), each chunk waits for its intended time before it goes out, and the
    schedule is told when its send began and ended.

    A flush still unfinished after ``flush_timeout`` seconds fails the phase: ILP over TCP has no timeout
    of its own, so a server that stops reading (frozen, swapped out) would otherwise hold the run forever.
    The stuck worker is left to its daemon thread, never closed under its own feet."""
    return _Phase(progress, workers, work, flush_timeout, schedule).run()


class _Phase:
    """One timed phase's threads, a worker each, and what they share: the stop, the start line every worker waits
    at, the failures and the stuck flushes found."""

    def __init__(self, progress: PhaseProgress, workers: list[Worker], work, flush_timeout: float | None,
                 schedule: SendSchedule | None):
        self.progress, self.workers, self.work = progress, workers, work
        self.flush_timeout, self.schedule = flush_timeout, schedule
        self.stream = work if isinstance(work, ChunkStream) else None
        self.failures: list[BaseException] = []
        self.stuck: set[int] = set()
        self.stop = threading.Event()
        self.ready = threading.Barrier(len(workers) + 1)
        # Daemon threads: an interrupted run must not wait for a worker stuck in a send.
        self.threads = [threading.Thread(target=self._body, args=(index,), name=f"{progress.phase}-{index}",
                                         daemon=True) for index in range(len(workers))]

    def halt(self) -> None:
        self.stop.set()
        if self.stream is not None:
            self.stream.stop()

    def _body(self, index: int) -> None:
        worker = self.workers[index]
        try:
            self.ready.wait()
            if self._process_all(index, worker):
                worker.finish()
        except threading.BrokenBarrierError:
            pass  # the phase never started: it was interrupted or another thread could not start
        except BaseException as exc:
            self.failures.append(exc)
            self.halt()
        finally:
            # The thread using a sender is the one to close it: the client is not thread-safe, and a
            # close from the main thread during a flush can fail and leave the connection open.
            worker.close()

    def _process_all(self, index: int, worker: Worker) -> bool:
        """Worker ``index``'s chunks, each processed in turn (at its intended time, on a schedule); False when the
        phase stopped before they were done."""
        schedule = self.schedule
        chunks = self.stream.take() if self.stream is not None else ((*item, None) for item in self.work[index])
        for number, chunk, waited in chunks:
            if self.stop.is_set():
                return False
            if schedule is not None:
                intended = schedule.wait(number, self.stop, waited)
                if self.stop.is_set():
                    return False
                if intended is None:  # the schedule has ended: this chunk and the rest are never sent
                    break
                began = time.perf_counter()
            nbytes = worker.process(chunk)
            rows = {table: len(frame) for table, frame in chunk.items()}
            self.progress.add(index, chunk_rows(chunk), nbytes, rows)
            self.progress.acknowledge(number)
            if schedule is not None:
                schedule.sent(number, intended, began, time.perf_counter(), rows)
        return True

    def run(self) -> PhaseRecord:
        cpu_started = time.process_time()
        started = time.perf_counter()
        try:
            self._start()
            # Whatever is alive now (the dealt chunks, every imported module) is set aside from the cyclic
            # collector for the phase: a full collection scans every tracked object with the GIL held, stalling
            # all workers at once (about 40 ms a collection in a 2M-row serialize, ~5 % of its time at 2 workers:
            # results/reference/2026-11-25-parity/). Objects made during the phase are collected as usual.
            gc.freeze()
            cpu_started = time.process_time()
            started = self.progress.started = time.perf_counter()
            self._watch()
        except BaseException:
            self._interrupted()
            raise
        finally:
            seconds = time.perf_counter() - started
            cpu_seconds = time.process_time() - cpu_started
            gc.unfreeze()
            for worker, thread in zip(self.workers, self.threads):
                if thread.ident is None:  # never started, so nothing else will close it
                    worker.close()
        if self.stream is not None and self.stream.error is not None and not self.failures:
            self.failures.append(self.stream.error)
        record = self.progress.record(seconds, cpu_seconds)
        if self.failures:
            raise PhaseFailed(record, self.failures[0])
        return record

    def _start(self) -> None:
        """Every worker's thread started and waiting at the start line, the stream making chunks, the schedule
        begun; then all pass the line together."""
        for thread in self.threads:
            thread.start()
        if self.stream is not None:
            self.stream.start()
        if self.schedule is not None:  # before any worker can pass the barrier and ask it
            if self.stream is not None:
                self.stream.wait_filled(STREAM_FILL_SECONDS)
            self.schedule.begin()
        self.ready.wait()

    def _watch(self) -> None:
        """Until every worker is done: a flush stuck past its timeout, or chunks still in flight once a schedule's
        grace is over, fail the phase; a schedule's backlog is sampled meanwhile."""
        schedule, in_flight = self.schedule, 0
        for thread in self.threads:
            while thread.is_alive() and not self.stuck and not in_flight:
                thread.join(timeout=WATCH_SECONDS)
                self.stuck.update(_stuck_flushes(self.workers, self.flush_timeout))
                if schedule is not None:  # the backlog grows while nothing is sent too (a stalled server)
                    now = time.perf_counter()
                    schedule.sample_backlog(now)
                    if schedule.ended(now) and self.stream is not None:
                        self.stream.stop()  # a worker waiting for the source's next chunk takes none
                    if schedule.past_grace(now):
                        in_flight = sum(thread.is_alive() for thread in self.threads)
        if in_flight:
            self.failures.append(RunError(f"{in_flight} chunk(s) still in flight {schedule.grace:g}s (--grace) after "
                                          f"the schedule's end: the server stopped taking rows"))
            self.halt()
        if self.stuck:
            index = min(self.stuck)
            address = getattr(self.workers[index], "address", "the server")
            self.failures.append(RunError(f"worker {index}'s flush to {address} did not finish in "
                                          f"{self.flush_timeout:g}s (--flush-timeout): the server stopped reading"))
            self.halt()

    def _interrupted(self) -> None:
        """Ctrl-C, or a thread that could not start: every worker told to stop, and given a moment to finish the
        chunk in hand and close its connection; one stuck in a send is left behind."""
        self.ready.abort()
        self.halt()
        deadline = time.monotonic() + INTERRUPT_GRACE_SECONDS
        for thread in self.threads:
            if thread.ident is not None:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))


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
