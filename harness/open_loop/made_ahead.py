"""Chunks made ahead of an open loop's schedule (``--chunks-ahead``): by a process of their own (``MadeAhead``), so
that making them never holds the scheduling threads' GIL, or by the send stream's thread (``ahead_of_schedule``
chooses, and records what bounded them).

The TSBS generator and a file's reader run Python and C that keep the GIL for tens of milliseconds at a time
(building a DataFrame, converting a batch); in the process that schedules the chunks that time falls on the
chunks due then. Here the source's iterator is handed to a forked child (it inherits the iterator as it stands,
unread), which makes each chunk, pickles it and writes it to a pipe. The parent only reads the bytes and unpickles
them (a copy of the columns' buffers). What the child may hold made and not yet read is bounded twice: at most
``max_chunks`` chunks (stated as rows) and at most ``max_bytes`` bytes; it waits while either is full (the
end marker and an error count as a chunk).

A chunk the child could not make ends the iteration with its error, raised in the parent as the source's own
(a ``UsageError`` stays one, the file's bad value named). Closing (or the parent's exit) stops the child. The
child's CPU time is its own (``cpu_seconds``): no figure of the parent's process includes it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import time
from collections.abc import Callable, Iterator
from enum import StrEnum

import psutil

from harness.errors import RunError, UsageError, one_line
from harness.tsbs.use_case import Chunk
from harness.ingest.phase_loop import stream_depth
from harness.records.run_record import ChunksAheadFigures, OpenLoopFigures


class ChunksAhead(StrEnum):
    """Who makes an open loop's chunks ahead of their time: a process of their own (off the scheduling threads'
    GIL), or a thread of the scheduling process."""

    process = "process"
    thread = "thread"


# The most chunks made ahead may hold made and not yet read: this many rows (as whole chunks, two at least) and MiB.
AHEAD_ROWS = 500_000
AHEAD_MIB = 64

# How often the child looks again when the bytes it may hold are full.
_FULL_POLL_SECONDS = 0.002
_CHILD_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class MadeAhead:
    """Iterates over ``chunks`` as made by a forked child, at most ``max_chunks`` and ``max_bytes`` ahead."""

    def __init__(self, chunks: Iterator[Chunk], chunk_row_count: int, max_rows: int = AHEAD_ROWS,
                 max_mib: float = AHEAD_MIB):
        self.max_chunks = max(2, -(-max_rows // chunk_row_count))
        self.max_rows = self.max_chunks * chunk_row_count
        self.max_mib = max_mib
        max_bytes = int(max_mib * 2**20)
        # The most the child held made and not yet read, seen at each read; the CPU time it used.
        self.peak_chunks, self.peak_bytes = 0, 0
        self.cpu_seconds: float | None = None
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._held = context.Array("q", 2)  # chunks and pickled bytes written and not yet read
        self._process = context.Process(target=_make, name="chunks-ahead", daemon=True,
                                        args=(chunks, self._receive, send, self._held, self.max_chunks, max_bytes,
                                              os.getpid()))
        # The child inherits this thread's signal mask: blocked until it has put its own handlers in place, so
        # that a signal in between never runs the parent's Python handler in it.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _CHILD_SIGNALS)
        try:
            self._process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        send.close()  # the child's end: once the child is gone, a read ends instead of waiting
        self._done = False

    def __iter__(self) -> MadeAhead:
        return self

    def __next__(self) -> Chunk:
        if self._done:
            raise StopIteration
        try:
            data = self._receive.recv_bytes()
        except (EOFError, OSError):
            self._done = True
            raise RunError(f"the process making the chunks ahead ended unexpectedly (exit code "
                           f"{self._exit_code()})") from None
        with self._held.get_lock():
            chunks, held = self._held[0], self._held[1]
            self._held[0] -= 1
            self._held[1] -= len(data)
        self.peak_chunks, self.peak_bytes = max(self.peak_chunks, chunks), max(self.peak_bytes, held)
        kind, value = pickle.loads(data)
        if kind == "end":
            self._done = True
            self.cpu_seconds = value
            raise StopIteration
        if kind == "error":
            self._done = True
            bad_input, message = value
            raise (UsageError if bad_input else RunError)(message)
        return value

    def _exit_code(self):
        self._process.join(timeout=1.0)
        return self._process.exitcode

    def close(self) -> None:
        """Stop the child (it may be waiting to write a chunk no one will read) and release the pipe; its CPU
        time read first (once reaped, only its own last word, the end, tells it)."""
        try:
            child = psutil.Process(self._process.pid)
            if child.ppid() == os.getpid():  # still ours, not a later process given its number
                times = child.cpu_times()
                self.cpu_seconds = round(times.user + times.system, 3)
        except (psutil.Error, ValueError):
            pass
        if self._process.is_alive():
            self._process.terminate()
        self._process.join(timeout=5.0)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._receive.close()
        self._done = True

    def __enter__(self) -> MadeAhead:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextlib.contextmanager
def ahead_of_schedule(chunks: Iterator[Chunk], maker: ChunksAhead, chunk_rows: int, threads: int,
                      figures: OpenLoopFigures, say: Callable[[str], None]) -> Iterator[Iterator[Chunk]]:
    """``chunks`` as ``maker`` makes them ahead of their time: in a process of their own (stopped when the block
    ends), or in the stream's thread of this process (the queue of its ``threads`` workers); what bounds them,
    the most they held and the process's CPU time in ``figures``, said before and after."""
    if maker == ChunksAhead.thread:
        depth = stream_depth(threads)
        ahead = figures.chunks_ahead = ChunksAheadFigures(str(ChunksAhead.thread), depth, depth * chunk_rows)
        say(f"Chunks {ahead.text()}")
        yield chunks
        return
    made = MadeAhead(chunks, chunk_rows)
    ahead = figures.chunks_ahead = ChunksAheadFigures(str(ChunksAhead.process), made.max_chunks, made.max_rows,
                                                      made.max_mib)
    say(f"Chunks {ahead.text()}")
    try:
        yield made
    finally:
        made.close()
        ahead.peak_chunks, ahead.peak_mib = made.peak_chunks, round(made.peak_bytes / 2**20, 1)
        ahead.cpu_seconds = made.cpu_seconds
        say(f"Chunks {ahead.text()}")


