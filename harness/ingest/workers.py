"""What one thread of a phase does with each chunk (``harness.ingest.phase_loop.Worker``): serialize it into the
client's buffer (``SerializeWorker``: the bytes counted, not kept), or send it over the run's wire and commit it
(``SendWorker``: each commit timed; exactly-once, a chunk whose commit failed sent again on a new connection). A chunk
goes to the client as DataFrames (``dataframe()``), or row by row as a user without the DataFrame API writes it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pandas as pd
from questdb import TimestampNanos

from harness.errors import RunError
from harness.frames.convert import as_pandas
from harness.ingest.ilp import TSBS_COLUMNS, Chunk, FrameColumns, append_frame, new_buffer
from harness.ingest.phase_loop import Worker
from harness.ingest.wire.interface import Connection, PrefixInDoubt, Wire
from harness.telemetry.phase import PhaseProgress
from harness.tsbs.schema import TIMESTAMP_COLUMN


def _rows_of(chunk: pd.DataFrame, op: str) -> Iterator[tuple[dict, dict, TimestampNanos]]:
    """Row-by-row access as a Python user without the dataframe API would write it: the frame's numeric
    columns are its fields, the timestamp its designated one, every other column a tag."""
    names = [name for name in chunk.columns if name != TIMESTAMP_COLUMN]
    fields = [name for name in names if pd.api.types.is_numeric_dtype(chunk[name].dtype)]
    tags = [name for name in names if name not in fields]
    if op == "iterrows":
        for _, row in chunk.iterrows():
            yield (
                {tag: row[tag] for tag in tags},
                {name: _python_number(row[name]) for name in fields},
                TimestampNanos(row[TIMESTAMP_COLUMN].value),
            )
    else:
        positions = {name: position for position, name in enumerate(chunk.columns)}
        tag_at, field_at = [positions[tag] for tag in tags], [positions[name] for name in fields]
        timestamp_at = positions[TIMESTAMP_COLUMN]
        for row in chunk.itertuples(index=False, name=None):
            yield (
                {tag: row[position] for tag, position in zip(tags, tag_at)},
                {name: _python_number(row[position]) for name, position in zip(fields, field_at)},
                TimestampNanos(row[timestamp_at].value),
            )


def _python_number(value):
    # The row API takes Python int/float; numpy int64 is not an int subclass.
    return value.item() if hasattr(value, "item") else value


class SerializeWorker(Worker):
    """Serializes into an in-memory buffer, cleared after every chunk (bytes counted, not kept)."""

    def __init__(self, op: str, protocol_version: int, columns: FrameColumns = TSBS_COLUMNS):
        self.op = op
        self.buffer = new_buffer(protocol_version)
        self.columns = columns

    def process(self, chunk: Chunk) -> int:
        for table, frame in chunk.items():
            if self.op == "dataframe":
                append_frame(self.buffer, as_pandas(frame), table, *self.columns)
            else:
                for symbols, columns, at in _rows_of(frame, self.op):
                    self.buffer.row(table, symbols=symbols, columns=columns, at=at)
        nbytes = len(self.buffer)
        self.buffer.clear()
        return nbytes


class SendWorker(Worker):
    """Sends through its own connection of the run's wire and commits after every chunk, timing each commit.

    With ``resend_for`` seconds (exactly-once, over a wire whose commit the server answers, into a deduplicating
    table), a chunk whose commit failed is sent again on a new connection until it succeeds or that long has
    passed since the first failure: each commit is one transaction, so a chunk either committed or not, and one
    sent twice replaces itself. Re-sent chunks and the seconds spent without a connection are counted."""

    # Between two attempts while the server is away: short against a restart, long against a busy loop.
    RESEND_PAUSE_SECONDS = 0.5

    def __init__(self, op: str, wire: Wire, progress: PhaseProgress, index: int, resend_for: float | None = None,
                 columns: FrameColumns = TSBS_COLUMNS):
        self.op = op
        self.columns = columns
        self.wire = wire
        self.progress = progress
        self.index = index
        self.resend_for = resend_for
        self.connection: Connection | None = wire.connect()
        self.address = wire.settings.address
        self._flush_started: float | None = None

    def _send(self, chunk: Chunk) -> int:
        for table, frame in chunk.items():
            if self.op == "dataframe":
                symbols, at = self.columns
                self.connection.frame(table, frame, symbols, at)
            else:
                for symbols, columns, at in _rows_of(frame, self.op):
                    self.connection.row(table, symbols, columns, at)
        started = time.perf_counter()
        self._flush_started = time.monotonic()
        try:
            nbytes = self.connection.commit()
        finally:
            self._flush_started = None
        self.progress.flushed(self.index, time.perf_counter() - started)
        return nbytes or 0

    def flushing_since(self) -> float | None:
        return self._flush_started

    def process(self, chunk: Chunk) -> int:
        first_failure = None
        while True:
            try:
                if self.connection is None:
                    self.connection = self.wire.connect()
                nbytes = self._send(chunk)
                break
            except RunError as exc:
                if self.resend_for is None:
                    line = f"sending to {self.address} failed: {self.wire.refusal(str(exc))}"
                    if isinstance(exc, PrefixInDoubt):
                        raise PrefixInDoubt(line, exc.rows) from None
                    raise RunError(line) from None
                now = time.monotonic()
                first_failure = first_failure or now
                if now - first_failure > self.resend_for:
                    raise RunError(f"sending to {self.address} failed for {self.resend_for:g}s "
                                   f"(--retry-timeout): {self.wire.refusal(str(exc))}") from None
                self.close()
                time.sleep(self.RESEND_PAUSE_SECONDS)
                self.progress.resent(self.index)
        if first_failure is not None:
            self.progress.waited(time.monotonic() - first_failure)
        return nbytes

    def close(self) -> None:
        if self.connection is not None:
            connection, self.connection = self.connection, None
            connection.close()
