"""TLS for the harness's own connections to a server, from one place beside its credentials
(``harness.questdb.credentials``), by the conventions users already have. QuestDB's open-source server speaks
no TLS itself: a TLS-terminating proxy in front of it does.

- HTTP (``/exec``, ``/exp``, ``/metrics``, HTTP queries): the scheme of the configuration string the harness's
  own requests follow (``credentials.http_conf``): ``https::`` means TLS, trusting what its ``tls_verify``
  (``on``, ``unsafe_off``), ``tls_ca`` (``webpki_roots``, ``os_roots``, ``webpki_and_os_roots``, ``pem_file``)
  and ``tls_roots`` (a PEM file of CA certificates) say, read as the questdb client reads them; one
  ``ssl.SSLContext`` for every request (``HttpTls``).
- PGWire: libpq's ``PGSSLMODE`` (``disable`` when unset), ``PGSSLROOTCERT`` (a PEM file, ``system``, else
  ``~/.postgresql/root.crt``) and ``PGSSLNEGOTIATION`` (``postgres``, ``direct``: TLS from the first byte, what a
  TLS-terminating proxy needs), read as libpq reads them (``PgTls``); ``harness.questdb.pgwire`` tells each
  driver.
- A TLS failure in one line: the certificate problem (``handshake_problem``), and whether a port speaks TLS at
  all (``speaks_tls``), asked only once a connection has failed.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import UsageError
from harness.questdb.credentials import HttpConf, http_conf

if TYPE_CHECKING:
    import http.client
    import ssl

# ``ssl`` (and ``socket``) are imported where a TLS connection is made or has failed: a plain run starts
# without them (a few hundredths of a second).

# The questdb client's tls_ca values; Python's ssl has no compiled-in Mozilla list (webpki_roots): the
# system's store (OpenSSL's default paths; Debian's ca-certificates is Mozilla's list) stands for all three.
SYSTEM_CAS = ("webpki_roots", "os_roots", "webpki_and_os_roots")
PEM_FILE = "pem_file"
TLS_CONF_KEYS = ("tls_verify", "tls_ca", "tls_roots", "tls_roots_password")
SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
NEGOTIATIONS = ("postgres", "direct")
PROBE_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class HttpTls:
    """TLS of the harness's own HTTP requests: ``context`` (None: plain HTTP), what it trusts and which
    configuration string said so; ``client_keys``: that string's TLS keys as given, for the connections the
    harness makes through the questdb client itself (QWP reads and queries), which reads them as it reads its
    own."""

    context: ssl.SSLContext | None = None
    trust: str = ""
    source: str = ""
    client_keys: tuple[tuple[str, str], ...] = ()

    @property
    def scheme(self) -> str:
        return "http" if self.context is None else "https"

    def connection(self, host: str, port: int, timeout: float) -> http.client.HTTPConnection:
        """An ``http.client`` connection to ``host:port`` (not yet connected): HTTPS with this context, else
        plain."""
        import http.client

        if self.context is None:
            return http.client.HTTPConnection(host, port, timeout=timeout)
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=self.context)


def http_tls(conf: str | None = None, environ: dict | None = None) -> HttpTls:
    """The TLS of ``credentials.http_conf(conf, environ)``'s string: plain HTTP without one or for ``http::``."""
    return tls_of(http_conf(conf, environ))


