"""The ingestion paths, by name, behind one small interface (``Writer``): the one place a path is chosen.

Each path writes the rows as its users write them, with its library's documented fast way: ILP over HTTP and
TCP through ``Sender.dataframe()``, QWP through ``QuestDB.dataframe()`` (a server from QuestDB 10.0), a prepared ``INSERT`` run with asyncpg's ``executemany`` (its rows pipelined
in one round trip), asyncpg's ``copy_records_to_table`` (which QuestDB refuses), psycopg 3's ``executemany``
(pipeline mode), pandas' ``to_sql`` through SQLAlchemy, ``/imp``'s CSV upload; and the server's own
imports (``COPY``, ``read_parquet()``) of the whole data set as a file under its import root, staged first
(``stage``, untimed) and loaded once (``load``). Every path writes into a table that exists already (made by the
caller as ``harness.questdb.schema.create_table`` makes every table), a batch at a time (``write``); what a batch
is to the server, and whether it lands whole or not at all, is the path's ``PathTraits``. A path's module (and its driver) is imported only when that path is used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from harness.errors import UsageError
from harness.ingest_paths.choices import IngestPath
from harness.questdb.features import QWP

if TYPE_CHECKING:
    import pandas as pd

    from harness.ingest_paths.target import PathTarget


@dataclass(frozen=True)
class PathTraits:
    """What a path is: its writer (``module:class``), the package it needs, and what a batch is to the server."""

    writer: str
    package: str
    batch: str  # what one ``write`` is, as the server sees it (whether it lands whole: the probe measures it)
    server_side: bool = False  # the whole data set a file under the server's import root, loaded by the server
    needs: tuple[str, ...] = ()  # what the server must offer for it (``harness.questdb.features``' names)


PATHS: dict[IngestPath, PathTraits] = {
    IngestPath.ilp_http: PathTraits("harness.ingest_paths.client:ClientWriter", "questdb",
                                    "one HTTP request, committed as one transaction"),
    IngestPath.ilp_tcp: PathTraits("harness.ingest_paths.client:ClientWriter", "questdb",
                                   "a stream of lines, committed by the server as it sees fit; no answer"),
    IngestPath.qwp: PathTraits("harness.ingest_paths.client:ClientWriter", "questdb",
                               "one QuestDB.dataframe() call over QWP, its batches committed when it returns (a "
                               "failed call's committed prefix in doubt)", needs=(QWP,)),
    IngestPath.asyncpg: PathTraits("harness.ingest_paths.pgwire:AsyncpgWriter", "asyncpg",
                                   "executemany of a prepared INSERT: one transaction"),
    IngestPath.asyncpg_copy: PathTraits("harness.ingest_paths.pgwire:AsyncpgCopyWriter", "asyncpg",
                                        "copy_records_to_table: COPY ... FROM STDIN (binary), one transaction"),
    IngestPath.psycopg: PathTraits("harness.ingest_paths.pgwire:PsycopgWriter", "psycopg",
                                   "executemany in pipeline mode, committed once"),
    IngestPath.to_sql: PathTraits("harness.ingest_paths.to_sql:ToSqlWriter", "sqlalchemy",
                                  "DataFrame.to_sql(method='multi'): multi-row INSERTs, one transaction"),
    IngestPath.http_imp: PathTraits("harness.ingest_paths.http_imp:ImpWriter", "(standard library)",
                                    "one CSV upload to /imp (atomicity=abort), answered with its rows imported and rejected"),
    IngestPath.copy: PathTraits("harness.ingest_paths.server_side:ServerSideWriter", "(standard library)",
                                "the whole CSV file, imported by COPY (ON ERROR ABORT)", server_side=True),
    IngestPath.read_parquet: PathTraits("harness.ingest_paths.server_side:ServerSideWriter", "pyarrow",
                                        "the whole Parquet file, one INSERT ... SELECT FROM read_parquet()",
                                        server_side=True),
}


class Writer(Protocol):
    """One connection of one path into one table."""

    @staticmethod
    def installed() -> bool:
        """Whether the path's driver can be imported here."""

    def write(self, frame: pd.DataFrame) -> None:
        """Write ``frame``'s rows into the table: one batch, the path's own unit (a flush, a transaction, an
        upload). Returns once the server has them as the path can tell (an answer; over ILP/TCP, sent)."""

    def close(self) -> None:
        ...


def writer_class(path: IngestPath) -> type:
    """The writer class of ``path``, its module imported; a UsageError naming the package where its driver is not
    installed."""
    traits = PATHS[IngestPath(path)]
    module, _, name = traits.writer.partition(":")
    writer = getattr(importlib.import_module(module), name)
    if not writer.installed():
        raise UsageError(f"the {path} path needs the {traits.package} package, which is not installed here "
                         f"(pip install {traits.package})")
    return writer


def open_writer(path: IngestPath, target: PathTarget) -> Writer:
    """A connected writer of ``path`` into ``target``'s table."""
    return writer_class(path)(IngestPath(path), target)
