"""Client connections: the configuration string for a target, opening senders, and their errors.

Owns how the harness's options (transport, protocol version, host, ports, a user's own ``--conf``)
become a ``questdb.Sender``, and how the client's errors become one-line ``RunError``s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from questdb import QuestDBError, Sender

from harness.errors import RunError, UsageError
from harness.ingest.choices import ProtocolVersion, Transport

# The schemes a client configuration string may start with, and the port each uses without one.
CONF_SCHEMES = {"tcp": 9009, "tcps": 9009, "http": 9000, "https": 9000}
# The keys the questdb client documents for ILP over TCP/HTTP; it ignores any other key silently, so a
# typo (protocol_versoin=2) would quietly measure something else: we refuse it instead.
CONF_KEYS = frozenset({
    "addr", "bind_interface", "username", "password", "token", "token_x", "token_y", "auth_timeout",
    "tls_verify", "tls_ca", "tls_roots", "tls_roots_password", "auto_flush", "auto_flush_rows",
    "auto_flush_bytes", "auto_flush_interval", "init_buf_size", "max_name_len", "max_buf_size",
    "request_min_throughput", "request_timeout", "retry_timeout", "protocol_version",
})
# Values never printed nor recorded: a results file or a log line must not leak credentials.
SECRET_CONF_KEYS = frozenset({"password", "token", "token_x", "token_y", "tls_roots_password"})


def parse_conf(conf: str) -> tuple[str, list[tuple[str, str]]]:
    """The scheme and the ``key=value`` pairs of a client configuration string (``;;`` is an escaped ``;``)."""
    scheme, separator, rest = conf.partition("::")
    if not separator or scheme not in CONF_SCHEMES:
        raise UsageError(f"--conf must look like 'tcp::addr=host:port;...' with a scheme of "
                         f"{', '.join(CONF_SCHEMES)}, got {redact_text(conf)!r}")
    pairs = []
    for item in rest.replace(";;", "\0").split(";"):
        if not item:
            continue
        key, equals, value = item.partition("=")
        if not equals:
            # The entry itself is not shown: it may be the tail of a secret holding an unescaped ';'.
            raise UsageError(f"--conf: entry {len(pairs) + 1} is not key=value (write a ';' inside a value as ';;')")
        pairs.append((key, value.replace("\0", ";")))
    if "addr" not in dict(pairs):
        raise UsageError("--conf needs addr=host:port")
    unknown = [key for key, _ in pairs if key not in CONF_KEYS]
    if unknown:
        raise UsageError(f"--conf: unknown key {unknown[0]!r} (the client would ignore it); known keys: "
                         f"{', '.join(sorted(CONF_KEYS))}")
    return scheme, pairs


def redact_conf(conf: str) -> str:
    """``conf`` with the values of secret keys replaced by ``***``."""
    scheme, pairs = parse_conf(conf)
    return scheme + "::" + "".join(
        f"{key}={'***' if key.lower() in SECRET_CONF_KEYS else value.replace(';', ';;')};" for key, value in pairs)


def redact_text(text: str) -> str:
    """For text that does not parse: every secret key's value hidden (whatever its case) up to the next
    unescaped ``;``."""
    pattern = re.compile(r"(?i)\b(" + "|".join(sorted(SECRET_CONF_KEYS, key=len, reverse=True)) + r")=((?:;;|[^;])*)")
    return pattern.sub(lambda match: f"{match.group(1)}=***", text)


@dataclass(frozen=True)
class SenderSettings:
    """Where and how senders connect. ``conf`` (a full client configuration string) wins over the rest."""

    transport: str = "tcp"
    protocol_version: str = "auto"
    host: str = "localhost"
    ilp_port: int = 9009
    http_port: int = 9000
    conf: str | None = None
    # The client's own retries of a failed HTTP request (it gives up after this many milliseconds).
    retry_timeout_ms: int | None = None

    def __post_init__(self) -> None:
        # Checked by the options layer already; a library caller's plain string becomes the enum here.
        object.__setattr__(self, "transport", Transport(self.transport))
        object.__setattr__(self, "protocol_version", ProtocolVersion(self.protocol_version))
        if self.conf is not None:
            parse_conf(self.conf)

    @property
    def scheme(self) -> str:
        """The transport senders really use: ``--conf``'s scheme when given."""
        return parse_conf(self.conf)[0] if self.conf is not None else self.transport

    @property
    def address(self) -> str:
        if self.conf is not None:
            return dict(parse_conf(self.conf)[1])["addr"]
        port = self.ilp_port if self.transport == "tcp" else self.http_port
        return f"{self.host}:{port}"

    def endpoint(self) -> tuple[str, int]:
        """(host, port) senders connect to, for checking that something listens there."""
        host, colon, port = self.address.rpartition(":")
        if not colon or not port.isdigit():
            return self.address, CONF_SCHEMES[self.scheme]
        return host.strip("[]"), int(port)

    def conf_string(self) -> str:
        if self.conf is not None:
            return self.conf
        # The harness flushes explicitly after every chunk, so it can time each flush.
        conf = f"{self.transport}::addr={self.address};auto_flush=off;"
        if self.protocol_version != ProtocolVersion.auto:
            conf += f"protocol_version={self.protocol_version};"
        if self.retry_timeout_ms is not None and self.transport == "http":
            conf += f"retry_timeout={self.retry_timeout_ms};"
        return conf

    @property
    def configured_protocol_version(self) -> str:
        """The protocol version senders are told to use (``--conf``'s when given): a number, or auto."""
        if self.conf is not None:
            return dict(parse_conf(self.conf)[1]).get("protocol_version", "auto")
        return str(self.protocol_version)

    def offline_protocol_version(self) -> int:
        """The protocol version a serialize-only run uses when no server is asked: what the client
        would pick, except that HTTP's negotiation is replaced by version 2 (binary doubles)."""
        version = self.configured_protocol_version
        if version != "auto":
            return int(version)
        return 1 if self.scheme.startswith("tcp") else 2

    def used(self) -> dict[str, str]:
        """What senders really use (``--conf`` wins over the separate options), as a record states it."""
        return {"transport": str(self.scheme), "sender_address": self.address,
                "protocol_version": self.configured_protocol_version}

    def public_conf_string(self) -> str:
        """The configuration string as it may be printed and recorded (secrets hidden)."""
        return redact_conf(self.conf_string())


def open_sender(target: SenderSettings) -> Sender:
    """A connected sender; connection errors become one line naming the address."""
    try:
        sender = Sender.from_conf(target.conf_string())
    except QuestDBError as exc:
        raise UsageError(f"bad client configuration {target.public_conf_string()!r}: {one_line(exc)}") from None
    try:
        sender.establish()
    except QuestDBError as exc:
        raise RunError(f"cannot connect to {target.address}: {one_line(exc)}") from None
    return sender


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
