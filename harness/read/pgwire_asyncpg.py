"""PGWire through asyncpg: binary results decoded into Records, a cursor fetching ``chunk_rows`` at a time.

asyncpg offers no columnar route: ``copy_from_query`` sends ``COPY ... TO STDOUT``, which QuestDB 9.3.4
rejects, so Records, turned into columns (``frames.rows_frame``), are its only path into pandas. The reader
runs its own event loop on the worker's thread, so the loop's worker threads stay plain threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence

import asyncpg
import pandas as pd

from harness.errors import RunError
from harness.frames.kinds import FrameKind
from harness.questdb.pgwire import asyncpg_tls, connect_failure
from harness.read.connection import CONNECT_TIMEOUT_SECONDS, Endpoint, tcp_bytes_received
from harness.read.frames import Column, rows_frame


def _micros(value: tuple) -> int:
    return value[0]


def _unused(value):
    raise TypeError("read binds no timestamps")


async def connect(endpoint: Endpoint) -> asyncpg.Connection:
    """A connection to the endpoint's PGWire, logged in, over TLS where it says; its failure in one line."""
    try:
        return await asyncpg.connect(host=endpoint.host, port=endpoint.pg_port, user=endpoint.pg.user,
                                     password=endpoint.pg.password, database=endpoint.pg.database,
                                     timeout=CONNECT_TIMEOUT_SECONDS, statement_cache_size=0,
                                     **asyncpg_tls(endpoint.pg_tls))
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
        raise RunError(connect_failure(endpoint.host, endpoint.pg_port, endpoint.pg, endpoint.pg_tls, exc)) from None


class AsyncpgReader:
    def __init__(self, endpoint: Endpoint, frame: FrameKind = FrameKind.pandas):
        # pandas frames only (``protocols``): ``frame`` is always pandas here.
        self._loop = asyncio.new_event_loop()
        try:
            self._connection = self._loop.run_until_complete(connect(endpoint))
        except BaseException:
            self._loop.close()
            raise
        # TIMESTAMP as its wire integer (frames.PG_EPOCH_US): no datetime objects.
        self._loop.run_until_complete(self._connection.set_type_codec(
            "timestamp", schema="pg_catalog", encoder=_unused, decoder=_micros, format="tuple"))
        sock = self._connection._transport.get_extra_info("socket")
        self._fileno = sock.fileno() if sock is not None else -1

    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[pd.DataFrame]:
        batches = self._batches(sql, chunk_rows)
        try:
            while True:
                try:
                    rows = self._loop.run_until_complete(batches.__anext__())
                except StopAsyncIteration:
                    return
                yield rows_frame(rows, columns)
        finally:
            try:  # stopped early: end the cursor's transaction on this loop, not at garbage collection
                self._loop.run_until_complete(batches.aclose())
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                pass  # a connection the server dropped: nothing to end

    async def _batches(self, sql: str, chunk_rows: int) -> AsyncIterator[list]:
        # A cursor is a portal read ``chunk_rows`` rows per Execute: PostgreSQL allows it in a transaction only.
        async with self._connection.transaction():
            cursor = await self._connection.cursor(sql)
            while rows := await cursor.fetch(chunk_rows):
                yield rows

    def received_bytes(self) -> int | None:
        return tcp_bytes_received(self._fileno) if self._fileno >= 0 else None

    def close(self) -> None:
        try:
            self._loop.run_until_complete(asyncio.wait_for(self._connection.close(), CONNECT_TIMEOUT_SECONDS))
        except (OSError, asyncio.TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
            self._connection.terminate()
        finally:
            self._loop.close()
