"""QWP through the questdb client's ``questdb.connect()``: ``QuestDB.query(sql)`` over WebSocket on the server's HTTP
port (QuestDB 10+), its result streamed batch by batch in the kind of frame the read asks for, each the client's
own decoding of a batch: ``iter_pandas()`` (NumPy-backed: SYMBOL as ``category``, TIMESTAMP as ``datetime64[us]``
without a zone), ``iter_pandas(dtype_backend="pyarrow")`` (``pandas-arrow``), ``iter_arrow()`` (each batch a pyarrow
Table of one record batch) or ``iter_polars()``. These are the same decoders as ``to_pandas()``, ``to_arrow()`` and
``to_polars()``, which read the whole result into one frame: a batch at a time, a read holds what the other readers
hold, never the whole table.

A frame is one batch of the server's (16,384 rows from the pinned QWP server), whatever ``--chunk-rows`` says:
gathering pandas batches into larger frames would copy them (and their categoricals, whose categories grow from
batch to batch, would turn into strings), which no user of ``iter_pandas()`` pays. The client hides its socket: no
byte count. A read stopped early closes its result, which drops that connection (the handle is closed next).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from harness.frames.kinds import FrameKind
from harness.questdb.qwp_client import connect
from harness.read.connection import Endpoint
from harness.read.frames import Column


def _pandas(result) -> Iterator[object]:
    return result.iter_pandas()


def _pandas_arrow(result) -> Iterator[object]:
    return result.iter_pandas(dtype_backend="pyarrow")


def _arrow(result) -> Iterator[object]:
    return (pa.Table.from_batches([batch]) for batch in result.iter_arrow())


def _polars(result) -> Iterator[object]:
    return result.iter_polars()


# Frame kind -> the client's stream of that kind.
_BATCHES = {FrameKind.pandas: _pandas, FrameKind.pandas_arrow: _pandas_arrow, FrameKind.arrow: _arrow,
            FrameKind.polars: _polars}


class QwpReader:
    def __init__(self, endpoint: Endpoint, frame: FrameKind = FrameKind.pandas):
        self._db = connect(endpoint.host, endpoint.http_port, endpoint.http, endpoint.http_tls)
        self._batches = _BATCHES[frame]

    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[object]:
        result = self._db.query(sql)
        try:
            yield from self._batches(result)
        finally:
            result.close()

    def received_bytes(self) -> int | None:
        return None

    def close(self) -> None:
        self._db.close()
