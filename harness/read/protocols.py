"""The read protocols, by name, behind one small interface (``Reader``): the one place a protocol is chosen.

Each is a real path from QuestDB into pandas: PGWire through asyncpg (binary, Records), psycopg 3 (binary,
tuples) or connectorx (Rust, Arrow), and HTTP ``/exp`` as CSV (parsed by pyarrow) or as Parquet. A reader
is made on the thread that uses it (``open_reader``), runs one query at a time (``frames``: DataFrames of
about ``chunk_rows`` rows, in the server's order) and counts the bytes it received where its driver lets it.
A protocol's module (and its driver) is imported only when that protocol is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from harness.read.connection import Endpoint
    from harness.read.frames import Column


class ReadProtocol(StrEnum):
    asyncpg = "asyncpg"
    psycopg = "psycopg"
    connectorx = "connectorx"
    http_csv = "http-csv"
    http_parquet = "http-parquet"


# The protocols that read over PGWire (the others over HTTP /exp).
PGWIRE_PROTOCOLS = frozenset({ReadProtocol.asyncpg, ReadProtocol.psycopg, ReadProtocol.connectorx})
# The protocols that carry a TIMESTAMP_NS column's nanoseconds (HTTP /exp); PGWire's timestamp is microseconds,
# and QuestDB sends a TIMESTAMP_NS over it truncated toward zero.
NANOSECOND_PROTOCOLS = frozenset({ReadProtocol.http_csv, ReadProtocol.http_parquet})

# Protocol -> "module:class" of its reader.
_READERS = {
    ReadProtocol.asyncpg: "harness.read.pgwire_asyncpg:AsyncpgReader",
    ReadProtocol.psycopg: "harness.read.pgwire_psycopg:PsycopgReader",
    ReadProtocol.connectorx: "harness.read.pgwire_connectorx:ConnectorxReader",
    ReadProtocol.http_csv: "harness.read.http_export:CsvReader",
    ReadProtocol.http_parquet: "harness.read.http_export:ParquetReader",
}


class Reader(Protocol):
    """One connection of one protocol."""

    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[pd.DataFrame]:
        """The answer to ``sql`` as DataFrames of about ``chunk_rows`` rows each, in the server's order."""

    def received_bytes(self) -> int | None:
        """Bytes received from the server so far (None where the driver hides its socket)."""

    def close(self) -> None:
        ...


def reader_class(protocol: ReadProtocol) -> type:
    """The reader class of ``protocol``, its module (and driver) imported: a read imports it before its timed
    part."""
    module, _, name = _READERS[ReadProtocol(protocol)].partition(":")
    return getattr(importlib.import_module(module), name)


def prepare_reader(protocol: ReadProtocol, endpoint: Endpoint) -> None:
    """Before a read's timed part: the reader class of ``protocol`` imported, and the endpoint checked where its
    driver would be slow to say what is wrong (the reader's ``check``: connectorx's pool retries a failed
    connection for ~30 s)."""
    check = getattr(reader_class(protocol), "check", None)
    if check is not None:
        check(endpoint)


def open_reader(protocol: ReadProtocol, endpoint: Endpoint) -> Reader:
    """A connected reader of ``protocol``."""
    return reader_class(protocol)(endpoint)
