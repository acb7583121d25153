"""PGWire through connectorx: a Rust client decoding rows straight into Arrow record batches of ``chunk_rows``
rows (``return_type="arrow_stream"``). Its ``cursor`` protocol is the one QuestDB 9.3.4 answers (``binary``
and ``csv`` use ``COPY ... TO STDOUT``, which it rejects). The driver hides its socket: no byte count."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import connectorx
import pandas as pd

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
