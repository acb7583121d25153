"""Where and how senders connect (``SenderSettings``): the transport, the ILP protocol version, QWP's rows per batch,
the server's address and ports, or a user's whole client configuration string (``--conf``), which wins; and what a run
records of them."""

from __future__ import annotations

from dataclasses import dataclass

from harness.ingest.choices import SCHEME_TRANSPORTS, TRANSPORT_SCHEMES, ProtocolVersion, Transport
from harness.questdb.conf import CONF_SCHEMES, parse_conf


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
    # QWP: the rows of one batch of a ``dataframe()`` call, and the most connections the handle's pool opens for
    # calls at once (None: the client's defaults).
    max_rows_per_batch: int | None = None
    sender_pool_max: int | None = None

    def __post_init__(self) -> None:
        # Checked by the options layer already; a library caller's plain string becomes the enum here.
        object.__setattr__(self, "transport", Transport(self.transport))
        object.__setattr__(self, "protocol_version", ProtocolVersion(self.protocol_version))
        if self.conf is not None:
            parse_conf(self.conf)

    @property
    def scheme(self) -> str:
        """The configuration string's scheme senders really use: ``--conf``'s when given, else the transport's."""
        return parse_conf(self.conf)[0] if self.conf is not None else TRANSPORT_SCHEMES[self.transport]

    @property
    def used_transport(self) -> Transport:
        """The transport senders really use: ``--conf``'s when given."""
        return SCHEME_TRANSPORTS[self.scheme]

    @property
    def conf_values(self) -> dict[str, str]:
        """The keys of ``--conf`` (none without one)."""
        return dict(parse_conf(self.conf)[1]) if self.conf is not None else {}

    @property
    def address(self) -> str:
        if self.conf is not None:
            return self.conf_values["addr"]
        port = self.ilp_port if self.transport == Transport.tcp else self.http_port
        return f"{self.host}:{port}"

    def endpoint(self) -> tuple[str, int]:
        """(host, port) senders connect to, for checking that something listens there."""
        host, colon, port = self.address.rpartition(":")
        if not colon or not port.isdigit():
            return self.address, CONF_SCHEMES[self.scheme]
        return host.strip("[]"), int(port)

    @property
    def configured_protocol_version(self) -> str:
        """The protocol version senders are told to use (``--conf``'s when given): a number, or auto."""
        if self.conf is not None:
            return self.conf_values.get("protocol_version", "auto")
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
        transport = str(self.used_transport) if self.used_transport == Transport.qwp else str(self.scheme)
        return {"transport": transport, "sender_address": self.address,
                "protocol_version": self.configured_protocol_version}
