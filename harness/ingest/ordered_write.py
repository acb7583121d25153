"""Chunks serialized on worker threads and written to one file in their order.

The pipeline behind `generate` and `bench --write-ilp`, whoever serializes: the calling thread produces
the next chunks while workers turn earlier ones into bytes (numba kernels and the questdb client both
release the GIL while they work), and finished chunks are written in the order they were produced.
Imports nothing heavier than the standard library, so that a caller pays only for its own serializer.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

# A chunk's serialization: called on a worker thread, it returns (rows, the chunk's bytes as pieces that
# are written one after another: bytes, memoryviews or contiguous uint8 arrays).
SerializeJob = Callable[[], tuple[int, list]]


def default_workers() -> int:
    """One serializer thread per core this process may run on."""
    return len(os.sched_getaffinity(0))


def write_in_order(jobs: Iterable[SerializeJob], out: BinaryIO, workers: int = 1) -> tuple[int, int]:
    """Run each job and write its pieces to ``out`` in the jobs' order; returns (rows, bytes).

    With ``workers > 1`` jobs run on a thread pool while this thread draws the next ones from ``jobs``
    (which is where a generator does its own work); at most two jobs per worker are pending, so memory
    stays flat however long the stream.
    """
    rows = written = 0

    def write(done_rows: int, pieces: list) -> None:
        nonlocal rows, written
        out.writelines(pieces)
        rows += done_rows
        written += sum(memoryview(piece).nbytes for piece in pieces)

    if workers <= 1:
        for job in jobs:
            write(*job())
        return rows, written

    in_flight: deque = deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="serialize") as pool:
        for job in jobs:
            in_flight.append(pool.submit(job))
            while len(in_flight) > 2 * workers or (in_flight and in_flight[0].done()):
                write(*in_flight.popleft().result())
        while in_flight:
            write(*in_flight.popleft().result())
    return rows, written
