"""Client connections: the configuration string for a target, opening senders, and their errors.

Owns how the harness's options (transport, protocol version, host, ports, a user's own ``--conf``)
become a ``questdb.Sender``, and how the client's errors become one-line ``RunError``s.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from questdb import QuestDBError, Sender

from harness.errors import RunError, UsageError

TRANSPORTS = ("tcp", "http")
PROTOCOL_VERSIONS = ("1", "2", "3", "auto")
CONNECT_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class SenderTarget:
    """Where and how senders connect. ``conf`` (a full client configuration string) wins over the rest."""

    transport: str = "tcp"
    protocol_version: str = "auto"
    host: str = "localhost"
    ilp_port: int = 9009
    http_port: int = 9000
    conf: str | None = None

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise UsageError(f"--transport must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}")
        if self.protocol_version not in PROTOCOL_VERSIONS:
            raise UsageError(
                f"--protocol-version must be one of {', '.join(PROTOCOL_VERSIONS)}, got {self.protocol_version!r}"
            )
        if self.conf is not None and "::" not in self.conf:
            raise UsageError(f"--conf must look like 'tcp::addr=host:port;...', got {self.conf!r}")

    @property
    def address(self) -> str:
        port = self.ilp_port if self.transport == "tcp" else self.http_port
        return f"{self.host}:{port}"

    def conf_string(self) -> str:
        if self.conf is not None:
            return self.conf
        # The harness flushes explicitly after every chunk, so it can time each flush.
        conf = f"{self.transport}::addr={self.address};auto_flush=off;"
        if self.protocol_version != "auto":
            conf += f"protocol_version={self.protocol_version};"
        return conf

    def offline_protocol_version(self) -> int:
        """The protocol version a serialize-only run uses when no server is asked: what the client
        would pick, except that HTTP's negotiation is replaced by version 2 (binary doubles)."""
        if self.protocol_version != "auto":
            return int(self.protocol_version)
        conf = self.conf or ""
        return 1 if (conf or self.transport).startswith("tcp") else 2


def check_listening(host: str, port: int, what: str) -> None:
    """Fail within seconds, naming host:port, when nothing accepts connections there."""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise RunError(f"nothing listening at {host}:{port} ({what}): {reason}") from None


def open_sender(target: SenderTarget) -> Sender:
    """A connected sender; connection errors become one line naming the address."""
    try:
        sender = Sender.from_conf(target.conf_string())
    except QuestDBError as exc:
        raise UsageError(f"bad client configuration {target.conf_string()!r}: {one_line(exc)}") from None
    try:
        sender.establish()
    except QuestDBError as exc:
        raise RunError(f"cannot connect to {target.address}: {one_line(exc)}") from None
    return sender


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
