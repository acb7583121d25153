"""ILP through the official client's ``Sender``, over HTTP (each commit one request, answered and committed by the
server as one transaction) or TCP (a stream of lines the server never answers): its configuration string, its
connections, what it needs of the server and what a sweep may vary, and the server's refusals made plain.

The two calls into the client are functions of their own (``append_frame_to_sender``, ``flush_sender``), so that a
profile of Python frames alone (``--profile`` without native frames) tells serializing from sending."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from questdb import QuestDBError, Sender

from harness.errors import RunError, UsageError, one_line
from harness.frames.convert import as_pandas
from harness.frames.kinds import FrameKind
from harness.ingest.choices import ProtocolVersion, Transport
from harness.ingest.ilp import client_symbols
from harness.ingest.wire.client_errors import client_errors
from harness.ingest.wire.interface import Delivery, WireTraits, WireVariant
from harness.ingest.wire.settings import SenderSettings
from harness.questdb.conf import redact_conf
from harness.questdb.features import ILP_OVER_HTTP, protocol_feature

OVER_HTTP = WireTraits("ILP/HTTP", Delivery.committed, prefix_in_doubt=False, takes=frozenset({"frame", "row"}),
                       # the client's flush waits for the answer with a timeout, which a pause interrupts (EINTR)
                       pauses_break_it=True)
# The kinds of frame a sweep tries over QWP beside pandas: those it takes through the Arrow C stream.
QWP_SWEPT_FRAMES = (FrameKind.arrow, FrameKind.polars)
OVER_TCP = WireTraits("ILP/TCP", Delivery.written, prefix_in_doubt=False, takes=frozenset({"frame", "row"}))


def append_frame_to_sender(sender: Sender, frame: pd.DataFrame, table: str, symbols: bool | str | tuple[str, ...],
                           at: str) -> None:
    """``sender.dataframe()``: one frame serialized into the sender's buffer."""
    sender.dataframe(frame, table_name=table, symbols=client_symbols(symbols), at=at)


def flush_sender(sender: Sender) -> None:
    """``sender.flush()``: the buffer sent (over HTTP: committed and answered)."""
    sender.flush()


