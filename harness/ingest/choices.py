"""How an ingest run sends: the row API, the destination, the transport, the ILP protocol version and the kind of
frame handed to the client."""

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
    """ILP over TCP or HTTP (the client's ``Sender``), or QWP: columnar over WebSocket on the HTTP port (the client's
    ``questdb.connect()``, QuestDB 10+)."""

    tcp = "tcp"
    http = "http"
    qwp = "qwp"


# The configuration string's scheme of each transport (QWP's is ``ws``; ``wss`` with TLS).
TRANSPORT_SCHEMES = {Transport.tcp: "tcp", Transport.http: "http", Transport.qwp: "ws"}
# And back: the transport a scheme is (TLS or not).
SCHEME_TRANSPORTS = {"tcp": Transport.tcp, "tcps": Transport.tcp, "http": Transport.http, "https": Transport.http,
                     "ws": Transport.qwp, "wss": Transport.qwp}


class ProtocolVersion(StrEnum):
    """ILP protocol version: 1 text, 2 binary doubles, 3; auto lets the client choose."""

    v1 = "1"
    v2 = "2"
    v3 = "3"
    auto = "auto"
