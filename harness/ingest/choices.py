"""How an ingest run sends: the row API, the destination, the transport and the ILP protocol version."""

from __future__ import annotations

from enum import StrEnum


class Op(StrEnum):
    """How rows reach the client: the DataFrame API, or row by row as a user without it would write."""

    dataframe = "dataframe"
    iterrows = "iterrows"
    itertuples = "itertuples"


class Target(StrEnum):
    """Where a run sends: QuestDB (DDL, validation) or the no-op socat sink."""

    questdb = "questdb"
    sink = "sink"


class Transport(StrEnum):
    tcp = "tcp"
    http = "http"


class ProtocolVersion(StrEnum):
    """ILP protocol version: 1 text, 2 binary doubles, 3; auto lets the client choose."""

    v1 = "1"
    v2 = "2"
    v3 = "3"
    auto = "auto"


class ChunksAhead(StrEnum):
    """Who makes an open loop's chunks ahead of their time: a process of their own (off the scheduling threads'
    GIL), or a thread of the scheduling process."""

    process = "process"
    thread = "thread"


# The most chunks made ahead may hold made and not yet read: this many rows (as whole chunks, two at least) and MiB.
AHEAD_ROWS = 500_000
AHEAD_MIB = 64
