"""The harness's own QWP client connections, the ones it reads with (``read --protocol qwp``, ``queries run
--protocol qwp``): a ``questdb.connect()`` handle to the server's HTTP port, where QWP's WebSocket is, logged in and
over TLS as the harness's own HTTP requests are (``credentials.http_login``, ``tls.http_tls``: a ``username``/
``password`` or ``token`` and the TLS keys of an ``http::``/``https::``/``ws::``/``wss::`` configuration string);
and a failure to connect in one line that names whom the server refused, never the secret.

The handle opens no ingest connection (``sender_pool_min=0``) and its one reader connection at once
(``query_pool_min=1``), so that a refused login or an untrusted certificate ends the read before its first query.
The questdb client is imported here: only a QWP read or query run loads it.
"""

from __future__ import annotations

import re

import questdb
from questdb import QuestDBError, QuestDBErrorCode

from harness.errors import RunError, UsageError, one_line
from harness.questdb.conf import redact_text
from harness.questdb.credentials import HttpLogin, refused_http_login
from harness.questdb.features import QWP_QUERIES, SINCE
from harness.questdb.tls import PEM_FILE, HttpTls, speaks_tls

# The handle's pools: no row senders, one reader connection opened at once.
POOLS = "sender_pool_min=0;query_pool_min=1;"
_STATUS = re.compile(r"HTTP (?:status )?(\d{3})")
_ENDPOINT = re.compile(r"^endpoint \S+: ")


def _value(text: str) -> str:
    """A configuration value as the string's grammar takes it (``;`` written ``;;``)."""
    return text.replace(";", ";;")


def qwp_conf(host: str, port: int, login: HttpLogin | None, tls: HttpTls) -> str:
    """The ``ws::`` (over TLS: ``wss::``) configuration string of a QWP connection to ``host:port`` with ``login`` and
    ``tls``'s keys. The client reads ``tls_roots`` alone as trusting that file only (it refuses ``tls_ca=pem_file``,
    which the ILP client wants beside it): ``tls_ca=pem_file`` is left out."""
    scheme = "ws" if tls.context is None else "wss"
    keys = [(key, value) for key, value in tls.client_keys if (key, value) != ("tls_ca", PEM_FILE)]
    if login is not None:
        keys += [("token", login.token)] if login.token is not None else [
            (key, value) for key, value in (("username", login.username), ("password", login.password))
            if value is not None]
    return f"{scheme}::addr={host}:{port};{POOLS}" + "".join(f"{key}={_value(value)};" for key, value in keys)


def connect(host: str, port: int, login: HttpLogin | None, tls: HttpTls) -> questdb.QuestDB:
    """A handle with its reader connection open; a failure in one line (``qwp_failure``)."""
    try:
        return questdb.connect(qwp_conf(host, port, login, tls))
    except (QuestDBError, ValueError) as exc:
        raise qwp_failure(host, port, login, tls, exc) from None


def qwp_failure(host: str, port: int, login: HttpLogin | None, tls: HttpTls,
                exc: BaseException) -> RunError | UsageError:
    """The one line of a QWP connection that failed: a server without QWP, a refused login, an untrusted certificate,
    TLS and plain crossed; else the client's own words (a configuration the client refuses: ``UsageError``)."""
    address = f"{host}:{port}"
    text = _ENDPOINT.sub("", redact_text(one_line(exc)))  # the client's "endpoint HOST:PORT: " prefix: said below
    code = getattr(exc, "code", None)
    if code == QuestDBErrorCode.ConfigError or isinstance(exc, ValueError):
        return UsageError(f"the QWP client refused the configuration made of {tls.source or 'the options'}: {text}")
    status = _STATUS.search(text)
    if code == QuestDBErrorCode.AuthError or (status and status.group(1) in ("401", "403")):
        return RunError(refused_http_login(address, int(status.group(1)) if status else 401, login)
                        + " (QWP's WebSocket upgrade)")
    if status and status.group(1) == "404":
        return RunError(f"QuestDB at {address} has no QWP endpoint (its WebSocket upgrade answered HTTP 404): "
                        f"{QWP_QUERIES} needs {SINCE[QWP_QUERIES]}")
    if tls.context is not None:
        # The port asked first: TLS to a plain port fails as the server's answer arrives, as a closed connection or
        # as a TLS error ("corrupt message of type InvalidContentType": its HTTP answer read as TLS), by timing.
        if not speaks_tls(host, port):
            return RunError(f"QuestDB QWP at {address} does not speak TLS ({text}): the configuration string of "
                            f"{tls.source} asks for TLS; a plain HTTP port takes ws:: or http::")
        if code == QuestDBErrorCode.TlsError or "certificate" in text:
            problem = text.rpartition("IO error: ")[2]
            return RunError(f"QuestDB QWP at {address}: {problem} (the configuration string of {tls.source} trusts "
                            f"{tls.trust})")
    elif speaks_tls(host, port):
        return RunError(f"QuestDB QWP at {address} speaks TLS (a TLS-terminating proxy?) and the connection was plain: "
                        f"give the harness an https:: or wss:: configuration string (QDB_CLIENT_CONF or "
                        f"HARNESS_HTTP_CONF) that trusts its certificate (tls_roots=CA.pem)")
    return RunError(f"cannot connect to QuestDB QWP at {address}: {text}")
