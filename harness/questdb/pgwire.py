"""How every client of ours reaches QuestDB's PGWire endpoint: with the login of ``harness.questdb.credentials``
and the TLS of ``harness.questdb.tls`` (libpq's ``PGSSLMODE``, ``PGSSLROOTCERT``, ``PGSSLNEGOTIATION``), each
driver told in its own terms; a connection that fails, in one line (``connect_failure``).

QuestDB's open-source server speaks no TLS on PGWire. A driver left to its default (libpq's and asyncpg's
``sslmode=prefer``) asks for TLS first and is refused: a round trip more for every connection, and in
asyncpg an SSL context built for it (1-2 ms of CPU). TSBS's query runner connects with ``sslmode=disable``,
and so does every connection of the harness unless ``PGSSLMODE`` says otherwise. A TLS-terminating proxy in
front of QuestDB speaks TLS from the first byte: ``PGSSLNEGOTIATION=direct``. What each driver can do:

- asyncpg: every mode, direct or not (``ssl=`` an ``ssl.SSLContext``, ``direct_tls``).
- psycopg: every mode (its libpq's ``sslmode``, ``sslrootcert``, ``sslnegotiation``); direct TLS needs libpq 17
  or later (psycopg-binary bundles one) and a proxy that negotiates ALPN ``postgresql``, as libpq requires.
- connectorx: ``require``, ``verify-ca`` (its ``sslmode=require`` with ``sslrootcert``: the certificate's chain
  is checked, never its host name), direct or not; ``verify-full`` and ``allow`` it cannot do, and is refused.
"""

from __future__ import annotations

import socket
import struct
from urllib.parse import quote, urlencode

from harness.errors import UsageError
from harness.questdb.credentials import PgLogin
from harness.questdb.tls import (
    PROBE_TIMEOUT_SECONDS,
    PgTls,
    handshake_problem,
    speaks_tls,
)

# PostgreSQL's SSLRequest: length 8, code 80877103; a PGWire server answers one byte, S or N.
_SSL_REQUEST = struct.pack("!ii", 8, 80877103)
NO_TLS = PgTls()


def refused_login(exc: BaseException) -> bool:
    """Whether a driver's error is the server refusing the login (SQLSTATE 28xxx; QuestDB's own words)."""
    return str(getattr(exc, "sqlstate", "") or "").startswith("28") or "invalid username/password" in str(exc)


def refused_text(host: str, port: int, login: PgLogin) -> str:
    """The one line's start that names the refused login (never the password)."""
    return f"QuestDB PGWire at {host}:{port} refused user {login.user!r} (from {login.source})"


def asyncpg_tls(tls: PgTls) -> dict:
    """asyncpg's ``ssl`` and ``direct_tls`` arguments."""
    return {"ssl": tls.context() if tls.enabled else tls.sslmode, "direct_tls": tls.direct}


def libpq_tls(tls: PgTls) -> dict[str, str]:
    """libpq's connection parameters (psycopg): ``sslnegotiation`` only where direct (libpq 17 and later know
    it)."""
    parameters = {"sslmode": tls.sslmode}
    if tls.enabled and tls.rootcert is not None:
        parameters["sslrootcert"] = tls.rootcert
    if tls.direct:
        parameters["sslnegotiation"] = "direct"
    return parameters


def pg_url(host: str, port: int, login: PgLogin, tls: PgTls = NO_TLS) -> str:
    """The endpoint as connectorx takes it (its Rust driver's URL): never printed, it holds the password.
    UsageError where connectorx cannot do what ``tls`` asks."""
    if tls.sslmode in ("allow", "verify-full"):
        raise UsageError(f"connectorx cannot connect with PGSSLMODE={tls.sslmode}: it takes disable, prefer, "
                         f"require, or verify-ca (checking the certificate's chain against PGSSLROOTCERT, not its "
                         f"host name); asyncpg and psycopg can")
    parameters = {"sslmode": "require" if tls.enabled else tls.sslmode}
    if tls.verifies:
        parameters["sslrootcert"] = tls.rootcert
    if tls.direct:
        parameters["sslnegotiation"] = "direct"
    return (f"postgresql://{quote(login.user, safe='')}:{quote(login.password, safe='')}@{host}:{port}/"
            f"{quote(login.database, safe='')}?{urlencode(parameters)}")


def connect_failure(host: str, port: int, login: PgLogin, tls: PgTls, exc: BaseException) -> str:
    """The one line of a PGWire connection that failed: a refused login, a certificate, TLS where the port
    speaks none or plain where it speaks TLS (the port is asked what it speaks once the connection failed),
    else the driver's own words."""
    address, text = f"{host}:{port}", _one_line(exc)
    if refused_login(exc):
        return f"{refused_text(host, port, login)}: {text}"
    problem = handshake_problem(exc)
    if problem is None and "certificate verify failed" in text:  # libpq's words
        problem = "certificate verify failed" + text.partition("certificate verify failed")[2].rstrip(".")
    if problem is not None and problem.startswith("certificate"):
        return f"QuestDB PGWire at {address}: {problem} ({tls.describe()})"
    if "without ALPN" in text:
        return (f"QuestDB PGWire at {address}: the TLS proxy does not negotiate ALPN 'postgresql', which libpq 17+ "
                f"(psycopg) requires of direct TLS: have the proxy offer it (HAProxy: alpn postgresql), or connect "
                f"with asyncpg or connectorx")
    if tls.enabled and ("does not support SSL" in text or "rejected SSL upgrade" in text):
        return (f"QuestDB PGWire at {address} speaks no TLS (it refused the SSLRequest): {tls.describe()} needs a "
                f"TLS-terminating proxy in front of QuestDB, reached with PGSSLNEGOTIATION=direct")
    sqlstate = str(getattr(exc, "sqlstate", None) or "")
    if (not sqlstate or sqlstate.startswith("08")) and _listens(host, port):
        # Not the server's word (class 08: the connection's own failure): ask the port what it speaks.
        if tls.enabled and tls.direct:
            why = ("it answers PGWire in plain" if answers_pgwire(host, port) else
                   problem or "no TLS handshake" if not speaks_tls(host, port) else None)
            if why is not None:
                return (f"QuestDB PGWire at {address} does not speak TLS ({why}): PGSSLNEGOTIATION=direct needs the "
                        f"port of a TLS-terminating proxy, not QuestDB's own")
        if not tls.direct and speaks_tls(host, port):
            if not tls.enabled:
                return (f"QuestDB PGWire at {address} speaks TLS (a TLS-terminating proxy?) and {tls.describe()} "
                        f"asks for none: set PGSSLMODE=verify-full, PGSSLROOTCERT=<CA file> and "
                        f"PGSSLNEGOTIATION=direct")
            return (f"QuestDB PGWire at {address} speaks TLS from the first byte (a TLS-terminating proxy), and "
                    f"PGSSLNEGOTIATION=postgres asks for it in plain first: set PGSSLNEGOTIATION=direct")
    return f"cannot connect to QuestDB over PGWire at {address}: {text}"


def _listens(host: str, port: int) -> bool:
    """Whether anything accepts a TCP connection at ``host:port``."""
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SECONDS).close()
        return True
    except OSError:
        return False


def answers_pgwire(host: str, port: int, timeout: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """Whether ``host:port`` answers a plain SSLRequest as a PGWire server does (S or N)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as probe:
            probe.sendall(_SSL_REQUEST)
            return probe.recv(1) in (b"S", b"N")
    except OSError:
        return False


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return " ".join(text.split())