def _make(chunks: Iterator[Chunk], receive, send, held, max_chunks: int, max_bytes: int, parent: int) -> None:
    """The child: each chunk pickled into the pipe once a slot and room for its bytes are free; then the end,
    or the error that ended it. It ends on its own when the parent is gone (killed, it could not stop it)."""
    # Ctrl-C reaches the whole process group: the parent stops this process, and a traceback of its own would only
    # clutter the one line the parent prints. The parent's SIGTERM (its close) ends it at once.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _CHILD_SIGNALS)
    # The parent's end of the pipe, inherited: held here, a write into a pipe no one reads any more (the parent
    # killed) would wait for good instead of failing.
    receive.close()
    try:
        try:
            for chunk in chunks:
                data = pickle.dumps(("chunk", chunk), protocol=pickle.HIGHEST_PROTOCOL)
                _write(data, send, held, max_chunks, max_bytes, parent)
            data = pickle.dumps(("end", round(time.process_time(), 3)))
        except _ParentGone:
            return
        except Exception as exc:  # the source's own error, told to the parent in one line
            data = pickle.dumps(("error", (isinstance(exc, UsageError), _one_line(exc))))
        _write(data, send, held, max_chunks, max_bytes, parent)
    except (_ParentGone, OSError):
        pass  # the parent has gone or closed the pipe: nothing is waiting for the chunks
    finally:
        send.close()
        os._exit(0)


def _write(data: bytes, send, held, max_chunks: int, max_bytes: int, parent: int) -> None:
    """Once there is room (a chunk larger than the whole bound still goes, alone), ``data`` into the pipe."""
    while True:
        if os.getppid() != parent:  # the parent died: no one will read, and the pipe may never break
            raise _ParentGone
        with held.get_lock():
            if held[0] == 0 or (held[0] < max_chunks and held[1] + len(data) <= max_bytes):
                held[0] += 1
                held[1] += len(data)
                break
        time.sleep(_FULL_POLL_SECONDS)
    send.send_bytes(data)


class _ParentGone(Exception):
    """The process that reads the chunks has died."""


def _one_line(exc: BaseException) -> str:
    """The harness's own errors as they are; anything else named by its type, as a phase names it."""
    return one_line(exc) if isinstance(exc, (RunError, UsageError)) else f"{type(exc).__name__}: {one_line(exc)}"
