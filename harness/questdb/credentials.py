"""A server's credentials, from the one place every client of ours takes them, by the conventions users
already have:

- HTTP (``/exec``, ``/exp``, ILP over HTTP): the client configuration string's ``username``/``password`` or
  ``token``, from ``--conf`` where it has them, else from ``QDB_CLIENT_CONF`` (what ``Sender.from_env()``
  reads). Sent as HTTP basic auth (a token: ``Bearer``).
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
from harness.questdb.conf import parse_conf

# The environment variable the questdb client's ``Sender.from_env()`` reads.
CLIENT_CONF_VARIABLE = "QDB_CLIENT_CONF"
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


def http_login(conf: str | None = None, environ: dict | None = None) -> HttpLogin | None:
    """The HTTP credentials of ``conf`` (a ``--conf``) when it has some, else of ``QDB_CLIENT_CONF``; None when
    neither has any."""
    environ = os.environ if environ is None else environ
    for source, text in (("--conf", conf), (CLIENT_CONF_VARIABLE, environ.get(CLIENT_CONF_VARIABLE))):
        if not text:
            continue
        try:
            _, pairs = parse_conf(text)
        except UsageError as exc:
            raise UsageError(f"{source}: {str(exc).removeprefix('--conf: ').removeprefix('--conf ')}") from None
        values = dict(pairs)
        if "token" in values:
            return HttpLogin(token=values["token"], source=source)
        if "username" in values or "password" in values:
            return HttpLogin(values.get("username"), values.get("password"), source=source)
    return None


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


def secrets(conf: str | None = None, environ: dict | None = None) -> list[str]:
    """Every secret the credentials sources hold now: none may appear in what a run prints or records."""
    environ = os.environ if environ is None else environ
    found = []
    login = http_login(conf, environ)
    if login is not None:
        found += [value for value in (login.password, login.token) if value]
    if environ.get("PGPASSWORD"):
        found.append(environ["PGPASSWORD"])
    return found
