"""PGWire through connectorx: a Rust client decoding rows straight into Arrow record batches of ``chunk_rows``
rows (``return_type="arrow_stream"``). Its ``cursor`` protocol is the one QuestDB 9.3.4 answers (``binary``
and ``csv`` use ``COPY ... TO STDOUT``, which it rejects). The driver hides its socket: no byte count."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

# The driver's Rust pool logs every failed connection attempt to stderr while it retries (a refused login:
# seven lines over ~25 s); the read's one error line says what failed. A user's own RUST_LOG stands.
os.environ.setdefault("RUST_LOG", "off")

import connectorx  # noqa: E402 (after RUST_LOG: the driver's logger reads it when first used)
import pandas as pd  # noqa: E402

from harness.read.connection import Endpoint
from harness.read.frames import ArrowChunks, Column, arrow_frame


class ConnectorxReader:
    def __init__(self, endpoint: Endpoint):
        self._url = endpoint.pg_url

    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[pd.DataFrame]:
        batches = connectorx.read_sql(self._url, sql, protocol="cursor", return_type="arrow_stream",
                                      batch_size=chunk_rows)
        for table in ArrowChunks(chunk_rows).tables(batches):
            yield arrow_frame(table, columns)

    def received_bytes(self) -> int | None:
        return None

    def close(self) -> None:
        pass
