"""A server's credentials, from the one place every client of ours takes them, by the conventions users
already have:

- HTTP (``/exec``, ``/exp``, ``/metrics``, ILP over HTTP): the ``username``/``password`` or ``token`` of an
  ``http::``/``https::`` client configuration string: ``HARNESS_HTTP_CONF`` when set (the harness's own
  requests, told apart from the sending), else the first of ``--conf`` and ``QDB_CLIENT_CONF`` (what
  ``Sender.from_env()`` reads) that holds credentials. Sent as HTTP basic auth (a token: ``Bearer``). A
  ``tcp::`` string's ``username``/``token`` are ILP/TCP's signing key, never an HTTP login.
- PGWire: libpq's ``PGUSER``, ``PGPASSWORD`` and ``PGDATABASE``, and its password file (``PGPASSFILE``, else
  ``~/.pgpass``; ``host:port:database:user:password`` lines, ``*`` matching anything), refused when others may
  read it, as libpq refuses it. QuestDB's factory login (``admin``/``quest``, database ``qdb``) otherwise.

Nothing here is ever printed: ``secrets()`` lists what a record, a report, a log line or a label must not
hold (``harness.questdb.conf.redact_conf`` hides a configuration string's).
"""

from __future__ import annotations

import base64
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UsageError
from harness.questdb.conf import SECRET_CONF_KEYS, parse_conf

# The environment variable the questdb client's ``Sender.from_env()`` reads.
CLIENT_CONF_VARIABLE = "QDB_CLIENT_CONF"
# The harness's own HTTP requests' configuration string, where they differ from the sending (a TCP run).
HTTP_CONF_VARIABLE = "HARNESS_HTTP_CONF"
# The schemes whose strings name the HTTP port's login and TLS, and the HTTP scheme each is: ILP over HTTP's, and
# QWP's (its WebSocket is on the HTTP port, behind the same login).
HTTP_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}
# QuestDB's factory PGWire login.
DEFAULT_PG_USER, DEFAULT_PG_PASSWORD, DEFAULT_PG_DATABASE = "admin", "quest", "qdb"


@dataclass(frozen=True)
class HttpLogin:
    """HTTP basic auth (``username``, ``password``) or a bearer ``token``; ``source`` says where it came from."""

    username: str | None = None
    password: str | None = None
    token: str | None = None
    source: str = ""

    def header(self) -> str:
        """The ``Authorization`` header's value."""
        if self.token is not None:
            return f"Bearer {self.token}"
        pair = f"{self.username or ''}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    def describe(self) -> str:
        """Who logs in, for messages (never the secret)."""
        who = "a token" if self.token is not None else f"user {self.username!r}"
        return f"{who} from {self.source}"


@dataclass(frozen=True)
class PgLogin:
    """A PGWire login; ``source`` says where it came from."""

    user: str = DEFAULT_PG_USER
    password: str = DEFAULT_PG_PASSWORD
    database: str = DEFAULT_PG_DATABASE
    source: str = "QuestDB's factory login"


def refused_http_login(address: str, status: int, login: HttpLogin | None) -> str:
    """The one line of a server refusing an HTTP login: whom it refused, never the secret."""
    whom = (f"it refused {login.describe()}" if login is not None else
            f"no credentials were given (the client configuration string's username and password, or token: "
            f"{CLIENT_CONF_VARIABLE}, or --conf where the command takes one)")
    return f"QuestDB HTTP at {address} refused the login (HTTP {status}): {whom}"


@dataclass(frozen=True)
class HttpConf:
    """The configuration string the harness's own HTTP requests follow: its scheme, keys and source."""

    scheme: str
    values: dict
    source: str

    def has_login(self) -> bool:
        return any(key in self.values for key in ("username", "password", "token"))


def http_conf(conf: str | None = None, environ: dict | None = None) -> HttpConf | None:
    """``HARNESS_HTTP_CONF`` when set; else the first ``http::``/``https::`` (or QWP's ``ws::``/``wss::``) string of
    ``conf`` (a ``--conf``) and ``QDB_CLIENT_CONF`` holding credentials, else the first of them; None when there is
    none."""
    environ = os.environ if environ is None else environ
    found = []
    for source, text in _conf_sources(conf, environ):
        scheme, values = _parsed(source, text)
        if source == HTTP_CONF_VARIABLE:
            if scheme not in HTTP_SCHEMES:
                raise UsageError(f"{HTTP_CONF_VARIABLE} must be an http::, https::, ws:: or wss:: configuration "
                                 f"string, got {scheme}::")
            return HttpConf(HTTP_SCHEMES[scheme], values, source)
        if scheme in HTTP_SCHEMES:
            found.append(HttpConf(HTTP_SCHEMES[scheme], values, source))
    return next((each for each in found if each.has_login()), found[0] if found else None)


