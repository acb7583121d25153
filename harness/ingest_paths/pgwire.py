"""PGWire, as pandas users write it without ILP: asyncpg's ``executemany`` of a prepared statement (its rows bound
and executed in one round trip, as one transaction), asyncpg's ``copy_records_to_table`` (PostgreSQL's fastest
way in: ``COPY ... FROM STDIN`` in binary; QuestDB 9.3.4 refuses the statement, and the path says so), and
psycopg 3's ``executemany`` (pipeline mode: the statements sent without waiting for each answer), committed once
per batch."""

from __future__ import annotations

import asyncio
import contextlib

import pandas as pd

from harness.errors import RunError, one_line
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.rows import python_rows
from harness.ingest_paths.target import PathTarget
from harness.questdb.pgwire import asyncpg_tls, connect_failure, libpq_tls
from harness.read.connection import CONNECT_TIMEOUT_SECONDS


def insert_sql(target: PathTarget, placeholder) -> str:
    """``INSERT INTO 'table' (columns) VALUES (...)`` with ``placeholder(i)`` for the i-th value (from 1)."""
    names = ", ".join(f'"{name}"' for name in target.column_names)
    values = ", ".join(placeholder(index) for index in range(1, len(target.column_names) + 1))
    return f"INSERT INTO '{target.table}' ({names}) VALUES ({values})"


class _DriverWriter:
    """A writer through the PGWire driver named ``driver``."""

    driver: str

    @classmethod
    def installed(cls) -> bool:
        import importlib

        try:
            importlib.import_module(cls.driver)
        except ImportError:
            return False
        return True


class AsyncpgWriter(_DriverWriter):
    driver = "asyncpg"
    statement = "INSERT"  # what the messages call the path's statement

    def __init__(self, path: IngestPath, target: PathTarget):
        import asyncpg

        self._asyncpg = asyncpg
        self._target = target
        self._sql = insert_sql(target, lambda index: f"${index}")
        endpoint = target.endpoint
        self._loop = asyncio.new_event_loop()
        try:
            self._connection = self._loop.run_until_complete(asyncpg.connect(
                host=endpoint.host, port=endpoint.pg_port, user=endpoint.pg.user, password=endpoint.pg.password,
                database=endpoint.pg.database, timeout=CONNECT_TIMEOUT_SECONDS, **asyncpg_tls(endpoint.pg_tls)))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
            self._loop.close()
            raise RunError(connect_failure(endpoint.host, endpoint.pg_port, endpoint.pg, endpoint.pg_tls,
                                           exc)) from None

    def write(self, frame: pd.DataFrame) -> None:
        rows = python_rows(frame, self._target.schema.columns)
        try:
            self._loop.run_until_complete(self._send(rows))
        # TypeError, ValueError, OverflowError: a value the driver's codec cannot encode as the column's type
        # (copy_records_to_table encodes the records itself, unwrapped).
        except (self._asyncpg.PostgresError, self._asyncpg.InterfaceError, OSError, TypeError, ValueError,
                OverflowError) as exc:
            raise RunError(f"asyncpg {self.statement} into {self._target.table} failed: {one_line(exc)}") from None

    async def _send(self, rows: list[tuple]) -> None:
        await self._connection.executemany(self._sql, rows)

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self._connection.close(timeout=5))
        except (self._asyncpg.PostgresError, self._asyncpg.InterfaceError, OSError, TimeoutError):
            pass
        finally:
            self._loop.close()


class AsyncpgCopyWriter(AsyncpgWriter):
    statement = "COPY FROM STDIN (copy_records_to_table)"

    async def _send(self, rows: list[tuple]) -> None:
        await self._connection.copy_records_to_table(self._target.table, records=rows,
                                                     columns=self._target.column_names)


class PsycopgWriter(_DriverWriter):
    driver = "psycopg"

    def __init__(self, path: IngestPath, target: PathTarget):
        import psycopg

        self._psycopg = psycopg
        self._target = target
        self._sql = insert_sql(target, lambda index: "%s")
        endpoint = target.endpoint
        try:
            self._connection = psycopg.connect(host=endpoint.host, port=endpoint.pg_port, user=endpoint.pg.user,
                                               password=endpoint.pg.password, dbname=endpoint.pg.database,
                                               connect_timeout=int(CONNECT_TIMEOUT_SECONDS),
                                               **libpq_tls(endpoint.pg_tls))
        except psycopg.Error as exc:
            raise RunError(connect_failure(endpoint.host, endpoint.pg_port, endpoint.pg, endpoint.pg_tls,
                                           exc)) from None

    def write(self, frame: pd.DataFrame) -> None:
        rows = python_rows(frame, self._target.schema.columns)
        try:
            with self._connection.cursor() as cursor:
                cursor.executemany(self._sql, rows)
            self._connection.commit()
        except self._psycopg.Error as exc:
            # psycopg's rollback also deallocates the prepared statements, which QuestDB 9.3.4 answers with an
            # error of its own (a null pipeline entry): the batch's error is the one to report.
            with contextlib.suppress(self._psycopg.Error):
                self._connection.rollback()
            raise RunError(f"psycopg INSERT into {self._target.table} failed: {one_line(exc)}") from None

    def close(self) -> None:
        self._connection.close()
