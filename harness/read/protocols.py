"""The read protocols, by name, behind one small interface (``Reader``): the one place a protocol is chosen, and
what each can do (``_ENTRIES``).

Each is a real path from QuestDB into a frame: PGWire through asyncpg (binary, Records), psycopg 3 (binary,
tuples) or connectorx (Rust, Arrow); HTTP ``/exp`` as CSV (parsed by pyarrow) or as Parquet; and QWP, the
questdb client's columnar WebSocket path (``questdb.connect()``), which alone hands over Arrow and Polars frames
as well as pandas. A reader is made on the thread that uses it (``open_reader``), runs one query at a time
(``frames``: frames of about ``chunk_rows`` rows, in the server's order) and counts the bytes it received where
its driver lets it. A protocol's module (and its driver) is imported only when that protocol is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from harness.frames.kinds import FrameKind
from harness.questdb.features import QWP_QUERIES

if TYPE_CHECKING:
    from harness.read.connection import Endpoint
    from harness.read.frames import Column


class ReadProtocol(StrEnum):
    asyncpg = "asyncpg"
    psycopg = "psycopg"
    connectorx = "connectorx"
    http_csv = "http-csv"
    http_parquet = "http-parquet"
    qwp = "qwp"


@dataclass(frozen=True)
class _Entry:
    """A protocol's reader (``"module:class"``) and what it can do: whether it speaks PGWire (its login and TLS
    are libpq's), whether it carries a TIMESTAMP_NS column's nanoseconds (PGWire's timestamp is microseconds:
    QuestDB sends a TIMESTAMP_NS over it truncated toward zero), the kinds of frame it hands over, and what it
    needs of the server (``harness.questdb.features``)."""

    reader: str
    pgwire: bool = False
    nanoseconds: bool = False
    frames: frozenset[FrameKind] = frozenset({FrameKind.pandas})
    needs: tuple[str, ...] = ()


_ENTRIES = {
    ReadProtocol.asyncpg: _Entry("harness.read.pgwire_asyncpg:AsyncpgReader", pgwire=True),
    ReadProtocol.psycopg: _Entry("harness.read.pgwire_psycopg:PsycopgReader", pgwire=True),
    ReadProtocol.connectorx: _Entry("harness.read.pgwire_connectorx:ConnectorxReader", pgwire=True),
    ReadProtocol.http_csv: _Entry("harness.read.http_export:CsvReader", nanoseconds=True),
    ReadProtocol.http_parquet: _Entry("harness.read.http_export:ParquetReader", nanoseconds=True),
    ReadProtocol.qwp: _Entry("harness.read.qwp:QwpReader", nanoseconds=True, frames=frozenset(FrameKind),
                             needs=(QWP_QUERIES,)),
}

# The protocols that read over PGWire.
PGWIRE_PROTOCOLS = frozenset(protocol for protocol, entry in _ENTRIES.items() if entry.pgwire)
# The protocols that carry a TIMESTAMP_NS column's nanoseconds.
NANOSECOND_PROTOCOLS = frozenset(protocol for protocol, entry in _ENTRIES.items() if entry.nanoseconds)


class Reader(Protocol):
    """One connection of one protocol, made as ``Reader(endpoint, frame)``: its frames of that kind (one of its
    protocol's ``frame_kinds``)."""

    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[object]:
        """The answer to ``sql`` as frames of about ``chunk_rows`` rows each, in the server's order."""

    def received_bytes(self) -> int | None:
        """Bytes received from the server so far (None where the driver hides its socket)."""

    def close(self) -> None:
        ...


def frame_kinds(protocol: ReadProtocol) -> frozenset[FrameKind]:
    """The kinds of frame ``protocol``'s reader hands over."""
    return _ENTRIES[ReadProtocol(protocol)].frames


def needed_features(protocol: ReadProtocol) -> tuple[str, ...]:
    """What ``protocol`` needs of the server (``harness.questdb.features``), asked before a read."""
    return _ENTRIES[ReadProtocol(protocol)].needs


def reader_class(protocol: ReadProtocol) -> type:
    """The reader class of ``protocol``, its module (and driver) imported: a read imports it before its timed
    part."""
    module, _, name = _ENTRIES[ReadProtocol(protocol)].reader.partition(":")
    return getattr(importlib.import_module(module), name)


# The library each kind of frame is made with, imported before a read's timed part.
_FRAME_LIBRARIES = {FrameKind.pandas: "pandas", FrameKind.pandas_arrow: "pyarrow", FrameKind.arrow: "pyarrow",
                    FrameKind.polars: "polars"}


def prepare_reader(protocol: ReadProtocol, endpoint: Endpoint, frame: FrameKind = FrameKind.pandas) -> None:
    """Before a read's timed part: the reader class of ``protocol`` imported (and the library of ``frame``), and the
    endpoint checked where its driver would be slow to say what is wrong (the reader's ``check``: connectorx's pool
    retries a failed connection for ~30 s)."""
    importlib.import_module(_FRAME_LIBRARIES[frame])
    check = getattr(reader_class(protocol), "check", None)
    if check is not None:
        check(endpoint)


def open_reader(protocol: ReadProtocol, endpoint: Endpoint, frame: FrameKind = FrameKind.pandas) -> Reader:
    """A connected reader of ``protocol`` handing over frames of ``frame``."""
    if frame not in frame_kinds(protocol):
        raise ValueError(f"{protocol} hands over {', '.join(sorted(frame_kinds(protocol)))} frames, not {frame}")
    return reader_class(protocol)(endpoint, frame)
