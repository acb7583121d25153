"""The dtype audit of a user's DataFrame: per column, what ILP's ``Sender.dataframe()`` does with it
(``harness.own_data.client_dtypes``: takes its memory as it is, exports it to Arrow first, walks its Python
objects holding the GIL, or refuses it), the role it plays (designated timestamp, symbol, field), the column type
QuestDB creates for it, and one line of pandas that makes it accepted or faster
(``harness.own_data.dtype_conversions``); whether the whole frame lets worker threads run in parallel; beside it,
what QWP's ``QuestDB.dataframe()`` does with the column of the frame it is handed, pandas, pyarrow or Polars
(``harness.own_data.qwp_dtypes``: takes it, and the type it lands as, or refuses it, and the fix); which of the two
judges a run (``SendPath``); the audit's conversions applied to a frame.

The client checks a column in its order: its source first, then the designated timestamp, then the symbols, then
the ILP mapping and the values (``client_dtypes.Take.early``); the audit refuses a column as the client would,
its first refusal in one line.

``audit_table`` formats the audit as a plain text table with a formatter of its own: this module is in
the domain layer and may not import ``harness.report``'s ``plain_table``, which it mirrors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa

from harness.errors import UsageError, named
from harness.frames.convert import column_of, with_column
from harness.frames.kinds import FrameKind
from harness.own_data.client_dtypes import OBJECTS, REFUSED, SKIPPED, client_take
from harness.own_data.dtype_conversions import (
    STRING_CATEGORIES,
    TO_ARROW_STRING,
    TO_CATEGORY,
    TO_TIMESTAMPS,
    TO_UTC_MICROS,
    Conversion,
)
from harness.own_data.qwp_dtypes import qwp_columns

# What a column is in the table (``ColumnAudit.role``).
DESIGNATED = "designated timestamp"
SYMBOL = "symbol"
FIELD = "field"

# The protocol version the harness's senders use unless told otherwise (binary doubles, arrays, ns).
DEFAULT_PROTOCOL_VERSION = 2


@dataclass(frozen=True)
class SendPath:
    """Which way into QuestDB a run's data takes, which judges its columns and types its table: ILP's
    ``Sender.dataframe()`` under ``protocol_version``, or (``qwp``) QWP's ``QuestDB.dataframe()``, handed frames of
    kind ``frame`` (ILP is handed pandas frames whatever the kind: the run converts them)."""

    protocol_version: int = DEFAULT_PROTOCOL_VERSION
    qwp: bool = False
    frame: FrameKind = FrameKind.pandas

    def described(self) -> str:
        if self.qwp:
            return f"QWP (QuestDB.dataframe() of {self.frame} frames)"
        return f"ILP (Sender.dataframe(), protocol version {self.protocol_version})"


@dataclass(frozen=True)
class ColumnAudit:
    """One column: what the client does with it (``path``), the type QuestDB creates (``questdb_type``; for
    the designated timestamp, its type), whether serializing it lets other threads run (``parallel``; None: not
    established, QWP's), the line that makes it accepted or faster (``fix``), why it is refused (``refusal``) and
    the words of the error the client (or, for decimals under protocol 3, the server) raises (``client_error``);
    what lands otherwise than it was sent (``lands``, QWP's). ``qwp``: beside ILP's audit of the column, QWP's."""

    column: str
    dtype: str
    role: str
    path: str
    questdb_type: str | None
    parallel: bool | None
    fix: str | None
    refusal: str | None
    client_error: str | None = None
    conversion: Conversion | None = field(default=None, repr=False, compare=False)
    lands: str | None = None
    qwp: ColumnAudit | None = field(default=None, repr=False, compare=False)

    @property
    def accepted(self) -> bool:
        return self.refusal is None

    def stored(self) -> dict:
        """The audit of the column as a record keeps it (the conversion by its line, ``fix``), QWP's beside."""
        stored = {name: getattr(self, name) for name in ("column", "dtype", "role", "path", "questdb_type",
                                                         "parallel", "fix", "refusal")}
        if self.qwp is not None:
            stored["qwp"] = {name: getattr(self.qwp, name) for name in ("dtype", "path", "questdb_type", "lands",
                                                                        "fix", "refusal")}
        return stored


def _audit_column(column: str, series: pd.Series, role: str, protocol_version: int) -> ColumnAudit:
    """The client's checks in its order: the source, then the designated timestamp, then the symbols, then
    the ILP mapping and the values (``Take.early``)."""
    take = client_take(series, protocol_version)
    dtype = str(series.dtype)

    def refused(refusal: str, client_error: str, conversion: Conversion | None) -> ColumnAudit:
        # The fix must suit the role: a timestamp for the designated one, strings for a symbol.
        if role == DESIGNATED and conversion not in TO_TIMESTAMPS:
            parsable = take.string or take.field_type == "TIMESTAMP"
            conversion = TO_UTC_MICROS if parsable else None
        elif role == SYMBOL and conversion not in (None, STRING_CATEGORIES):
            conversion = TO_ARROW_STRING
        return ColumnAudit(column, dtype, role, REFUSED, None, False, conversion and conversion.line(column),
                           refusal, client_error, conversion)

    if take.early:
        return refused(take.refusal, take.client_error, take.conversion)
    if role == DESIGNATED and take.at_type is None:
        return refused("the questdb client takes as the designated timestamp only datetime64 (any unit), "
                       "tz-aware datetime64 of unit ns or us, or timestamp[ns|us][pyarrow]", "Bad argument `at`",
                       take.conversion)
    if role == SYMBOL and not take.string:
        return refused("the questdb client takes symbols from string columns only", "Must be a strings column",
                       None if take.path == SKIPPED else TO_ARROW_STRING)
    if take.refusal is not None:
        return refused(take.refusal, take.client_error, take.conversion)
    if role == DESIGNATED:
        return ColumnAudit(column, dtype, role, take.path, take.at_type, True, None, None)
    questdb_type = "SYMBOL" if role == SYMBOL else take.field_type
    faster = None if take.path != OBJECTS else TO_CATEGORY if role == SYMBOL else take.conversion
    return ColumnAudit(column, dtype, role, take.path, questdb_type, take.path != OBJECTS,
                       faster and faster.line(column), None, conversion=faster)


def audit_frame(frame: pd.DataFrame, at: str, symbols: Collection[str] | str,
                protocol_version: int = DEFAULT_PROTOCOL_VERSION) -> list[ColumnAudit]:
    """Every column of ``frame`` in order, as ``Sender.dataframe(frame, at=at, symbols=symbols)`` takes it
    under ILP ``protocol_version`` (1, 2 or 3). ``symbols`` lists the symbol columns, or is ``"auto"`` (the
    client's default: every ``category`` column is a symbol). Values matter where the client looks at them:
    nulls in booleans, uint64 above 2^63-1, the kinds of values in an object column."""
    names = [str(name) for name in frame.columns]
    auto = isinstance(symbols, str)
    if auto and symbols != "auto":
        raise UsageError(f"symbols: a list of column names or 'auto', not {symbols!r}")
    named_symbols = set() if auto else set(symbols)
    if at not in names:
        raise UsageError(f"the designated timestamp column {at!r} is not in the frame (columns: {', '.join(names)})")
    missing = sorted(named_symbols - set(names))
    if missing:
        raise UsageError(f"symbol column(s) {', '.join(map(repr, missing))} not in the frame (columns: "
                         f"{', '.join(names)})")
    if at in named_symbols:
        raise UsageError(f"column {at!r} cannot be both the designated timestamp and a symbol")
    audits = []
    for position, name in enumerate(names):
        series = frame.iloc[:, position]
        if name == at:
            role = DESIGNATED
        elif name in named_symbols or (auto and isinstance(series.dtype, pd.CategoricalDtype)):
            role = SYMBOL
        else:
            role = FIELD
        audits.append(_audit_column(name, series, role, protocol_version))
    return audits


def _qwp_column(column: str, dtype: str, role: str, take) -> ColumnAudit:
    """QWP's checks in the client's order: the source (an ``early`` refusal), then the designated timestamp, then
    the symbols, then the values."""

    def refused(refusal: str, client_error: str, conversion: Conversion | None) -> ColumnAudit:
        return ColumnAudit(column, dtype, role, REFUSED, None, None, conversion and conversion.line(column), refusal,
                           client_error, conversion)

    if take.early:
        return refused(take.refusal, take.client_error, take.conversion)
    if role == DESIGNATED:
        if take.at_type is None:
            return refused("QWP takes as the designated timestamp only timestamps (datetime64 or an Arrow timestamp, "
                           "of any unit)", take.at_error, take.at_conversion)
        if take.nulls:
            return refused("QWP refuses nulls in the designated timestamp", take.at_null_error, None)
        return ColumnAudit(column, dtype, role, take.route, take.at_type, None, None, None)
    if role == SYMBOL and not take.symbol:
        return refused(take.symbol_refusal, take.symbol_error, take.symbol_conversion)
    if take.refusal is not None:
        return refused(take.refusal, take.client_error, take.conversion)
    questdb_type = "SYMBOL" if role == SYMBOL or take.always_symbol else take.field_type
    return ColumnAudit(column, dtype, role, take.path if take.path == SKIPPED else take.route, questdb_type, None,
                       None, None, lands=take.lands)


def qwp_audit_frame(frame, at: str, symbols: Collection[str]) -> list[ColumnAudit]:
    """Every column of ``frame`` (a pandas DataFrame, a pyarrow Table or a Polars DataFrame) in order, as
    ``QuestDB.dataframe(frame, at=at, symbols=list(symbols))`` takes it. Values matter where the client looks at
    them: uint64 above 2^63-1, nulls in booleans, the kinds of values in an object column, decimals' digits."""
    columns = qwp_columns(frame)
    names = [name for name, _, _ in columns]
    if at not in names:
        raise UsageError(f"the designated timestamp column {at!r} is not in the frame (columns: {', '.join(names)})")
    missing = sorted(set(symbols) - set(names))
    if missing:
        raise UsageError(f"symbol column(s) {', '.join(map(repr, missing))} not in the frame (columns: "
                         f"{', '.join(names)})")
    return [_qwp_column(name, dtype, DESIGNATED if name == at else SYMBOL if name in symbols else FIELD, take)
            for name, dtype, take in columns]


def beside(audits: Sequence[ColumnAudit], qwp_audits: Sequence[ColumnAudit]) -> list[ColumnAudit]:
    """ILP's audit of each column with QWP's beside it (``ColumnAudit.qwp``)."""
    by_name = {audit.column: audit for audit in qwp_audits}
    return [dataclasses.replace(audit, qwp=by_name[audit.column]) for audit in audits]


def releases_gil(audits: Sequence[ColumnAudit]) -> bool:
    """Whether ``dataframe()`` on the whole frame releases the GIL: only if no column holds Python objects."""
    return all(audit.parallel for audit in audits if audit.accepted)


def _remedy(fix: str, file: bool) -> str:
    """The fix as the user applies it: for a file, the choice that makes the conversion; for DataFrames, pandas."""
    return f"send with {named('convert_dtypes')}, which applies {fix} to each piece" if file else fix


def first_refusal(audits: Sequence[ColumnAudit], file: bool = False) -> str | None:
    """The first refused column (in the frame's order) in one line: its name, dtype, why, and what makes it
    accepted (``file``: the flag; else the pandas line); None when the client takes every column."""
    for audit in audits:
        if audit.refusal is not None:
            remedy = f"convert it: {_remedy(audit.fix, file)}" if audit.fix else "no conversion of the column is known"
            return f"column {audit.column!r} ({audit.dtype}): {audit.refusal}; {remedy}"
    return None


def _plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, a rule under the header (as ``harness.report.tables.plain_table``,
    which the domain layer may not import)."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _note(audit: ColumnAudit, convertible: bool) -> str:
    """A column's note: why it is refused and the fix, or the fix that makes it faster, or what lands otherwise."""
    if audit.refusal is not None:
        return audit.refusal + (f"; convert: {_remedy(audit.fix, convertible)}" if audit.fix else "")
    if audit.fix:
        return f"faster: {_remedy(audit.fix, convertible)}"
    return f"{audit.questdb_type} {audit.lands}" if audit.lands else ""


def _type_cell(audit: ColumnAudit) -> str:
    return "refused" if not audit.accepted else audit.questdb_type or "-"


def audit_table(audits: Sequence[ColumnAudit], file: bool = False, qwp_file: bool | None = None) -> str:
    """The audit as a plain text table, a row per column: role, path, QuestDB type, whether it lets threads run in
    parallel, and the fix (or, for a refused column, why and the fix; ``file``: as the flag that makes it); with
    QWP's audit beside (``ColumnAudit.qwp``), the type QWP makes (its dtype too where it is handed another kind of
    frame) and its note beside ILP's (``qwp_file``: QWP's fixes are the flag's, default ``file``)."""
    qwp = [audit.qwp for audit in audits]
    if not audits or any(audit is None for audit in qwp):
        rows = [(audit.column, audit.dtype, audit.role, audit.path, audit.questdb_type or "-",
                 "-" if not audit.accepted else "yes" if audit.parallel else "no", _note(audit, file))
                for audit in audits]
        return _plain_table(("column", "dtype", "role", "path", "QuestDB type", "parallel", "note"), rows)
    qwp_file = file if qwp_file is None else qwp_file
    other_dtypes = any(audit.dtype != beside.dtype for audit, beside in zip(audits, qwp))
    rows = []
    for audit, beside in zip(audits, qwp):
        notes = [note if note.startswith(name) else f"{name}: {note}"
                 for name, note in (("ILP", _note(audit, file)), ("QWP", _note(beside, qwp_file))) if note]
        rows.append((audit.column, audit.dtype, audit.role, audit.path, _type_cell(audit),
                     "-" if not audit.accepted else "yes" if audit.parallel else "no",
                     *((beside.dtype,) if other_dtypes else ()), _type_cell(beside), "; ".join(notes)))
    header = ("column", "dtype", "role", "ILP path", "ILP type", "parallel", *(("QWP dtype",) if other_dtypes else ()),
              "QWP type", "note")
    return _plain_table(header, rows)


def apply_fixes(frame, audits: Sequence[ColumnAudit]):
    """A copy of ``frame`` (a pandas DataFrame; for QWP's fixes a pyarrow Table or a Polars frame too) with every
    conversion the audit proposes applied (``frame`` is left as it is): refused columns made acceptable where a
    conversion is known, Python-object columns moved to a path that releases the GIL."""
    fixed = frame.copy(deep=False) if isinstance(frame, pd.DataFrame) else frame
    for audit in audits:
        if audit.conversion is None:
            continue
        try:
            fixed = with_column(fixed, audit.column, audit.conversion.convert(column_of(fixed, audit.column)))
        except (TypeError, ValueError, OverflowError, pa.ArrowException) as exc:
            raise UsageError(f"column {audit.column!r} ({audit.dtype}): {audit.fix} failed: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return fixed


def is_string_like(series: pd.Series) -> bool:
    """Whether the client takes ``series`` as strings (it may be a symbol): object strings, any string dtype, a
    category of strings."""
    return client_take(series, DEFAULT_PROTOCOL_VERSION).string