def http_login(conf: str | None = None, environ: dict | None = None) -> HttpLogin | None:
    """The login of ``http_conf``; None when it has none."""
    chosen = http_conf(conf, environ)
    if chosen is None or not chosen.has_login():
        return None
    if "token" in chosen.values:
        return HttpLogin(token=chosen.values["token"], source=chosen.source)
    return HttpLogin(chosen.values.get("username"), chosen.values.get("password"), source=chosen.source)


def _conf_sources(conf: str | None, environ: dict) -> list[tuple[str, str]]:
    """The configuration strings in force, by name, most specific first."""
    return [(source, text) for source, text in ((HTTP_CONF_VARIABLE, environ.get(HTTP_CONF_VARIABLE)),
                                                ("--conf", conf),
                                                (CLIENT_CONF_VARIABLE, environ.get(CLIENT_CONF_VARIABLE))) if text]


def _parsed(source: str, text: str) -> tuple[str, dict]:
    try:
        scheme, pairs = parse_conf(text)
    except UsageError as exc:
        raise UsageError(f"{source}: {str(exc).removeprefix('--conf: ').removeprefix('--conf ')}") from None
    return scheme, dict(pairs)


def pg_login(host: str, port: int, environ: dict | None = None) -> PgLogin:
    """The PGWire login for ``host:port``: ``PGUSER``/``PGPASSWORD``/``PGDATABASE``, the password file's line
    for it where ``PGPASSWORD`` is not set, QuestDB's factory login for what neither gives."""
    environ = os.environ if environ is None else environ
    user = environ.get("PGUSER") or DEFAULT_PG_USER
    database = environ.get("PGDATABASE") or DEFAULT_PG_DATABASE
    if "PGPASSWORD" in environ:
        return PgLogin(user, environ["PGPASSWORD"], database, "PGPASSWORD")
    password_file = environ.get("PGPASSFILE")
    path = Path(password_file) if password_file else Path(environ.get("HOME", "~")).expanduser() / ".pgpass"
    if password_file or path.is_file():
        password = _password_file_entry(path, host, port, database, user, named=bool(password_file))
        if password is not None:
            return PgLogin(user, password, database, f"the password file {path}")
    if user != DEFAULT_PG_USER:
        return PgLogin(user, "", database, "PGUSER, without a password")
    return PgLogin(user, DEFAULT_PG_PASSWORD, database)


def _password_file_entry(path: Path, host: str, port: int, database: str, user: str, named: bool) -> str | None:
    """The password of the first line of libpq's password file matching the login (``*`` matches any field;
    ``\\:`` and ``\\\\`` escape). A file others may read is refused, as libpq refuses it."""
    try:
        mode = path.stat().st_mode
        text = path.read_text()
    except FileNotFoundError:
        if named:
            raise UsageError(f"PGPASSFILE {path}: no such file") from None
        return None
    except OSError as exc:
        raise UsageError(f"PGPASSFILE {path}: cannot read it ({exc.strerror})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(f"the password file {path} may be read by others (mode {stat.S_IMODE(mode):o}): make it "
                         f"0600 (chmod 600 {path}), as libpq requires")
    wanted = (host, str(port), database, user)
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = _fields(line)
        if len(fields) != 5:
            continue
        if all(field in ("*", value) for field, value in zip(fields[:4], wanted)) or (
                fields[0] == "localhost" and host in ("127.0.0.1", "::1")
                and all(field in ("*", value) for field, value in zip(fields[1:4], wanted[1:]))):
            return fields[4]
    return None


def _fields(line: str) -> list[str]:
    fields, current, escaped = [], [], False
    for char in line:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ":":
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
    fields.append("".join(current))
    return fields


def secrets(conf: str | None = None, environ: dict | None = None, pg: PgLogin | None = None) -> list[str]:
    """Every secret the credentials sources hold now (each configuration string's secret keys, ``PGPASSWORD``,
    ``pg``'s password from a password file): none may appear in what a run prints or records."""
    environ = os.environ if environ is None else environ
    found = []
    for source, text in _conf_sources(conf, environ):
        _, values = _parsed(source, text)
        found += [value for key, value in values.items() if key in SECRET_CONF_KEYS and value]
    if environ.get("PGPASSWORD"):
        found.append(environ["PGPASSWORD"])
    if pg is not None and pg.password and pg.password != DEFAULT_PG_PASSWORD:
        found.append(pg.password)
    return list(dict.fromkeys(found))
