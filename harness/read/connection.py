"""Where the readers connect and what they share: the server's address, credentials and TLS, and the kernel's
count of the bytes a TCP connection received (``TCP_INFO``), which measures a PGWire answer on the wire (over
TLS: with its records' overhead)."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

from harness.questdb.credentials import HttpLogin, PgLogin
from harness.questdb.http import QuestDBSql
from harness.questdb.pgwire import pg_url
from harness.questdb.tls import HttpTls, PgTls

CONNECT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Endpoint:
    """Where the readers connect, how they log in and over what: PGWire at ``pg_port`` as ``pg`` with
    ``pg_tls``, HTTP at ``http_port`` as ``http`` with ``http_tls`` (``harness.questdb.credentials``,
    ``harness.questdb.tls``)."""

    host: str
    http_port: int
    pg_port: int
    pg: PgLogin = field(default_factory=PgLogin)
    http: HttpLogin | None = None
    pg_tls: PgTls = field(default_factory=PgTls)
    http_tls: HttpTls = field(default_factory=HttpTls)

    @property
    def pg_url(self) -> str:
        return pg_url(self.host, self.pg_port, self.pg, self.pg_tls)

    def sql(self) -> QuestDBSql:
        """The server's HTTP API (``/exec``), logged in, over TLS where ``http_tls`` says."""
        return QuestDBSql(self.host, self.http_port, login=self.http, tls=self.http_tls)

    def http_headers(self) -> dict[str, str]:
        return {"Authorization": self.http.header()} if self.http is not None else {}


# struct tcp_info (linux/tcp.h): tcpi_bytes_received, a u64 at byte 128, since Linux 4.1.
_TCP_INFO_BYTES_RECEIVED = 128


def tcp_bytes_received(fileno: int) -> int | None:
    """Bytes the kernel has received on this TCP socket so far (TCP_INFO), or None where it cannot say."""
    try:
        probe = socket.socket(fileno=fileno)
    except OSError:
        return None
    try:
        info = probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        if len(info) < _TCP_INFO_BYTES_RECEIVED + 8:
            return None
        return struct.unpack_from("Q", info, _TCP_INFO_BYTES_RECEIVED)[0]
    except OSError:
        return None
    finally:
        probe.detach()  # the socket is the driver's: never close it
