"""What an open loop is given: its plan (its flags resolved and checked, ``OpenLoopPlan``, with the queries beside
it, ``PacedQueryPlan``), what it takes of the rest of the run as plain values (``SendContext``, with the server of
the queries beside, ``QueryServer``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.open_loop.made_ahead import ChunksAhead
    from harness.open_loop.thresholds import Threshold
    from harness.questdb.credentials import HttpLogin, PgLogin
    from harness.questdb.tls import HttpTls, PgTls


@dataclass(frozen=True)
class PacedQueryPlan:
    """Queries run beside the ingest at a fixed rate (``--queries FILE --query-rate Q``)."""

    file: str
    rate: float  # queries per second
    protocol: str  # pgwire or http
    connections: int


@dataclass(frozen=True)
class OpenLoopPlan:
    """An open loop's flags (``bench --rate``), resolved: times in seconds, the rates in rows per second."""

    rates: tuple[float, ...]  # the one rate, a ramp's every step, or a search's two ends
    ramp: bool  # a ramp or a search: a closed-loop step first, and a knee named
    duration_seconds: float | None  # each rate's; None: until the data set ends
    grace_seconds: float
    slo_seconds: float
    probe_seconds: float
    search: bool
    search_resolution: float
    repeat: int
    chunks_ahead: ChunksAhead
    thresholds: tuple[Threshold, ...]
    queries: PacedQueryPlan | None  # None: no queries beside


@dataclass(frozen=True)
class QueryServer:
    """Where the queries beside the ingest go: the server's address on their protocol, its login and TLS."""

    host: str
    port: int
    login: PgLogin | HttpLogin | None
    tls: PgTls | HttpTls | None


@dataclass(frozen=True)
class SendContext:
    """What the open loop takes of the rest of the bench run."""

    chunk_rows: int
    threads: int  # worker threads of the send phase
    first_chunk: int  # the number of the data set's first chunk the run sends
    total_rows: int  # rows of the data set the run sends
    tables: tuple[str, ...]
    rows_before: Mapping[str, int]  # rows each table held before the run (into QuestDB)
    validation_timeout: float  # seconds the rows sent may take to become visible
    acknowledged: bool  # a send's end is the server's acknowledgement (ILP over HTTP)
    query_server: QueryServer | None = None  # with queries beside
