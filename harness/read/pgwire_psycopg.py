"""PGWire through psycopg 3: binary results decoded by its C extension into tuples, streamed ``chunk_rows``
rows per round trip (``Cursor.stream(size=...)``: libpq's chunked rows mode). QuestDB 9.3.4 has no
``pg_cursors`` (psycopg's server-side cursors fail) and no ``COPY ... TO STDOUT``."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import pandas as pd
import psycopg
from psycopg.adapt import Loader
from psycopg.pq import Format

from harness.errors import RunError
from harness.frames.kinds import FrameKind
from harness.questdb.pgwire import connect_failure, libpq_tls
from harness.read.connection import CONNECT_TIMEOUT_SECONDS, Endpoint, tcp_bytes_received
from harness.read.frames import Column, rows_frame


class _Micros(Loader):
    """TIMESTAMP as its wire integer (``frames.PG_EPOCH_US``): no datetime objects."""

    format = Format.BINARY

    def load(self, data) -> int:
        return int.from_bytes(data, "big", signed=True)


class PsycopgReader:
    def __init__(self, endpoint: Endpoint, frame: FrameKind = FrameKind.pandas):
        # pandas frames only (``protocols``): ``frame`` is always pandas here.
        try:
            self._connection = psycopg.connect(host=endpoint.host, port=endpoint.pg_port, user=endpoint.pg.user,
                                               password=endpoint.pg.password, dbname=endpoint.pg.database,
                                               connect_timeout=int(CONNECT_TIMEOUT_SECONDS), autocommit=True,
                                               **libpq_tls(endpoint.pg_tls))
        except psycopg.Error as exc:
            raise RunError(connect_failure(endpoint.host, endpoint.pg_port, endpoint.pg, endpoint.pg_tls,
                                           exc)) from None
        self._connection.adapters.register_loader("timestamp", _Micros)

    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[pd.DataFrame]:
        with self._connection.cursor(binary=True) as cursor:
            rows = cursor.stream(sql, size=chunk_rows)
            while batch := list(itertools.islice(rows, chunk_rows)):
                yield rows_frame(batch, columns)

    def received_bytes(self) -> int | None:
        return tcp_bytes_received(self._connection.pgconn.socket)

    def close(self) -> None:
        self._connection.close()
