"""ILP serialization of DataFrames through the official client's serializer (never our own).

Owns the one place that builds client buffers, so the protocol version and the symbol/timestamp
column choices are the same for `generate`, serialize-only runs and sends.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Iterable
from typing import BinaryIO

import numpy as np
import pandas as pd

# questdb 6 exports a standalone `Buffer` (one that needs no connected sender) only from its deprecated but
# public `questdb.ingress` module, which warns on import; the version is pinned below 7 in pyproject.toml.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from questdb.ingress import Buffer

from harness.ingest.ordered_write import SerializeJob, write_in_order
from harness.tsbs.schema import TIMESTAMP_COLUMN
from harness.tsbs.use_case import Chunk, chunk_rows

TEXT_PROTOCOL = 1


def new_buffer(protocol_version: int = TEXT_PROTOCOL, init_buf_size: int = 1 << 20) -> Buffer:
    return Buffer(protocol_version=protocol_version, init_buf_size=init_buf_size)


# What a frame passes ``dataframe()``: ``(symbols, at)`` (a source's ``dataframe_symbols``, ``dataframe_at``).
FrameColumns = tuple[bool | str | tuple[str, ...], str]
# TSBS's frames: every categorical/str tag column a symbol, ``timestamp`` the designated timestamp.
TSBS_COLUMNS: FrameColumns = (True, TIMESTAMP_COLUMN)


def append_frame(buffer: Buffer, frame: pd.DataFrame, table: str, symbols: bool | str | tuple[str, ...] = True,
                 at: str = TIMESTAMP_COLUMN) -> None:
    """Serialize one frame, its ``symbols`` and designated ``at`` as ``FrameColumns`` say (TSBS's by default)."""
    buffer.dataframe(frame, table_name=table, symbols=client_symbols(symbols), at=at)


def client_symbols(symbols: bool | str | tuple[str, ...]):
    # The client takes a bool, "auto" or a list of column names (not a tuple).
    return list(symbols) if isinstance(symbols, tuple) else symbols


def write_ilp(chunks: Iterable[Chunk], out: BinaryIO, protocol_version: int = TEXT_PROTOCOL,
              workers: int = 1, go_floats: bool = False) -> tuple[int, int]:
    """Serialize chunks and write them to ``out`` in order (``write_in_order``: with ``workers > 1`` on a
    thread pool, the client releasing the GIL while it serializes); returns (rows, bytes). A chunk of
    several tables is written in time order (``file_pieces``), as TSBS prints its measurements;
    ``go_floats`` prints doubles as Go does (``go_float_text``).
    """
    local = threading.local()  # one client buffer per thread, reused chunk after chunk

    def job(chunk: Chunk) -> SerializeJob:
        def serialize() -> tuple[int, list]:
            if not hasattr(local, "buffer"):
                local.buffer = new_buffer(protocol_version)
            return chunk_rows(chunk), file_pieces(local.buffer, chunk, go_floats)
        return serialize

    return write_in_order(map(job, chunks), out, workers)


def serialize_chunk(buffer: Buffer, chunk: Chunk) -> bytes:
    """The ILP bytes of one chunk, table by table; ``buffer`` is left empty for reuse."""
    for table, frame in chunk.items():
        append_frame(buffer, frame, table)
    data = bytes(buffer)
    buffer.clear()
    return data


def file_bytes(buffer: Buffer, chunk: Chunk, go_floats: bool = False) -> bytes:
    return b"".join(file_pieces(buffer, chunk, go_floats))


def file_pieces(buffer: Buffer, chunk: Chunk, go_floats: bool = False) -> list:
    """A chunk's ILP lines in timestamp order, ties in table order, as consecutive byte pieces: TSBS's
    order when each table's frame is in time order (devops prints, epoch by epoch, every measurement in
    turn). Each table is serialized by one ``dataframe()`` call; its lines are then cut where the
    timestamp changes and the tables' runs interleaved, without copying them."""
    if len(chunk) == 1 and not go_floats:
        return [serialize_chunk(buffer, chunk)]
    pieces: list[bytes] = []
    keys: list[np.ndarray] = []
    bounds: list[np.ndarray] = []
    for position, (table, frame) in enumerate(chunk.items()):
        append_frame(buffer, frame, table)
        data = bytes(buffer)
        buffer.clear()
        if go_floats:
            data = _with_go_floats(frame, data)
        pieces.append(data)
        if len(chunk) == 1:
            break
        timestamps = frame[TIMESTAMP_COLUMN].array.asi8
        group_starts = np.flatnonzero(np.diff(timestamps)) + 1
        group_stamps = timestamps[np.concatenate([[0], group_starts])]
        byte_starts = [0]
        for stamp in group_stamps[1:].tolist():
            # Every line ends with its timestamp: the group's first line is the first to end with its own.
            line_end = data.find(b" %d\n" % stamp, byte_starts[-1])
            byte_starts.append(data.rfind(b"\n", 0, line_end) + 1)
        byte_starts = np.array(byte_starts, dtype=np.int64)
        byte_ends = np.append(byte_starts[1:], len(data))
        keys.append(np.stack([group_stamps, np.full(len(group_stamps), position)]))
        bounds.append(np.stack([np.full(len(group_stamps), position), byte_starts, byte_ends]))
    if len(pieces) == 1:
        return pieces
    key = np.concatenate(keys, axis=1)
    segments = np.concatenate(bounds, axis=1)[:, np.lexsort((key[1], key[0]))]
    views = [memoryview(piece) for piece in pieces]
    return [views[table][start:end] for table, start, end in segments.T.tolist()]


def _with_go_floats(frame: pd.DataFrame, data: bytes) -> bytes:
    """``go_float_text`` applied to only the lines whose doubles the client prints unlike Go (whole numbers,
    exponents): found from the values, so the bytes of every other line are never scanned."""
    doubles = [frame[column].to_numpy() for column, dtype in frame.dtypes.items() if dtype.kind == "f"]
    if not doubles:
        return data
    differs = np.zeros(len(frame), dtype=bool)
    for values in doubles:
        magnitude = np.abs(values)
        differs |= (values == np.trunc(values)) | ((magnitude < 1e-5) | (magnitude >= 1e16)) & (values != 0)
    rows = np.flatnonzero(differs)
    if not len(rows):
        return data
    line_ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n")) + 1
    if len(line_ends) != len(frame):  # an escaped newline inside a value: TSBS's data has none
        raise ValueError(f"{len(line_ends)} lines for {len(frame)} rows")
    starts = np.concatenate([[0], line_ends[:-1]])
    view = memoryview(data)
    fixed = go_float_text(b"".join([view[start:end] for start, end in zip(starts[rows].tolist(),
                                                                        line_ends[rows].tolist())]))
    fixed_lines = fixed.splitlines(keepends=True)
    pieces, position = [], 0
    for row, line in zip(rows.tolist(), fixed_lines):
        pieces.append(view[position:starts[row]])
        pieces.append(line)
        position = int(line_ends[row])
    pieces.append(view[position:])
    return b"".join(pieces)


# The client prints a double in the shortest form that reads back exactly, as Go does, but keeps a ".0" on
# whole numbers and switches to an exponent outside [1e-5, 1e16); Go's 'f' format (TSBS's) does neither.
_WHOLE_DOUBLE = re.compile(rb"=(-?[0-9]+)\.0(?=[ ,])")
_EXPONENT_DOUBLE = re.compile(rb"=(-?[0-9]+(?:\.[0-9]+)?e[-+]?[0-9]+)(?=[ ,])")


def go_float_text(data: bytes) -> bytes:
    """ILP text with every double printed as Go's ``strconv.FormatFloat(v, 'f', -1, 64)``: the same shortest
    digits, no ".0" on whole numbers, never an exponent. Tag values must not look like numbers with a
    fraction (TSBS's never do)."""
    data = _WHOLE_DOUBLE.sub(rb"=\1", data)
    if b"e" in data:
        data = _EXPONENT_DOUBLE.sub(_positional, data)
    return data


def _positional(match: re.Match) -> bytes:
    return b"=" + np.format_float_positional(float(match.group(1)), unique=True, trim="-").encode()