def tls_of(chosen: HttpConf | None) -> HttpTls:
    """The TLS an ``http::``/``https::`` configuration string asks for, checked as the questdb client checks it
    (UsageError: a tls_roots file that is missing or holds no PEM certificate, a bad value)."""
    if chosen is None:
        return HttpTls()
    values, source = chosen.values, chosen.source
    given = [key for key in TLS_CONF_KEYS if key in values]
    if chosen.scheme == "http":
        if given:
            raise UsageError(f"{source}: {given[0]} is for https:: (the client refuses TLS keys on http::)")
        return HttpTls(source=source)
    if "tls_roots_password" in values:
        raise UsageError(f"{source}: tls_roots_password is not supported over HTTP (the questdb client reads "
                         f"unencrypted PEM only): give tls_roots a PEM file")
    verify = values.get("tls_verify", "on")
    if verify not in ("on", "unsafe_off"):
        raise UsageError(f"{source}: tls_verify must be on or unsafe_off, got {verify!r}")
    roots = values.get("tls_roots")
    ca = values.get("tls_ca", PEM_FILE if roots is not None else SYSTEM_CAS[0])
    if ca not in (*SYSTEM_CAS, PEM_FILE):
        raise UsageError(f"{source}: tls_ca must be one of {', '.join((*SYSTEM_CAS, PEM_FILE))}, got {ca!r}")
    if ca == PEM_FILE and roots is None:
        raise UsageError(f"{source}: tls_ca=pem_file needs tls_roots=PATH (a PEM file of CA certificates)")
    if ca != PEM_FILE and roots is not None:
        raise UsageError(f"{source}: tls_roots names a PEM file: it goes with tls_ca=pem_file, not {ca}")
    keys = tuple((key, values[key]) for key in given)
    if verify == "unsafe_off":
        return HttpTls(_unverified_context(), "any certificate (tls_verify=unsafe_off)", source, keys)
    if roots is not None:
        return HttpTls(_trusting(roots, True, f"{source}: tls_roots"), f"only the CA certificates of tls_roots={roots}",
                       source, keys)
    return HttpTls(_context(None, True), f"the system's root certificates, tls_ca={ca}; tls_roots=PATH names "
                                         f"a CA file of your own", source, keys)


@dataclass(frozen=True)
class PgTls:
    """libpq's TLS settings of a PGWire connection: ``sslmode``, the root certificates (``rootcert``: a PEM
    file, ``system``, or None) and ``negotiation``."""

    sslmode: str = "disable"
    rootcert: str | None = None
    negotiation: str = "postgres"

    @property
    def enabled(self) -> bool:
        """Whether the connection insists on TLS (allow and prefer settle for plain, which QuestDB's own port
        speaks)."""
        return self.sslmode not in ("disable", "allow", "prefer")

    @property
    def direct(self) -> bool:
        return self.negotiation == "direct"

    @property
    def verifies(self) -> bool:
        """Whether the server's certificate is checked: verify-ca, verify-full, and require given a root
        file (libpq's rule: a root certificate file makes require behave as verify-ca)."""
        return self.sslmode in ("verify-ca", "verify-full") or (self.sslmode == "require" and
                                                                self.rootcert is not None)

    def context(self) -> ssl.SSLContext | None:
        """The ``ssl.SSLContext`` of these settings (asyncpg), None where no TLS is asked for."""
        if not self.enabled:
            return None
        if not self.verifies:
            return _unverified_context()
        cafile = None if self.rootcert == "system" else self.rootcert
        return _context(cafile, self.sslmode == "verify-full")

    def describe(self) -> str:
        """The settings, for messages."""
        if not self.enabled:
            return f"PGSSLMODE={self.sslmode}"
        trust = f", PGSSLROOTCERT={self.rootcert}" if self.rootcert else ""
        return f"PGSSLMODE={self.sslmode}{trust}, PGSSLNEGOTIATION={self.negotiation}"


def pg_tls(environ: dict | None = None) -> PgTls:
    """libpq's ``PGSSLMODE``, ``PGSSLROOTCERT`` and ``PGSSLNEGOTIATION``, checked as libpq checks them
    (UsageError); ``disable`` when ``PGSSLMODE`` is unset (QuestDB speaks no TLS itself)."""
    environ = os.environ if environ is None else environ
    sslmode = environ.get("PGSSLMODE") or "disable"
    if sslmode not in SSLMODES:
        raise UsageError(f"PGSSLMODE must be one of {', '.join(SSLMODES)} (libpq's), got {sslmode!r}")
    negotiation = environ.get("PGSSLNEGOTIATION") or "postgres"
    if negotiation not in NEGOTIATIONS:
        raise UsageError(f"PGSSLNEGOTIATION must be postgres or direct (libpq's), got {negotiation!r}")
    if negotiation == "direct" and sslmode not in ("require", "verify-ca", "verify-full"):
        raise UsageError(f"PGSSLNEGOTIATION=direct needs PGSSLMODE=require, verify-ca or verify-full, as libpq "
                         f"does (PGSSLMODE={sslmode}{' by default' if 'PGSSLMODE' not in environ else ''})")
    rootcert = environ.get("PGSSLROOTCERT") or None
    if rootcert is None and sslmode in ("require", "verify-ca", "verify-full"):
        default = Path(environ.get("HOME", "~")).expanduser() / ".postgresql" / "root.crt"
        if default.is_file():
            rootcert = str(default)
        elif sslmode != "require":
            raise UsageError(f"PGSSLMODE={sslmode} checks the server's certificate: PGSSLROOTCERT must name a PEM "
                             f"file of CA certificates (or system: the system's roots), and {default} does not "
                             f"exist (as libpq requires)")
    if rootcert == "system" and sslmode in ("require", "verify-ca"):
        raise UsageError(f"PGSSLROOTCERT=system goes with PGSSLMODE=verify-full, as libpq requires (got {sslmode})")
    tls = PgTls(sslmode, rootcert, negotiation)
    if rootcert not in (None, "system") and tls.verifies:
        _trusting(rootcert, sslmode == "verify-full", "PGSSLROOTCERT")
    return tls


