"""ILP serialization of DataFrames through the official client's serializer (never our own).

Owns the one place that builds client buffers, so the protocol version and the symbol/timestamp
column choices are the same for `generate`, serialize-only runs and sends.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

import pandas as pd

# The client keeps `Buffer` only under the deprecated `questdb.ingress` path (which warns on import);
# this is the same class, taken from where that module re-exports it.
from questdb._client import Buffer

from harness.tsbs.cpu_only import TABLE_NAME, TIMESTAMP_COLUMN

TEXT_PROTOCOL = 1


def new_buffer(protocol_version: int = TEXT_PROTOCOL, init_buf_size: int = 1 << 20) -> Buffer:
    return Buffer(protocol_version=protocol_version, init_buf_size=init_buf_size)


def append_frame(buffer: Buffer, frame: pd.DataFrame, table: str = TABLE_NAME) -> None:
    """Serialize one TSBS frame: categorical/str tag columns as symbols, `timestamp` as designated."""
    buffer.dataframe(frame, table_name=table, symbols=True, at=TIMESTAMP_COLUMN)


def default_workers() -> int:
    """One serializer thread per core this process may run on."""
    return len(os.sched_getaffinity(0))


def write_ilp(frames: Iterable[pd.DataFrame], out: BinaryIO, protocol_version: int = TEXT_PROTOCOL,
              table: str = TABLE_NAME, workers: int = 1) -> tuple[int, int]:
    """Serialize frames and write them to ``out`` in order; returns (rows, bytes).

    With ``workers > 1`` frames are serialized on a thread pool (the client releases the GIL while it
    serializes) while this thread generates the next frames and writes finished ones in order.
    """
    rows = written = 0
    if workers <= 1:
        buffer = new_buffer(protocol_version)
        for frame in frames:
            data = serialize_frame(buffer, frame, table)
            out.write(data)
            rows += len(frame)
            written += len(data)
        return rows, written

    local = threading.local()

    def serialize(frame: pd.DataFrame) -> tuple[int, bytes]:
        if not hasattr(local, "buffer"):
            local.buffer = new_buffer(protocol_version)
        return len(frame), serialize_frame(local.buffer, frame, table)

    in_flight: deque = deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ilp-serialize") as pool:
        for frame in frames:
            in_flight.append(pool.submit(serialize, frame))
            # Bounded look-ahead keeps memory flat: at most two frames per worker are pending.
            while len(in_flight) > 2 * workers or (in_flight and in_flight[0].done()):
                frame_rows, data = in_flight.popleft().result()
                out.write(data)
                rows += frame_rows
                written += len(data)
        while in_flight:
            frame_rows, data = in_flight.popleft().result()
            out.write(data)
            rows += frame_rows
            written += len(data)
    return rows, written


def serialize_frame(buffer: Buffer, frame: pd.DataFrame, table: str = TABLE_NAME) -> bytes:
    """The ILP bytes of one frame; ``buffer`` is left empty for reuse."""
    append_frame(buffer, frame, table)
    data = bytes(buffer)
    buffer.clear()
    return data
