"""The user's data as a source of a run (``harness.source.Source``): one
table, its designated timestamp and symbol columns chosen, its schema the one the dtype audit
(``harness.own_data.audit``) says the client gives it by the run's way in (``SendPath``: ILP, or QWP with the kind
of frame it is handed), its chunks the data's pieces (``harness.own_data.files``).

Everything a run could refuse is refused when the source is made, before any server is asked: no rows, a
duplicate column name, a missing or ambiguous designated timestamp, nulls in it, a named column the data
lacks, a dtype the run's way in refuses.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from harness.errors import ParameterError, UsageError, named
from harness.frames.kinds import FrameKind
from harness.own_data.audit import (
    ColumnAudit,
    SendPath,
    apply_fixes,
    audit_frame,
    audit_table,
    beside,
    first_refusal,
    is_string_like,
    qwp_audit_frame,
)
from harness.own_data.choices import PARTITION_UNITS_SAID, partition_unit
from harness.own_data.code import ReadingCode, reading_code
from harness.own_data.files import Reading, open_data
from harness.own_data.frames import HEAD_ROWS, DataFrames
from harness.own_data.partitioning import (
    MapLimit,
    Partitioning,
    TimeSpan,
    choose,
    given,
    map_limit,
    unspanned,
    utc,
)
from harness.own_data.qwp_dtypes import is_arrow_backed
from harness.tsbs.params import DATA_SET_PARAMETERS
from harness.tsbs.schema import TableSchema

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
    once, before the run. ``path``: the run's way in (ILP under a protocol version, or QWP handed frames of a kind),
    which judges the columns (``refusal``) and types the table (``schemas``); the audit holds both ways' verdicts
    (``ColumnAudit.qwp`` beside ILP's). A variant of the same data (another way in, the conversions) shares the
    data already opened: ``dataclasses.replace(source, ...)``."""

    data: DataFrames
    table_name: str | None = None
    at: str | None = None
    symbols: str | tuple[str, ...] | None = None
    convert_dtypes: bool = False
    # How the run sends: ILP under a protocol version (the QuestDB type of a nanosecond timestamp depends on it), or
    # QWP handed frames of a kind.
    path: SendPath = SendPath()
    # Whether a column the run's way in refuses is refused here (a run); without, ``refusal`` says it (the audit).
    strict: bool = True
    # The table's partitioning as the user names it (None: chosen from the data, ``harness.own_data.partitioning``),
    # and the server's limit on mappings that bounds it (None: this machine's).
    partition_by: str | None = None
    map_limit: MapLimit | None = None
    partitioning: Partitioning = field(init=False)
    refusal: str | None = field(init=False, default=None)
    # ILP's audit of each column, QWP's beside it (``ColumnAudit.qwp``).
    audits: list[ColumnAudit] = field(init=False)
    # What is sent: the audit of the pieces as sent (after the conversions, with --convert-dtypes).
    sent_audits: list[ColumnAudit] = field(init=False)
    # With --convert-dtypes: the data as read for sending, the audit whose conversions each piece still needs
    # (None: none), and the seconds converting frames in memory took, once, before the run's phases.
    sent_data: DataFrames = field(init=False)
    piece_audits: list[ColumnAudit] | None = field(init=False, default=None)
    conversion_seconds: float = field(init=False, default=0.0)
    symbol_columns: tuple[str, ...] = field(init=False)

    # What a run asks of a source (``harness.source.Source``).
    name = NAME
    renamable_table = True
    row_api = False
    # --exactly-once deduplicates on the designated timestamp and the symbol columns: rows of the data equal
    # in all of them are one row then (the count the run checks is the data's rows).
    unique_keys = True
    known_schemas = False  # a table of the user's data's name is the user's
    held_whole = False  # read in bounded pieces while sending, never whole
    interleaved_groups = False  # one client sends it (--workers N in parallel)
    sink_of_its_own = True

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
                    raise ParameterError("symbols", f"{data.name} has no column {name!r} (columns: "
                                                    f"{', '.join(columns)})")
        self.symbol_columns = self._symbols(head)
        self.audits = self._audit(head)
        self.sent_data, self.sent_audits = data, self.audits
        if self.convert_dtypes:
            self._convert()
        # Converted, a refused column may be accepted: what counts is what is sent, by the run's way in.
        if refusal := first_refusal(self.judged(self.sent_audits), self._convertible):
            self.refusal = f"{data.name}: {refusal}"
            if self.strict:
                raise UsageError(self.refusal)
        self.partitioning = self._partitioning(rows)
        # The frames in flight: a chunk's row, as pandas holds it (strings as Python objects), with margin.
        self.bytes_per_held_row = max(64, int(head.memory_usage(deep=True, index=False).sum() / max(len(head), 1)))
        self.bytes_per_chunk_row = 2 * self.bytes_per_held_row

    def _partitioning(self, rows: int) -> Partitioning:
        """The user's --partition-by, else the unit the data's span, rows and width choose."""
        unit = None if self.partition_by is None else partition_unit(self.partition_by)
        if self.partition_by is not None and unit is None:
            raise ParameterError("partition_by", f"{PARTITION_UNITS_SAID}, got {self.partition_by!r}")
        limit = self.map_limit or map_limit(local=True)
        found = self.data.time_span(self.at)
        if found is None:  # not timestamps (the audit refuses it; inspect shows it)
            return unspanned(unit, self.at, limit)
        span = TimeSpan(utc(found[0]), utc(found[1]), rows, f"the least and greatest {self.at} of its {rows:,} rows")
        types = [sql_type for _, sql_type in self._table(self.table_name, "NONE").columns]
        return choose(span, types, limit) if unit is None else given(unit, span, types, limit)

    def _audit(self, frame: pd.DataFrame, data: DataFrames | None = None) -> list[ColumnAudit]:
        """ILP's audit of ``frame`` (a head of the data as pandas gives it), QWP's beside it: of the same head, or where
        QWP is handed another kind of frame, of the first piece of ``data`` (default: the data) read as that kind."""
        kind = self.path.frame
        handed = frame if kind == FrameKind.pandas else next(iter((data or self.data).pieces(HEAD_ROWS, kind)))
        return beside(audit_frame(frame, self.at, self.symbol_columns, self.path.protocol_version),
                      qwp_audit_frame(handed, self.at, self.symbol_columns))

    def judged(self, audits: list[ColumnAudit]) -> list[ColumnAudit]:
        """``audits`` as the run's way in says them: ILP's, or QWP's."""
        return [audit.qwp for audit in audits] if self.path.qwp else audits

    @property
    def _convertible(self) -> bool:
        """Whether the fixes the run's way in proposes are made by --convert-dtypes (a file's pandas frames)."""
        return self.data.is_file() and (not self.path.qwp or self.path.frame == FrameKind.pandas)

    def _convert(self) -> None:
        """The data as sent with the conversions the run's way in proposes: a file read with its strings as Arrow
        strings and each piece converted as it is read; frames in memory converted once, now."""
        started = time.perf_counter()
        self.sent_data, per_piece = self.data.converted(lambda frame: apply_fixes(frame, self.judged(self.audits)))
        self.conversion_seconds = 0.0 if per_piece else time.perf_counter() - started
        head = self.sent_data.head(HEAD_ROWS)
        if per_piece:
            self.piece_audits = self._audit(head, self.sent_data)
            head = apply_fixes(head, self.judged(self.piece_audits))
        self.sent_audits = self._audit(head, self.sent_data)

    def _designated(self, columns: list[str]) -> str:
        if self.at is not None:
            self.at = self.data.sent_name(self.at)
            if self.at not in columns:
                raise ParameterError("at", f"{self.data.name} has no column {self.at!r} (columns: "
                                           f"{', '.join(columns)})")
            return self.at
        found = self.data.timestamp_columns()
        if len(found) == 1:
            return found[0]
        if (index := self.data.index_timestamp()) in found:
            return index
        if not found:
            raise UsageError(f"{self.data.name}: no timestamp column to be the designated timestamp: name it with "
                             f"{named('at')} COLUMN (columns: {', '.join(columns)})")
        raise UsageError(f"{self.data.name}: {len(found)} timestamp columns ({', '.join(found)}): name the designated "
                         f"one with {named('at')}")

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
        """The table as the run's way in makes it of the data as sent; a column the client leaves out (every value
        null) is left out."""
        return [self._table(table or self.table_name, self.partitioning.by)]

    def _table(self, table: str, partition_by: str) -> TableSchema:
        sent = self.judged(self.sent_audits)
        by_name = {audit.column: audit for audit in sent}
        return TableSchema(table, tags=self.symbol_columns,
                           fields=tuple((audit.column, audit.questdb_type) for audit in sent
                                        if audit.role == "field" and audit.questdb_type is not None),
                           series_tags=self.symbol_columns, timestamp=self.at,
                           timestamp_type=by_name[self.at].questdb_type, partition_by=partition_by)

    def partitioning_record(self) -> dict:
        return self.partitioning.described()

    def chunks(self, spec=None, chunk_rows: int = 10_000, fields=None, symbol_dtype=None, table: str | None = None,
               first_chunk_rows: int | None = None) -> Iterator[dict[str, pd.DataFrame]]:
        name = table or self.table_name
        for frame in self.sent_data.frames(chunk_rows):
            yield {name: apply_fixes(frame, self.judged(self.piece_audits)) if self.piece_audits is not None else frame}

    def chunks_as(self, frame: FrameKind, spec=None, chunk_rows: int = 10_000, fields=None, symbol_dtype=None,
                  table: str | None = None) -> Iterator[dict[str, object]]:
        """Read straight into ``frame``'s kind: a file's record batches re-cut, with no pandas step for Arrow or
        Polars; frames in memory sliced as they are where they are of that kind."""
        if frame == FrameKind.pandas:
            yield from self.chunks(spec, chunk_rows, table=table)
            return
        name = table or self.table_name
        for piece in self.sent_data.pieces(chunk_rows, frame):
            yield {name: piece}

    def table_rows(self, spec=None, table: str | None = None) -> dict[str, int]:
        return {table or self.table_name: self.data.rows()}

    @property
    def conversions(self) -> tuple[str, ...]:
        return tuple(audit.fix for audit in self.judged(self.audits) if audit.fix)

    def rows(self, spec=None) -> int:
        return self.data.rows()

    def memory_needed(self, spec, chunk_rows: int) -> int:
        return chunk_rows * self.bytes_per_chunk_row

    def seed(self, spec) -> None:
        return None

    def mode(self, spec, kind: str, threads: str, op: str, fields) -> str:
        return f"data-{self.table_name}-{kind}-{threads}"  # the table names the data; field types and ops do not apply

    def variant(self, convert_dtypes: bool, path: SendPath) -> DataSource:
        """The same data, already opened, sent with the audit's conversions or not, by another way in (ILP under
        another protocol version, QWP): audited anew, unless nothing changes."""
        if (self.convert_dtypes, self.path) == (convert_dtypes, path):
            return self
        return dataclasses.replace(self, convert_dtypes=convert_dtypes, path=path)

    def describe(self) -> list[str]:
        """The data, its table, designated timestamp and symbols; how it was read; its dtype audit, ILP's and QWP's
        side by side, and which of them judges the run."""
        other = SendPath(self.path.protocol_version, not self.path.qwp, self.path.frame)
        lines = [f"{self.data.name}: {self.data.rows()} rows into table {self.table_name}, designated timestamp "
                 f"{self.at}; symbols: {', '.join(self.symbol_columns) or 'none'}; columns judged and the table typed "
                 f"by {self.path.described()}, {other.described()} beside", *self.data.reading_lines(),
                 audit_table(self.audits, self.data.is_file(), self.data.is_file()
                             and self.path.frame == FrameKind.pandas),
                 f"Table {self.table_name} {self.partitioning.line}."]
        if self.partitioning.warning:
            lines.append(f"warning: {self.partitioning.warning}.")
        if self.conversion_seconds:
            lines.append(f"Converted the DataFrames' dtypes once, before sending: {self.conversion_seconds:.2f}s.")
        if self.path.qwp and self.path.frame == FrameKind.pandas and self._pieced_arrow_columns():
            lines.append(f"QWP's NumPy planner takes an Arrow-backed column only as one contiguous array: each chunk's "
                         f"{', '.join(self._pieced_arrow_columns())} copied whole while sending, as a user's code must.")
        return lines

    def _pieced_arrow_columns(self) -> list[str]:
        """The Arrow-backed columns of a frame that also holds NumPy ones (which QWP's NumPy planner takes): the
        columns a chunk copies whole over QWP."""
        arrow = [is_arrow_backed(dtype) for dtype in self.sent_data.head(1).dtypes]
        return [] if all(arrow) else [name for name, backed in zip(self.sent_data.head(1).columns, arrow) if backed]

    def record_parameters(self, spec, parameters: dict) -> dict:
        """The run's flags less those of a TSBS data set, and what was sent: the data's rows, table, columns and
        dtype audit, and how it was read (it is always made into chunks while sending)."""
        values = {name: value for name, value in parameters.items() if name not in DATA_SET_PARAMETERS}
        values.update(use_case=self.name, data=self.data.name, row_count=self.data.rows(), stream=True,
                      table=self.table_name, at=self.at, symbols=list(self.symbol_columns),
                      audit=[audit.stored() for audit in self.audits],
                      conversion_seconds=round(self.conversion_seconds, 3))
        if reading := self.data.described():
            values["reading"] = reading
        return values

    def reading_code(self, frame: FrameKind) -> ReadingCode:
        """How a script reads the data as the run did, into frames of kind ``frame``: with the conversions of the
        run's way in."""
        pieces = self.judged(self.piece_audits) if self.piece_audits is not None else None
        return reading_code(self.data, self.convert_dtypes, self.judged(self.audits), pieces, frame)


def data_source(data, table: str | None = None, at: str | None = None, symbols: str | tuple[str, ...] | None = None,
                convert_dtypes: bool = False, strict: bool = True, object_strings: bool = False,
                path: SendPath | None = None, reading: Reading | None = None, partition_by: str | None = None,
                limit: MapLimit | None = None) -> DataSource:
    """The user's ``data`` as a source: a path (read as ``reading`` says: timestamps, dialect, names;
    ``object_strings``: its strings as Python objects, as pandas 2 reads them), a DataFrame or DataFrames (or the
    ``DataFrames`` already opened); its ``table``, designated timestamp ``at``, ``symbols``, and whether each piece
    is sent with the audit's dtype conversions. Without ``strict`` a column the run's way in refuses is left to the
    source's ``refusal`` rather than raised (the audit shows it); ``path``: how the run sends (default: ILP, protocol
    version 2); ``partition_by``: the table's unit (None: chosen from the data, bounded by the server's mappings,
    ``limit``: default this machine's)."""
    return DataSource(open_data(data, object_strings, reading=reading), table, at, symbols, convert_dtypes,
                      path=path or SendPath(), strict=strict, partition_by=partition_by, map_limit=limit)