@dataclass(frozen=True)
class IlpWire:
    """ILP over HTTP or TCP (``settings.scheme``) to the address of ``settings``."""

    settings: SenderSettings

    @property
    def traits(self) -> WireTraits:
        return OVER_HTTP if self.settings.scheme in ("http", "https") else OVER_TCP

    def conf_string(self) -> str:
        """The configuration string senders connect with: ``--conf``, or one made of the settings, flushed only when
        the harness says (it times each flush)."""
        settings = self.settings
        if settings.conf is not None:
            return settings.conf
        conf = f"{settings.transport}::addr={settings.address};auto_flush=off;"
        if settings.protocol_version != ProtocolVersion.auto:
            conf += f"protocol_version={settings.protocol_version};"
        if settings.retry_timeout_ms is not None and settings.transport == Transport.http:
            conf += f"retry_timeout={settings.retry_timeout_ms};"
        return conf

    def public_conf_string(self) -> str:
        """The configuration string as it may be printed and recorded (secrets hidden)."""
        return redact_conf(self.conf_string())

    def connect(self) -> IlpConnection:
        try:
            sender = Sender.from_conf(self.conf_string())
        except QuestDBError as exc:
            raise UsageError(f"bad client configuration {self.public_conf_string()!r}: {one_line(exc)}") from None
        try:
            sender.establish()
        except QuestDBError as exc:
            raise RunError(f"cannot connect to {self.settings.address}: {self.refusal(one_line(exc))}") from None
        return IlpConnection(sender)

    def needed_features(self) -> list[str]:
        needed = [ILP_OVER_HTTP] if self.traits is OVER_HTTP else []
        version = self.settings.configured_protocol_version
        if version not in ("auto", "1"):
            needed.append(protocol_feature(int(version)))
        return needed

    def variants(self, into_sink: bool, workers: int) -> list[WireVariant]:
        """The binary protocol where text is sent (ILP/TCP's default is text), and the other transport and QWP with
        each kind of frame it takes (not into the sink, which answers neither HTTP nor QWP); none under a whole
        configuration string (``--conf``, ``QDB_CLIENT_CONF``), which wins over both."""
        settings = self.settings
        if settings.conf is not None:
            return []
        found = []
        if settings.transport == Transport.tcp and settings.protocol_version in (ProtocolVersion.auto,
                                                                                 ProtocolVersion.v1):
            found.append(WireVariant("protocol 2 (binary doubles)", {"protocol_version": ProtocolVersion.v2},
                                     "protocol 2"))
        if not into_sink:
            other = Transport.http if settings.transport == Transport.tcp else Transport.tcp
            found.append(WireVariant(f"ILP over {other}", {"transport": other}))
            qwp = {"transport": Transport.qwp, "protocol_version": ProtocolVersion.auto}
            found += [WireVariant("QWP", qwp),
                      *(WireVariant(f"QWP, {kind} frames", {**qwp, "frame": kind}) for kind in QWP_SWEPT_FRAMES)]
        return found

    def code_conf(self) -> str:
        settings = self.settings
        if settings.conf is not None:
            return settings.conf
        protocol = "" if settings.protocol_version == ProtocolVersion.auto else \
            f"protocol_version={settings.protocol_version};"
        return f"{settings.transport}::addr={settings.address};{protocol}"

    def sending_code(self, symbols: bool | str | tuple[str, ...], at: str) -> tuple[list[str], str, list[str]]:
        return (["import questdb"], "with questdb.Sender.from_conf(CONF) as sender:",
                [f"sender.dataframe(df, table_name=TABLE, symbols={client_symbols(symbols)!r}, at={at!r})",
                 "sender.flush()"])

    def refusal(self, failure: str) -> str:
        """QuestDB closes an ILP/TCP connection without a word when it refuses the login (or wanted one): such a
        failure says so; over HTTP, a refused login names whose."""
        values = self.settings.conf_values
        user = f"user {values['username']!r} of the configuration string" if "username" in values else None
        if self.traits is OVER_TCP and ("reset by peer" in failure or "Broken pipe" in failure):
            if user is not None:
                return (f"{failure}: QuestDB closes an ILP/TCP connection whose login it refuses, without a reason: "
                        f"check the key (token, token_x, token_y) of {user} against the server's "
                        f"line.tcp.auth.db.path")
            return (f"{failure}: QuestDB closes an ILP/TCP connection at once when it asks for ILP authentication "
                    f"(line.tcp.auth.db.path): give username, token, token_x and token_y in the configuration "
                    f"string (--conf or QDB_CLIENT_CONF)")
        if self.traits is OVER_HTTP and "authentication error" in failure:
            whom = user or "no user (the configuration string has no username/password or token)"
            return f"{failure}: QuestDB refused the ILP/HTTP login of {whom}"
        return failure

    def unseen_losses(self) -> str:
        if self.traits is not OVER_TCP:
            return ""
        values = self.settings.conf_values
        login = (f"refused the ILP login of user {values['username']!r} (check its key: token, token_x, token_y)"
                 if "username" in values else "asks for an ILP login none was given (line.tcp.auth.db.path)")
        return (f" (over ILP/TCP, QuestDB closes a connection without a word when it {login} or a line it "
                f"cannot parse: its log says which)")


class IlpConnection:
    """One ``Sender``: frames and rows into its buffer, a flush a commit. The client's errors are ``RunError``s of
    one line (its own words: the wire's ``refusal`` says why where it knows)."""

    def __init__(self, sender: Sender):
        self._sender = sender

    def frame(self, table: str, frame, symbols: bool | str | tuple[str, ...], at: str) -> None:
        # An Arrow or Polars frame converted to pandas first: Sender.dataframe() takes nothing else.
        with client_errors():
            append_frame_to_sender(self._sender, as_pandas(frame), table, symbols, at)

    def row(self, table: str, symbols: dict, columns: dict, at) -> None:
        with client_errors():
            self._sender.row(table, symbols=symbols, columns=columns, at=at)

    def write(self, data: bytes) -> None:
        raise UsageError("ILP through the client takes frames and rows, not bytes")

    def commit(self) -> int:
        nbytes = len(self._sender)
        with client_errors():
            flush_sender(self._sender)
        return nbytes

    def close(self) -> None:
        try:
            self._sender.close(flush=False)
        except QuestDBError:
            pass  # the run's own error (if any) is the one worth reporting
