"""QWP through the official client's ``questdb.connect()``: columnar over WebSocket on the server's HTTP port
(QuestDB 10+). Its configuration string, its connections lent from the one ``QuestDB`` handle (a pool) the wire
holds, what it needs of the server and what a sweep may vary, and the server's refusals made plain.

A frame is one ``QuestDB.dataframe()`` call, which returns once the server has committed every batch of it: the
connection's ``frame`` commits, its ``commit`` has nothing left to do. Such a call that fails may have committed a
prefix of its batches (the client's ``in_doubt``): the failure says so (``PrefixInDoubt``), and only a deduplicating
table makes re-sending it safe. Rows (the row baselines) go through a lease of the pool's row senders, flushed at
each commit and waited for until the server has acknowledged them.

The call into the client is a function of its own (``load_frame``), so that a profile of Python frames alone tells
it from the harness's own work."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pandas as pd
import questdb
from questdb import QuestDBError

from harness.errors import RunError, UsageError, one_line
from harness.frames.kinds import FrameKind
from harness.ingest.choices import Transport
from harness.ingest.ilp import client_symbols
from harness.ingest.wire.client_errors import client_errors
from harness.ingest.wire.interface import Delivery, PrefixInDoubt, WireTraits, WireVariant
from harness.ingest.wire.settings import SenderSettings
from harness.own_data.qwp_dtypes import whole_arrow_columns
from harness.questdb.conf import redact_conf
from harness.questdb.features import QWP as QWP_FEATURE, SINCE

QWP = WireTraits("QWP", Delivery.committed, prefix_in_doubt=True, takes=frozenset({"frame", "row"}),
                 frames_as_they_are=True, encodes_apart=False)
# Rows per batch of a ``dataframe()`` call a sweep tries beside the client's own (16,384 in client 6.0).
SWEPT_BATCH_ROWS = 65_536
# How long closing the handle waits for calls still in flight (a run that failed): never for ever.
CLOSE_TIMEOUT_SECONDS = 10.0


def load_frame(db: questdb.QuestDB, frame, table: str, symbols, at: str, batch_rows: int | None) -> None:
    """``db.dataframe()``: one frame loaded and committed. A pandas frame's Arrow-backed columns are first made whole
    where they are slices (``whole_arrow_columns``: the client's NumPy planner refuses them otherwise, and a user's
    code must do the same)."""
    if isinstance(frame, pd.DataFrame):
        frame = whole_arrow_columns(frame)
    extra = {"max_rows_per_batch": batch_rows} if batch_rows is not None else {}
    db.dataframe(frame, table_name=table, symbols=client_symbols(symbols), at=at, **extra)


@dataclass
class _Pool:
    """The wire's one ``QuestDB`` handle: opened by its first connection, closed by its last (a run's workers share
    it, as threads of a user's program share one)."""

    conf: str
    address: str
    refusal: object
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _handle: questdb.QuestDB | None = None
    _users: int = 0

    def lend(self) -> questdb.QuestDB:
        with self._lock:
            if self._handle is None:
                self._handle = self._open()
            self._users += 1
            return self._handle

    def _open(self) -> questdb.QuestDB:
        try:
            return questdb.connect(self.conf)
        except (QuestDBError, ValueError) as exc:
            text = one_line(exc)
            if "config" in text.lower() or isinstance(exc, ValueError):
                raise UsageError(f"bad client configuration {redact_conf(self.conf)!r}: {text}") from None
            raise RunError(f"cannot connect to {self.address}: {self.refusal(text)}") from None

    def give_back(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users > 0 or self._handle is None:
                return
            handle, self._handle = self._handle, None
        try:
            handle.close(timeout=CLOSE_TIMEOUT_SECONDS)
        except QuestDBError:
            pass  # the run's own error (if any) is the one worth reporting


@dataclass(frozen=True)
class QwpWire:
    """QWP to the HTTP port of ``settings`` (``--transport qwp``, or a ``ws::``/``wss::`` configuration string)."""

    settings: SenderSettings
    traits = QWP
    _pool: _Pool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pool", _Pool(self.conf_string(), self.settings.address, self.refusal))

    def conf_string(self) -> str:
        """The configuration string the handle connects with: ``--conf``, or one made of the settings, its row
        senders flushed only when the harness says (it times each flush)."""
        settings = self.settings
        if settings.conf is not None:
            return settings.conf
        pool = f"sender_pool_max={settings.sender_pool_max};" if settings.sender_pool_max is not None else ""
        return f"ws::addr={settings.address};auto_flush=off;{pool}"

    def connect(self) -> QwpConnection:
        return QwpConnection(self._pool.lend(), self._pool, self.settings.max_rows_per_batch)

    def needed_features(self) -> list[str]:
        return [QWP_FEATURE]

    def variants(self, into_sink: bool, workers: int) -> list[WireVariant]:
        """Larger batches of each ``dataframe()`` call, a pool of a connection per worker, each other kind of frame,
        and ILP over HTTP into the same server (none under a whole configuration string, which wins over them)."""
        settings = self.settings
        if settings.conf is not None or into_sink:
            return []
        found = []
        if settings.max_rows_per_batch is None:
            found.append(WireVariant(f"{SWEPT_BATCH_ROWS} rows per QWP batch", {"max_rows_per_batch": SWEPT_BATCH_ROWS},
                                     f"batch {SWEPT_BATCH_ROWS}"))
        if workers > 1 and settings.sender_pool_max is None:
            found.append(WireVariant(f"a pool of {workers} QWP connections", {"sender_pool_max": workers},
                                     f"pool of {workers}"))
        found += [WireVariant(f"{kind} frames", {"frame": kind}) for kind in FrameKind]
        found.append(WireVariant("ILP over http", {"transport": Transport.http, "frame": FrameKind.pandas,
                                                   "max_rows_per_batch": None, "sender_pool_max": None}))
        return found

    def code_conf(self) -> str:
        settings = self.settings
        if settings.conf is not None:
            return settings.conf
        pool = f"sender_pool_max={settings.sender_pool_max};" if settings.sender_pool_max is not None else ""
        return f"ws::addr={settings.address};{pool}"

    def sending_code(self, symbols, at: str) -> tuple[list[str], str, list[str]]:
        batch = self.settings.max_rows_per_batch
        extra = f", max_rows_per_batch={batch}" if batch is not None else ""
        return (["import questdb"], "with questdb.connect(CONF) as db:",
                [f"db.dataframe(df, table_name=TABLE, symbols={client_symbols(symbols)!r}, at={at!r}{extra})"])

    def refusal(self, failure: str) -> str:
        """A server without QWP answers its WebSocket upgrade with 404; one whose login the string lacks or gets
        wrong, with 401."""
        if "upgrade failed" in failure and "404" in failure:
            return f"{failure}: the server has no QWP endpoint (QWP needs {SINCE[QWP_FEATURE]})"
        if "401" in failure or "403" in failure or "authentication" in failure.lower():
            values = self.settings.conf_values
            whom = f"user {values['username']!r} of the configuration string" if "username" in values else \
                "no user (the configuration string has no username/password or token)"
            return f"{failure}: QuestDB refused the QWP login of {whom}"
        return failure

    def unseen_losses(self) -> str:
        return ""


class QwpConnection:
    """A worker's use of the wire's handle: frames loaded by ``dataframe()`` (each call committed), rows through a
    lease of its row senders. The client's errors are ``RunError``s of one line; a failed ``dataframe()`` that may
    have committed a prefix is a ``PrefixInDoubt``."""

    def __init__(self, db: questdb.QuestDB, pool: _Pool, batch_rows: int | None):
        self._db, self._pool, self._batch_rows = db, pool, batch_rows
        self._lease = None
        self._closed = False

    def frame(self, table: str, frame, symbols, at: str) -> None:
        try:
            load_frame(self._db, frame, table, symbols, at, self._batch_rows)
        except QuestDBError as exc:
            if exc.in_doubt:
                raise PrefixInDoubt(one_line(exc), len(frame)) from None
            raise RunError(one_line(exc)) from None

    def row(self, table: str, symbols: dict, columns: dict, at) -> None:
        with client_errors():
            if self._lease is None:
                self._lease = self._db.sender()
            self._lease.row(table, symbols=symbols, columns=columns, at=at)

    def write(self, data: bytes) -> None:
        raise UsageError("QWP takes frames and rows, not bytes")

    def commit(self) -> None:
        """Rows flushed and waited for until acknowledged (a rejection is the lease's to report); frames were
        committed as they were loaded. The bytes sent: the client does not tell."""
        if self._lease is None:
            return None
        with client_errors():
            self._lease.flush(wait=True)
            rejected = self._lease.poll_error()
        if rejected is not None:
            raise RunError(f"the server rejected rows: {one_line(rejected)}")
        return None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._lease is not None:
            try:
                self._lease.close(flush=False)
            except QuestDBError:
                pass  # the run's own error (if any) is the one worth reporting
        self._pool.give_back()