def _trusting(cafile: str, check_hostname: bool, what: str) -> ssl.SSLContext:
    """``_context(cafile, check_hostname)``; a file that cannot serve is refused in one line naming ``what``."""
    import ssl

    try:
        return _context(cafile, check_hostname)
    except ssl.SSLError:  # an OSError too
        raise UsageError(f"{what}={cafile}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)") from None
    except FileNotFoundError:
        raise UsageError(f"{what}={cafile}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{what}={cafile}: cannot read it ({exc.strerror or exc})") from None


@functools.lru_cache(maxsize=16)
def _context(cafile: str | None, check_hostname: bool) -> ssl.SSLContext:
    """A client context trusting ``cafile`` alone (None: the system's roots); made once per process."""
    import ssl

    context = ssl.create_default_context(cafile=cafile) if cafile is not None else ssl.create_default_context()
    context.check_hostname = check_hostname
    return context


@functools.lru_cache(maxsize=1)
def _unverified_context() -> ssl.SSLContext:
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def handshake_problem(exc: BaseException | None) -> str | None:
    """The words of a failed TLS handshake found in ``exc``, its ``reason`` (urllib's) or its causes
    (``certificate verify failed: unable to get local issuer certificate``); None when it is not one."""
    import ssl

    for each in _chain(exc):
        if isinstance(each, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {each.verify_message}"
        if isinstance(each, ssl.SSLError):
            reason = each.reason or type(each).__name__
            return f"TLS handshake failed: {reason.lower().replace('_', ' ')}"
    return None


def _chain(exc: BaseException | None):
    """``exc``, then what it wraps, each once."""
    seen, pending = set(), [exc]
    while pending:
        each = pending.pop(0)
        if each is None or id(each) in seen:
            continue
        seen.add(id(each))
        yield each
        reason = getattr(each, "reason", None)
        pending += [reason if isinstance(reason, BaseException) else None, each.__cause__, each.__context__]


def speaks_tls(host: str, port: int, timeout: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """Whether ``host:port`` completes a TLS handshake (its certificate not checked): asked once a connection
    has failed, to tell a TLS port from a plain one."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout) as raw, \
                _unverified_context().wrap_socket(raw, server_hostname=host):
            return True
    except (OSError, ValueError):
        return False


def http_failure(host: str, port: int, tls: HttpTls, exc: BaseException) -> str | None:
    """The one line of an HTTP request that failed for TLS's sake (an untrusted certificate, TLS to a plain
    port, plain HTTP to a TLS port: the port is asked what it speaks once the request failed); None when
    TLS is not the cause."""
    import http.client

    address, problem = f"{host}:{port}", handshake_problem(exc)
    if tls.context is not None:
        if problem is not None and problem.startswith("certificate"):
            return f"QuestDB HTTP at {address}: {problem} (the https:: string of {tls.source} trusts {tls.trust})"
        if (problem is not None or any(isinstance(each, TimeoutError) for each in _chain(exc))) and \
                not speaks_tls(host, port):
            return (f"QuestDB HTTP at {address} does not speak TLS ({problem or 'no TLS handshake'}): the https:: "
                    f"string of {tls.source} asks for TLS; a plain HTTP port takes http::")
        return None
    dropped = (ConnectionResetError, ConnectionAbortedError, http.client.BadStatusLine)
    if any(isinstance(each, dropped) for each in _chain(exc)) and speaks_tls(host, port):
        return (f"QuestDB HTTP at {address} speaks TLS (a TLS-terminating proxy?) and the request was plain HTTP: "
                f"give the harness an https:: configuration string (--conf, QDB_CLIENT_CONF or HARNESS_HTTP_CONF) "
                f"that trusts its certificate (tls_roots=CA.pem)")
    return None
