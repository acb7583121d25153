"""pandas' ``DataFrame.to_sql`` through SQLAlchemy, as pandas users write it: ``if_exists='append'``,
``method='multi'`` (one ``INSERT`` of many ``VALUES`` rows per chunk), ``chunksize`` stated, each call one
transaction.

QuestDB's own dialect (``questdb-connect`` 1.1.4) does not work beside pandas 3, which needs SQLAlchemy 2: its
``has_table`` lacks SQLAlchemy 2's signature (``TypeError: ... unexpected keyword argument 'info_cache'``) and its
psycopg2 driver casts a zone-aware timestamp to ``timestamptz``, which QuestDB refuses. So this path is SQLAlchemy's
PostgreSQL dialect over psycopg 3, with the three changes QuestDB needs, each the least that works:

- ``has_table`` (which ``to_sql`` asks first) answered from QuestDB's ``tables()``: the dialect's ``pg_catalog``
  query uses ``= ANY(ARRAY[...])``, which QuestDB lacks;
- no casts rendered into the statement (``BindTyping.NONE``): QuestDB's parser refuses ``::TIMESTAMP WITHOUT TIME
  ZONE``; psycopg binds each value with its own type instead;
- no server-side prepared statements (``prepare_threshold=None``): psycopg's ``DEALLOCATE ALL`` on a connection's
  return to the pool fails on QuestDB 9.3.4; and no hstore lookup at connect (``use_native_hstore=False``: it opens
  a savepoint, which QuestDB lacks).
"""

from __future__ import annotations

import contextlib

import pandas as pd

from harness.errors import RunError, one_line
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.target import PathTarget
from harness.questdb.pgwire import connect_failure, libpq_tls
from harness.read.connection import CONNECT_TIMEOUT_SECONDS

# Values per INSERT statement (a chunk's rows times its columns): to_sql's chunksize follows from it. Measured on the
# reference machine (10,000 rows of 5 columns): chunks of 20 to 400 rows took the same time, 1,000 rows 30 % more,
# 3,000 rows twice as long (SQLAlchemy compiles each chunk's statement anew, its parameters named one by one).
CHUNK_PARAMETERS = 2_000
DIALECT = "postgresql.questdb_harness"


def chunk_rows(columns: int) -> int:
    """``to_sql``'s ``chunksize`` for a table of ``columns`` columns."""
    return max(1, CHUNK_PARAMETERS // max(columns, 1))


def _register_dialect() -> None:
    from sqlalchemy.dialects import registry
    from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
    from sqlalchemy.engine.interfaces import BindTyping

    class QuestDBPsycopgDialect(PGDialect_psycopg):
        supports_statement_cache = True
        bind_typing = BindTyping.NONE

        def has_table(self, connection, table_name, schema=None, **kw):
            found = connection.exec_driver_sql("SELECT count() FROM tables() WHERE table_name = %(name)s",
                                               {"name": table_name})
            return bool(found.scalar())

    globals()["QuestDBPsycopgDialect"] = QuestDBPsycopgDialect
    registry.register(DIALECT, __name__, "QuestDBPsycopgDialect")


class ToSqlWriter:
    @staticmethod
    def installed() -> bool:
        import importlib

        try:
            importlib.import_module("sqlalchemy")
        except ImportError:
            return False
        return True

    def __init__(self, path: IngestPath, target: PathTarget):
        import sqlalchemy

        self._sqlalchemy = sqlalchemy
        if "QuestDBPsycopgDialect" not in globals():
            _register_dialect()
        self._target = target
        self.chunksize = chunk_rows(len(target.column_names))
        endpoint = target.endpoint
        url = sqlalchemy.engine.URL.create(DIALECT.replace(".", "+"), username=endpoint.pg.user,
                                           password=endpoint.pg.password, host=endpoint.host, port=endpoint.pg_port,
                                           database=endpoint.pg.database)
        connect_args = dict(prepare_threshold=None, connect_timeout=int(CONNECT_TIMEOUT_SECONDS),
                            **libpq_tls(endpoint.pg_tls))
        self._engine = sqlalchemy.create_engine(url, use_native_hstore=False, connect_args=connect_args,
                                                pool_size=1)
        try:
            self._connection = self._engine.connect()
        except sqlalchemy.exc.SQLAlchemyError as exc:
            self._engine.dispose()
            raise RunError(connect_failure(endpoint.host, endpoint.pg_port, endpoint.pg, endpoint.pg_tls,
                                           exc.orig or exc)) from None

    def write(self, frame: pd.DataFrame) -> None:
        try:
            frame[self._target.column_names].to_sql(self._target.table, self._connection, if_exists="append",
                                                     index=False, method="multi", chunksize=self.chunksize)
            self._connection.commit()
        except (self._sqlalchemy.exc.SQLAlchemyError, pd.errors.DatabaseError) as exc:
            with contextlib.suppress(self._sqlalchemy.exc.SQLAlchemyError):
                self._connection.rollback()
            cause = getattr(exc, "orig", None) or exc.__cause__ or exc
            raise RunError(f"to_sql into {self._target.table} failed: {one_line(cause)}") from None

    def close(self) -> None:
        try:
            self._connection.close()
        finally:
            self._engine.dispose()
