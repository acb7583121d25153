"""How every client of ours reaches QuestDB's PGWire endpoint: with the login of ``harness.questdb.credentials``,
and no TLS.

QuestDB's open-source server speaks no TLS on PGWire. A driver left to its default (libpq's and asyncpg's
``sslmode=prefer``) asks for TLS first and is refused: a round trip more for every connection, and in
asyncpg an SSL context built for it (1-2 ms of CPU). TSBS's query runner connects with ``sslmode=disable``,
and so does every connection of the harness.
"""

from __future__ import annotations

from urllib.parse import quote

from harness.questdb.credentials import PgLogin

# libpq's name for it; asyncpg's ``ssl=`` and psycopg's ``sslmode=`` take it as it is, a URL as a parameter.
SSLMODE = "disable"


def refused_login(exc: BaseException) -> bool:
    """Whether a driver's error is the server refusing the login (SQLSTATE 28xxx; QuestDB's own words)."""
    return str(getattr(exc, "sqlstate", "") or "").startswith("28") or "invalid username/password" in str(exc)


def refused_text(host: str, port: int, login: PgLogin) -> str:
    """The one line's start that names the refused login (never the password)."""
    return f"QuestDB PGWire at {host}:{port} refused user {login.user!r} (from {login.source})"


def pg_url(host: str, port: int, login: PgLogin) -> str:
    """The endpoint as a URL (for drivers that take one: connectorx); never printed, it holds the password."""
    return (f"postgresql://{quote(login.user, safe='')}:{quote(login.password, safe='')}@{host}:{port}/"
            f"{quote(login.database, safe='')}?sslmode={SSLMODE}")
