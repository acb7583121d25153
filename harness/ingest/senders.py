"""Client connections: the configuration string for a target, opening senders, and their errors.

Owns how the harness's options (transport, protocol version, host, ports, a user's own ``--conf``)
become a ``questdb.Sender``, and how the client's errors become one-line ``RunError``s.
"""

from __future__ import annotations

from dataclasses import dataclass

from questdb import QuestDBError, Sender

from harness.errors import RunError, UsageError
from harness.ingest.choices import ProtocolVersion, Transport
from harness.questdb.conf import CONF_SCHEMES, parse_conf, redact_conf

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

    def refusal(self, failure: str) -> str:
        """``failure`` (the client's error, one line) with, where it is what a refused ILP login looks like, the
        why: QuestDB closes an ILP/TCP connection without a word when it refuses the login (or wanted one)."""
        values = dict(parse_conf(self.conf)[1]) if self.conf is not None else {}
        user = f"user {values['username']!r} of the configuration string" if "username" in values else None
        if self.scheme in ("tcp", "tcps") and ("reset by peer" in failure or "Broken pipe" in failure):
            if user is not None:
                return (f"{failure}: QuestDB closes an ILP/TCP connection whose login it refuses, without a reason: "
                        f"check the key (token, token_x, token_y) of {user} against the server's "
                        f"line.tcp.auth.db.path")
            return (f"{failure}: QuestDB closes an ILP/TCP connection at once when it asks for ILP authentication "
                    f"(line.tcp.auth.db.path): give username, token, token_x and token_y in the configuration "
                    f"string (--conf or QDB_CLIENT_CONF)")
        if self.scheme in ("http", "https") and "authentication error" in failure:
            whom = user or "no user (the configuration string has no username/password or token)"
            return f"{failure}: QuestDB refused the ILP/HTTP login of {whom}"
        return failure

    def unseen_losses(self) -> str:
        """Why rows sent may be missing though every flush succeeded, as the end of a shortfall's line: over
        ILP/TCP the server closes a connection it refuses (a login, a line) and the client may not notice."""
        if self.scheme not in ("tcp", "tcps"):
            return ""
        values = dict(parse_conf(self.conf)[1]) if self.conf is not None else {}
        login = (f"refused the ILP login of user {values['username']!r} (check its key: token, token_x, token_y)"
                 if "username" in values else "asks for an ILP login none was given (line.tcp.auth.db.path)")
        return (f" (over ILP/TCP, QuestDB closes a connection without a word when it {login} or a line it "
                f"cannot parse: its log says which)")

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
        raise RunError(f"cannot connect to {target.address}: {target.refusal(one_line(exc))}") from None
    return sender


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
