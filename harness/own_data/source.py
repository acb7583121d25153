"""The user's data as a source of a run, behind the use-case interface (``harness.tsbs.use_case.UseCase``): one
table, its designated timestamp and symbol columns chosen, its schema the one the dtype audit
(``harness.own_data.audit``) says the client gives it, its chunks the data's pieces (``harness.own_data.files``).

Everything a run could refuse is refused when the source is made, before any server is asked: no rows, a
duplicate column name, a missing or ambiguous designated timestamp, nulls in it, a named column the data
lacks, a dtype the client refuses.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from harness.errors import UsageError
from harness.own_data.audit import (
    DEFAULT_PROTOCOL_VERSION,
    ColumnAudit,
    apply_fixes,
    audit_frame,
    first_refusal,
    is_string_like,
)
from harness.own_data.frames import HEAD_ROWS, DataFrames
from harness.tsbs.schema import PARTITION_BY, TableSchema

NAME = "data"
# --symbols auto takes a string column as a symbol when the first piece (HEAD_ROWS rows) holds at most one
# distinct value per this many rows: a tag repeated across rows, not free text.
AUTO_SYMBOL_ROWS_PER_VALUE = 100


def default_table(data: DataFrames) -> str:
    """The table a file fills unless --table names one: its name without the suffix, made a safe name."""
    stem = Path(data.name).stem if data.name != "DataFrame" else "dataframe"
    return re.sub(r"[^0-9A-Za-z_]", "_", stem) or "data"


@dataclass
class DataSource:
    """The user's data as one table. ``symbols``: None (the client's default: categorical columns), "auto"
    (those and low-cardinality string columns) or the columns named. ``convert_dtypes``: sent with the audit's
    conversions (``apply_fixes``), as the user's code would make them: strings a file gives as Python objects read
    as Arrow strings instead, the other conversions made on each piece as it is read; frames in memory converted
    once, before the run. A variant of the same data (another protocol version, the conversions) shares the data
    already opened: ``dataclasses.replace(source, ...)``."""

    data: DataFrames
    table_name: str | None = None
    at: str | None = None
    symbols: str | tuple[str, ...] | None = None
    convert_dtypes: bool = False
    # The ILP protocol version the run sends with: the QuestDB type of a nanosecond timestamp depends on it.
    protocol_version: int = DEFAULT_PROTOCOL_VERSION
    # Whether a column the client refuses is refused here (a run); without, ``refusal`` says it (the audit).
    strict: bool = True
    refusal: str | None = field(init=False, default=None)
    audits: list[ColumnAudit] = field(init=False)
    # What is sent: the audit of the pieces as sent (after the conversions, with --convert-dtypes).
    sent_audits: list[ColumnAudit] = field(init=False)
    # With --convert-dtypes: the data as read for sending, the audit whose conversions each piece still needs
    # (None: none), and the seconds converting frames in memory took, once, before the run's phases.
    sent_data: DataFrames = field(init=False)
    piece_audits: list[ColumnAudit] | None = field(init=False, default=None)
    conversion_seconds: float = field(init=False, default=0.0)
    symbol_columns: tuple[str, ...] = field(init=False)

    # The use-case interface: what the rest of a run asks of a source.
    name = NAME
    measurements_per_host = 1
    default_chunk_rows = 10_000
    renamable_table = True
    row_api = False
    # --exactly-once deduplicates on the designated timestamp and the symbol columns: rows of the data equal
    # in all of them are one row then (the count the run checks is the data's rows).
    unique_keys = True
    known_schemas = False  # a table of the user's data's name is the user's
    in_time_order = True  # sent in the data's own order; never sorted
    bytes_per_host = 0
    query_types: tuple[str, ...] = ()
    query_module = ""

    def __post_init__(self) -> None:
        data = self.data
        columns = [name for name, _, _ in data.columns()]
        repeated = [name for name, count in Counter(columns).items() if count > 1]
        if repeated:
            raise UsageError(f"{data.name}: the column name {repeated[0]!r} is used {Counter(columns)[repeated[0]]} "
                             f"times: QuestDB columns need distinct names")
        rows = data.rows()
        if not rows:
            raise UsageError(f"{data.name}: no rows to send")
        self.table_name = self.table_name or default_table(data)
        self.at = self._designated(columns)
        if nulls := data.nulls(self.at):
            fix = "" if data.is_file() else f" (fill or drop them: df = df.dropna(subset=[{self.at!r}]))"
            raise UsageError(f"{data.name}: the designated timestamp {self.at!r} has {nulls} nulls: every row needs "
                             f"its timestamp{fix}")
        if (early := data.first_before_epoch(self.at)) is not None:
            row, value = early
            raise UsageError(f"{data.name}: the designated timestamp {self.at!r} holds {value} at row {row}: QuestDB's "
                             f"designated timestamps start at 1970-01-01 (the client refuses an earlier one)")
        head = data.head(HEAD_ROWS)
        if isinstance(self.symbols, tuple):
            self.symbols = tuple(data.sent_name(name) for name in self.symbols)
            for name in self.symbols:
                if name not in columns:
                    raise UsageError(f"--symbols: {data.name} has no column {name!r} (columns: {', '.join(columns)})")
        self.symbol_columns = self._symbols(head)
        self.audits = self._audit(head)
        self.sent_data, self.sent_audits = data, self.audits
        if self.convert_dtypes:
            self._convert()
        # Converted, a refused column may be accepted: what counts is what is sent.
        if refusal := first_refusal(self.sent_audits, data.is_file()):
            self.refusal = f"{data.name}: {refusal}"
            if self.strict:
                raise UsageError(self.refusal)
        # The frames in flight: a chunk's row, as pandas holds it (strings as Python objects), with margin.
        self.bytes_per_held_row = max(64, int(head.memory_usage(deep=True, index=False).sum() / max(len(head), 1)))
        self.bytes_per_chunk_row = 2 * self.bytes_per_held_row

    def _audit(self, frame: pd.DataFrame) -> list[ColumnAudit]:
        return audit_frame(frame, self.at, self.symbol_columns, self.protocol_version)

    def _convert(self) -> None:
        """The data as sent with the audit's conversions: a file read with its strings as Arrow strings and
        each piece converted as it is read; frames in memory converted once, now."""
        started = time.perf_counter()
        self.sent_data, per_piece = self.data.converted(lambda frame: apply_fixes(frame, self.audits))
        self.conversion_seconds = 0.0 if per_piece else time.perf_counter() - started
        head = self.sent_data.head(HEAD_ROWS)
        if per_piece:
            self.piece_audits = self._audit(head)
            head = apply_fixes(head, self.piece_audits)
        self.sent_audits = self._audit(head)

    def _designated(self, columns: list[str]) -> str:
        if self.at is not None:
            self.at = self.data.sent_name(self.at)
            if self.at not in columns:
                raise UsageError(f"--at: {self.data.name} has no column {self.at!r} (columns: {', '.join(columns)})")
            return self.at
        found = self.data.timestamp_columns()
        if len(found) == 1:
            return found[0]
        if not found:
            raise UsageError(f"{self.data.name}: no timestamp column to be the designated timestamp: name it with "
                             f"--at COLUMN (columns: {', '.join(columns)})")
        raise UsageError(f"{self.data.name}: {len(found)} timestamp columns ({', '.join(found)}): name the designated "
                         f"one with --at")

    def _symbols(self, head: pd.DataFrame) -> tuple[str, ...]:
        """The columns sent as symbols (None: the client's own choice, its categorical columns)."""
        categorical = tuple(name for name in head.columns
                            if name != self.at and isinstance(head[name].dtype, pd.CategoricalDtype))
        if self.symbols is None:
            return categorical
        if self.symbols == "auto":
            limit = max(1, len(head) // AUTO_SYMBOL_ROWS_PER_VALUE)
            repeated = tuple(name for name in head.columns
                             if name != self.at and name not in categorical and is_string_like(head[name])
                             and head[name].nunique() <= limit)
            return categorical + repeated
        return tuple(self.symbols)

    @property
    def dataframe_at(self) -> str:
        return self.at

    @property
    def dataframe_symbols(self) -> tuple[str, ...]:
        """What the run passes ``dataframe(symbols=...)``: the symbol columns by name (by default the client's
        own choice on the data as read, its categorical columns; named, so that a column the conversions make
        categorical stays the string column the table has)."""
        return self.symbol_columns

    def tables(self, table: str | None = None) -> tuple[str, ...]:
        return (table or self.table_name,)

    def schemas(self, fields=None, table: str | None = None) -> list[TableSchema]:
        by_name = {audit.column: audit for audit in self.sent_audits}
        return [TableSchema(table or self.table_name, tags=self.symbol_columns,
                            fields=tuple((audit.column, audit.questdb_type) for audit in self.sent_audits
                                         if audit.role == "field"),
                            series_tags=self.symbol_columns, timestamp=self.at,
                            timestamp_type=by_name[self.at].questdb_type, partition_by=PARTITION_BY)]

    def chunks(self, spec=None, chunk_rows: int = 10_000, fields=None, symbol_dtype=None, table: str | None = None,
               first_chunk_rows: int | None = None) -> Iterator[dict[str, pd.DataFrame]]:
        name = table or self.table_name
        for frame in self.sent_data.frames(chunk_rows):
            yield {name: apply_fixes(frame, self.piece_audits) if self.piece_audits is not None else frame}

    def table_rows(self, spec=None, table: str | None = None) -> dict[str, int]:
        return {table or self.table_name: self.data.rows()}

    def text_jobs(self, *args, **kwargs) -> None:
        return None

    def go_floats(self, fields=None) -> bool:
        return False
