"""PGWire through connectorx: a Rust client decoding rows straight into Arrow record batches of ``chunk_rows``
rows (``return_type="arrow_stream"``). Its ``cursor`` protocol is the one QuestDB 9.3.4 answers (``binary``
and ``csv`` use ``COPY ... TO STDOUT``, which it rejects). The driver hides its socket: no byte count.

The driver's connection pool retries a connection that fails (a refused login, an untrusted certificate) for
about 30 s before it says why: ``check`` logs in once over asyncpg, with the same login and TLS, before the
read's timed part, so that such a read ends at once, in the words of the other PGWire readers.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Sequence

# The driver's Rust pool logs every failed connection attempt to stderr while it retries (a refused login:
# seven lines over ~25 s); the read's one error line says what failed. A user's own RUST_LOG stands.
os.environ.setdefault("RUST_LOG", "off")

import connectorx  # noqa: E402 (after RUST_LOG: the driver's logger reads it when first used)
import pandas as pd  # noqa: E402

from harness.frames.kinds import FrameKind  # noqa: E402
from harness.read.connection import Endpoint  # noqa: E402
from harness.read.frames import ArrowChunks, Column, arrow_frame  # noqa: E402
from harness.read.pgwire_asyncpg import connect  # noqa: E402


class ConnectorxReader:
    def __init__(self, endpoint: Endpoint, frame: FrameKind = FrameKind.pandas):
        # pandas frames only (``protocols``): ``frame`` is always pandas here.
        self._url = endpoint.pg_url

    @staticmethod
    def check(endpoint: Endpoint) -> None:
        """Refuse what connectorx cannot do (UsageError), then log in once over asyncpg (RunError, one line)."""
        endpoint.pg_url  # noqa: B018 (refuses a TLS mode connectorx cannot do)
        loop = asyncio.new_event_loop()
        try:
            connection = loop.run_until_complete(connect(endpoint))
            loop.run_until_complete(connection.close())
        finally:
            loop.close()

    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[pd.DataFrame]:
        batches = connectorx.read_sql(self._url, sql, protocol="cursor", return_type="arrow_stream",
                                      batch_size=chunk_rows)
        for table in ArrowChunks(chunk_rows).tables(batches):
            yield arrow_frame(table, columns)

    def received_bytes(self) -> int | None:
        return None

    def close(self) -> None:
        pass
