"""The dtype audit of a user's DataFrame: per column, what the questdb client's ``dataframe()`` does with it
(takes its memory as it is, exports it to Arrow first, walks its Python objects holding the GIL, or refuses
it), the column type QuestDB creates for it, and one line of pandas that makes it accepted or faster.

Every claim here was probed against questdb client 6.0.0 (``Sender.dataframe`` / ``Buffer.dataframe``, the
row-serializing ILP path over tcp:: and http::) and a real QuestDB 9.3.4, with pandas 3.1, pyarrow 26 and
numpy 2.4; tests/test_own_data_audit.py checks each claim against both again. What was found:

- Integers of every width, numpy or nullable (``Int8`` ... ``UInt64``) or Arrow (``int8`` ... ``int64``,
  ``uint32``), become LONG; floats (``float32`` too) become DOUBLE; ``bool`` BOOLEAN. The Arrow dtypes
  ``uint8``, ``uint16``, ``uint64``, ``halffloat``, ``string_view``, ``date32``/``date64``, ``duration``,
  ``list``, and ``timestamp[ms|s]`` are refused ("Could not map column source type"), as are numpy
  ``float16``, ``complex``, ``timedelta64``, and pandas ``Sparse``, ``Period`` and ``Interval``
  ("Unsupported dtype"). A uint64 value above 2^63-1 is refused at its row.
- Strings become VARCHAR (never STRING), whatever holds them: object columns, ``string[python]``,
  ``string[pyarrow]``, Arrow ``string``/``large_string``, and pandas 3's default ``str`` (which is
  ``string[pyarrow]`` with NaN for missing: pandas 3 infers it even from an object array of strings). Named
  in ``symbols`` they become SYMBOL. A ``category`` of strings is a SYMBOL under the client's default
  ``symbols='auto'``, but VARCHAR when ``symbols`` is a list that leaves it out; a category of non-strings
  is refused ("Expected a category of strings").
- Timestamps: ``datetime64[ns]`` (naive, tz-aware or Arrow) becomes TIMESTAMP_NS under protocol version 2
  and 3, TIMESTAMP under version 1 (the nanoseconds cut to micros); every coarser numpy unit (``us``,
  ``ms``, ``s``) becomes TIMESTAMP. pandas 3 makes ``us`` its default (``date_range``, ``to_datetime`` of
  text or Python datetimes), so the unit of a file's column decides the column type. Tz-aware columns are
  stored in UTC; those of unit ``ms`` or ``s`` are refused ("Unsupported pandas dtype"). A column of Python
  ``datetime`` (or ``pd.Timestamp``) objects is a TIMESTAMP field (naive ones read as UTC) but is refused as
  the designated timestamp. The designated timestamp takes numpy ``datetime64`` of any unit, tz-aware
  ``ns``/``us`` and Arrow ``timestamp[ns|us]``; QuestDB names it ``timestamp`` in the table it creates,
  whatever the frame called it.
- Decimals (``decimal.Decimal`` objects, Arrow ``decimal128`` ...) are refused by the client under protocol
  versions 1 and 2; under version 3 the client sends them and QuestDB refuses them ("decimal columns must
  be created manually"). Object columns of 1-D (or n-D) float64 numpy arrays become DOUBLE[] (DOUBLE[][]
  ...) under protocol version 2 and up, and are refused under version 1; arrays of other element types are
  refused. Bytes, UUID and IPv4Address objects are refused by the row path.
- Object columns are typed by their first non-null value; a later value of another type is refused at its
  row ("Failed to serialize value of column ..."). An object column holding only nulls is skipped (no
  column is created); a nullable boolean holding a null is refused ("Cannot insert null values into a
  boolean column": QuestDB's BOOLEAN has no null, so ``fillna(False)`` stores what QuestDB would show).

The GIL: ``dataframe()`` releases it for the whole frame unless some column holds Python objects (object
columns of any kind, ``string[python]``); one such column makes the whole call hold it, so worker threads
serializing other frames wait (``releases_gil``). Probed with a thread counting its wake-ups from
``time.sleep(0.001)`` while another serializes a million rows: ~900 a second beside a native or Arrow
column, none beside a column of Python objects.

Row matters, not dtype ones, which the audit leaves alone: a row whose every column but the designated
timestamp is null is refused ("All values are nulls"); a NaT designated timestamp sends the row without a
timestamp (the server's clock stamps it); a designated timestamp before 1970 is refused at its row.

``audit_table`` formats the audit as a plain text table with a formatter of its own: this module is in
the domain layer and may not import ``harness.report``'s ``plain_table``, which it mirrors.
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from harness.errors import UsageError

# How the client takes a column (``ColumnAudit.path``).
NATIVE = "native buffer"
ARROW = "Arrow export"
OBJECTS = "Python objects (holds the GIL)"
REFUSED = "refused"
SKIPPED = "skipped (every value null)"

# What a column is in the table (``ColumnAudit.role``).
DESIGNATED = "designated timestamp"
SYMBOL = "symbol"
FIELD = "field"

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
# The protocol version the harness's senders use unless told otherwise (binary doubles, arrays, ns).
DEFAULT_PROTOCOL_VERSION = 2


@dataclass(frozen=True)
class Conversion:
    """A pandas conversion of one column: the line a user would write (``{c}`` stands for the column's
    name) and the function that does it."""

    code: str
    convert: Callable[[pd.Series], pd.Series]

    def line(self, column: str) -> str:
        return self.code.format(c=repr(column))


TO_ARROW_STRING = Conversion("df[{c}] = df[{c}].astype('string[pyarrow]')", lambda s: s.astype("string[pyarrow]"))
TO_CATEGORY = Conversion("df[{c}] = df[{c}].astype('category')", lambda s: s.astype("category"))
TO_FLOAT64 = Conversion("df[{c}] = df[{c}].astype('float64')", lambda s: s.astype("float64"))
TO_NULLABLE_FLOAT64 = Conversion("df[{c}] = df[{c}].astype('Float64')", lambda s: s.astype("Float64"))
TO_INT64 = Conversion("df[{c}] = df[{c}].astype('int64')", lambda s: s.astype("int64"))
TO_NULLABLE_INT64 = Conversion("df[{c}] = df[{c}].astype('Int64')", lambda s: s.astype("Int64"))
TO_ARROW_INT64 = Conversion("df[{c}] = df[{c}].astype('int64[pyarrow]')", lambda s: s.astype("int64[pyarrow]"))
TO_BOOL = Conversion("df[{c}] = df[{c}].astype('bool')", lambda s: s.astype("bool"))
NULLS_TO_FALSE = Conversion("df[{c}] = df[{c}].fillna(False).astype('bool')",
                            lambda s: s.fillna(False).astype("bool"))
TO_SECONDS = Conversion("df[{c}] = df[{c}].dt.total_seconds()", lambda s: s.dt.total_seconds())
STRING_CATEGORIES = Conversion("df[{c}] = df[{c}].cat.rename_categories(str)",
                               lambda s: s.cat.rename_categories(str))
TO_MICROS = Conversion("df[{c}] = df[{c}].dt.as_unit('us')", lambda s: s.dt.as_unit("us"))
TO_UTC_MICROS = Conversion("df[{c}] = pd.to_datetime(df[{c}], utc=True, format='ISO8601').dt.as_unit('us')",
                           lambda s: pd.to_datetime(s, utc=True, format="ISO8601").dt.as_unit("us"))
TO_DATETIME = Conversion("df[{c}] = pd.to_datetime(df[{c}])", lambda s: pd.to_datetime(s))
DATES_TO_TIMESTAMPS = Conversion("df[{c}] = df[{c}].astype('timestamp[us][pyarrow]')",
                                 lambda s: s.astype("timestamp[us][pyarrow]"))
TO_DENSE = Conversion("df[{c}] = df[{c}].sparse.to_dense()", lambda s: s.sparse.to_dense())
PERIODS_TO_TIMESTAMPS = Conversion("df[{c}] = df[{c}].dt.to_timestamp()", lambda s: s.dt.to_timestamp())
TO_FLOAT64_ARRAYS = Conversion("df[{c}] = df[{c}].map(lambda a: a.astype('float64'), na_action='ignore')",
                               lambda s: s.map(lambda a: a.astype("float64"), na_action="ignore"))
# The conversions whose result the client takes as the designated timestamp.
TO_TIMESTAMPS = (TO_MICROS, TO_UTC_MICROS, TO_DATETIME, DATES_TO_TIMESTAMPS, PERIODS_TO_TIMESTAMPS)


@dataclass(frozen=True)
class ColumnAudit:
    """One column: what the client does with it (``path``), the type QuestDB creates (``questdb_type``; for
    the designated timestamp, its type), whether serializing it lets other threads run (``parallel``), the
    pandas line that makes it accepted or faster (``fix``), why it is refused (``refusal``) and the words of
    the error the client (or, for decimals under protocol 3, the server) raises (``client_error``)."""

    column: str
    dtype: str
    role: str
    path: str
    questdb_type: str | None
    parallel: bool
    fix: str | None
    refusal: str | None
    client_error: str | None = None
    conversion: Conversion | None = field(default=None, repr=False, compare=False)

    @property
    def accepted(self) -> bool:
        return self.refusal is None

    def stored(self) -> dict:
        """The audit of the column as a record keeps it (the conversion by its line, ``fix``)."""
        return {name: getattr(self, name) for name in ("column", "dtype", "role", "path", "questdb_type",
                                                       "parallel", "fix", "refusal")}


@dataclass(frozen=True)
class _Take:
    """How the client's planner takes a column's source, before its role is known: ``field_type`` is the
    column type as a field, ``at_type`` as the designated timestamp (None: not a timestamp the client takes
    there), ``string``: whether it may be a symbol. A refusal is ``early`` when the client raises it while it
    reads the sources, before it checks the designated timestamp and the symbols; a late one (a source with
    no ILP mapping, a value at its row) comes after those checks, so a role the column cannot play is
    refused first."""

    path: str
    field_type: str | None = None
    at_type: str | None = None
    string: bool = False
    refusal: str | None = None
    client_error: str | None = None
    conversion: Conversion | None = None
    early: bool = False


def _refused(refusal: str, client_error: str, conversion: Conversion | None = None, early: bool = False,
             **source) -> _Take:
    return _Take(REFUSED, refusal=refusal, client_error=client_error, conversion=conversion, early=early, **source)


def _early(refusal: str, client_error: str, conversion: Conversion | None = None) -> _Take:
    return _refused(refusal, client_error, conversion, early=True)


def _timestamp_type(unit: str, protocol_version: int) -> str:
    return "TIMESTAMP_NS" if unit == "ns" and protocol_version >= 2 else "TIMESTAMP"


def _unsupported(dtype, conversion: Conversion | None = None, what: str | None = None) -> _Take:
    return _early(f"the questdb client refuses {what or str(dtype)} columns", "Unsupported dtype", conversion)


def _unmapped_arrow(dtype, conversion: Conversion | None = None) -> _Take:
    return _refused(f"the questdb client's row path has no mapping for the Arrow type {dtype.pyarrow_dtype}",
                    "Could not map column source type", conversion)


def _too_big(conversion: Conversion) -> _Take:
    return _refused("the questdb client refuses uint64 values above 2^63-1 (QuestDB's LONG is signed)",
                    "uint64 value too large for int64", conversion)


def _unsigned_max(series: pd.Series) -> int:
    values = series.dropna()
    return int(values.max()) if len(values) else 0


def _boolean(series: pd.Series, path: str) -> _Take:
    if series.hasnans:
        return _refused("the questdb client refuses nulls in boolean columns (QuestDB's BOOLEAN has no null)",
                        "Cannot insert null values into a boolean column", NULLS_TO_FALSE)
    return _Take(path, "BOOLEAN")


def _decimals(protocol_version: int) -> _Take:
    if protocol_version < 3:
        return _refused(f"the questdb client sends decimals only under protocol version 3, not "
                        f"{protocol_version}", "does not support the decimal datatype", TO_FLOAT64)
    return _refused("QuestDB does not create DECIMAL columns from ILP: create the table with its DECIMAL "
                    "column first", "decimal columns must be created manually", TO_FLOAT64)


def _is_null_object(value) -> bool:
    """The client's null in an object column: None, pd.NA, pd.NaT or a float NaN."""
    return value is None or value is pd.NA or value is pd.NaT or (type(value) is float and value != value)


def _object_take(series: pd.Series, protocol_version: int) -> _Take:
    """An object column, typed as the client types it: by its first non-null value, every later one having
    to be of the same kind."""
    values = series.array
    first = next((value for value in values if not _is_null_object(value)), None)
    if first is None:
        return _Take(SKIPPED)
    kind = pd.api.types.infer_dtype(series, skipna=True)
    mixed = _refused("the questdb client types an object column by its first value and refuses another type "
                     f"further down (this one holds {kind})", "Failed to serialize value of column")
    if type(first) is bool:
        if kind != "boolean":
            return mixed
        taken = _boolean(series, OBJECTS)
        return taken if taken.refusal else _Take(OBJECTS, "BOOLEAN", conversion=TO_BOOL)
    if type(first) is int:
        if kind != "integer":
            return _refused(mixed.refusal, mixed.client_error, TO_FLOAT64 if kind == "mixed-integer-float" else None)
        present = series.dropna()
        if int(present.min()) < INT64_MIN or int(present.max()) > INT64_MAX:
            return _refused("the questdb client refuses Python ints outside the 64-bit range",
                            "int too big to convert", TO_FLOAT64)
        return _Take(OBJECTS, "LONG", conversion=TO_NULLABLE_INT64 if series.hasnans else TO_INT64)
    if type(first) is float:
        if kind != "floating":
            return _refused(mixed.refusal, mixed.client_error, TO_FLOAT64 if kind == "mixed-integer-float" else None)
        return _Take(OBJECTS, "DOUBLE", conversion=TO_FLOAT64)
    if type(first) is str:
        if kind != "string":
            return _refused(mixed.refusal, mixed.client_error, TO_ARROW_STRING, string=True)
        return _Take(OBJECTS, "VARCHAR", string=True, conversion=TO_ARROW_STRING)
    if type(first) is np.ndarray:
        if first.dtype != np.float64:
            return _early(f"the questdb client takes numpy arrays of float64 only, not {first.dtype}",
                          "Unsupported object column containing a numpy array", TO_FLOAT64_ARRAYS)
        if any(not (type(value) is np.ndarray and value.dtype == np.float64)
               for value in values if not _is_null_object(value)):
            return _refused("the questdb client refuses a cell that is not a float64 numpy array in an array "
                            "column", "Failed to serialize value of column")
        if protocol_version < 2:
            return _refused("protocol version 1 has no arrays: send with protocol_version=2",
                            "does not support array datatype")
        return _Take(OBJECTS, "DOUBLE" + "[]" * first.ndim)
    if isinstance(first, (bytes, bytearray, memoryview)):
        return _refused("the questdb client's row path refuses bytes (only its columnar QWP path takes them)",
                        "holds bytes/bytearray/memoryview objects")
    if isinstance(first, uuid.UUID):
        return _refused("the questdb client's row path refuses UUID objects", "holds UUID objects", TO_ARROW_STRING)
    if isinstance(first, ipaddress.IPv4Address):
        return _refused("the questdb client's row path refuses IPv4Address objects", "holds IPv4Address objects",
                        TO_ARROW_STRING)
    if isinstance(first, datetime.datetime):
        if kind != "datetime":
            return _refused(mixed.refusal, mixed.client_error, TO_UTC_MICROS, field_type="TIMESTAMP")
        return _Take(OBJECTS, "TIMESTAMP", conversion=TO_UTC_MICROS)
    if isinstance(first, datetime.date):
        return _early("the questdb client refuses datetime.date objects", "object of type datetime.date",
                      TO_DATETIME)
    if isinstance(first, decimal.Decimal):
        return _decimals(protocol_version)
    conversion = {"integer": TO_NULLABLE_INT64, "floating": TO_FLOAT64, "string": TO_ARROW_STRING,
                  "datetime64": TO_DATETIME}.get(kind)
    return _early(f"the questdb client refuses objects of type {type(first).__module__}.{type(first).__name__}",
                  "Unsupported object column containing an object of type", conversion)


def _arrow_take(series: pd.Series, protocol_version: int) -> _Take:
    dtype = series.dtype
    arrow = dtype.pyarrow_dtype
    if pa.types.is_string(arrow) or pa.types.is_large_string(arrow):
        return _Take(ARROW, "VARCHAR", string=True)
    if pa.types.is_decimal(arrow):
        return _decimals(protocol_version)
    if pa.types.is_boolean(arrow):
        return _boolean(series, ARROW)
    if pa.types.is_float32(arrow) or pa.types.is_float64(arrow):
        return _Take(ARROW, "DOUBLE")
    if pa.types.is_signed_integer(arrow) or pa.types.is_uint32(arrow):
        return _Take(ARROW, "LONG")
    if pa.types.is_uint8(arrow) or pa.types.is_uint16(arrow):
        return _unmapped_arrow(dtype, TO_ARROW_INT64)
    if pa.types.is_uint64(arrow):
        return _unmapped_arrow(dtype, TO_ARROW_INT64 if _unsigned_max(series) <= INT64_MAX else TO_NULLABLE_FLOAT64)
    if pa.types.is_timestamp(arrow):
        if arrow.unit in ("ns", "us"):
            kind = _timestamp_type(arrow.unit, protocol_version)
            return _Take(ARROW, kind, at_type=kind)
        return _unmapped_arrow(dtype, TO_MICROS)
    if pa.types.is_float16(arrow):
        return _unmapped_arrow(dtype, TO_FLOAT64)
    if pa.types.is_date(arrow):
        return _unmapped_arrow(dtype, DATES_TO_TIMESTAMPS)
    if pa.types.is_duration(arrow):
        return _unmapped_arrow(dtype, TO_SECONDS)
    return _unmapped_arrow(dtype)


def _take(series: pd.Series, protocol_version: int) -> _Take:
    """How the client's planner takes the column's source (``_dataframe_resolve_source_and_buffers``)."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        if dtype.kind == "M":
            unit = np.datetime_data(dtype)[0]
            kind = _timestamp_type(unit, protocol_version)
            return _Take(NATIVE, kind, at_type=kind)
        if dtype.kind == "b":
            return _Take(NATIVE, "BOOLEAN")
        if dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8):
            return _Take(NATIVE, "LONG")
        if dtype.kind == "u":
            return _Take(NATIVE, "LONG") if _unsigned_max(series) <= INT64_MAX else _too_big(TO_FLOAT64)
        if dtype.kind == "f" and dtype.itemsize in (4, 8):
            return _Take(NATIVE, "DOUBLE")
        if dtype.kind == "O":
            return _object_take(series, protocol_version)
        if dtype.kind == "m":
            return _unsupported(dtype, TO_SECONDS, "timedelta")
        if dtype.kind == "f":
            return _unsupported(dtype, TO_FLOAT64)
        return _unsupported(dtype)
    if isinstance(dtype, pd.DatetimeTZDtype):
        if dtype.unit in ("ns", "us"):
            kind = _timestamp_type(dtype.unit, protocol_version)
            return _Take(ARROW, kind, at_type=kind)
        return _early(f"the questdb client takes tz-aware timestamps of unit ns or us only, not {dtype.unit}",
                      "Unsupported pandas dtype", TO_MICROS)
    if isinstance(dtype, pd.BooleanDtype):
        return _boolean(series, ARROW)
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype):  # Int8 ... UInt64, Float32, Float64
        if dtype.kind == "f":
            return _Take(ARROW, "DOUBLE")
        if dtype.kind == "u" and dtype.itemsize == 8 and _unsigned_max(series) > INT64_MAX:
            return _too_big(TO_NULLABLE_FLOAT64)
        return _Take(ARROW, "LONG")
    if isinstance(dtype, pd.StringDtype):
        if dtype.storage == "pyarrow":
            return _Take(ARROW, "VARCHAR", string=True)
        return _Take(OBJECTS, "VARCHAR", string=True, conversion=TO_ARROW_STRING)
    if isinstance(dtype, pd.CategoricalDtype):
        categories = dtype.categories
        if pd.api.types.is_string_dtype(categories.dtype) and pd.api.types.infer_dtype(categories) in ("string",
                                                                                                       "empty"):
            return _Take(ARROW, "VARCHAR", string=True)
        return _early(f"the questdb client takes categories of strings only, not of {categories.dtype}",
                      "Expected a category of strings", STRING_CATEGORIES)
    if isinstance(dtype, pd.ArrowDtype):
        return _arrow_take(series, protocol_version)
    if isinstance(dtype, pd.SparseDtype):
        return _unsupported(dtype, TO_DENSE, "sparse")
    if isinstance(dtype, pd.PeriodDtype):
        return _unsupported(dtype, PERIODS_TO_TIMESTAMPS, "period")
    return _unsupported(dtype)


def _audit_column(column: str, series: pd.Series, role: str, protocol_version: int) -> ColumnAudit:
    """The client's checks in its order: the source, then the designated timestamp, then the symbols, then
    the ILP mapping and the values (``_Take.early``)."""
    take = _take(series, protocol_version)
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
    named = set() if auto else set(symbols)
    if at not in names:
        raise UsageError(f"the designated timestamp column {at!r} is not in the frame (columns: {', '.join(names)})")
    missing = sorted(named - set(names))
    if missing:
        raise UsageError(f"symbol column(s) {', '.join(map(repr, missing))} not in the frame (columns: "
                         f"{', '.join(names)})")
    if at in named:
        raise UsageError(f"column {at!r} cannot be both the designated timestamp and a symbol")
    audits = []
    for position, name in enumerate(names):
        series = frame.iloc[:, position]
        if name == at:
            role = DESIGNATED
        elif name in named or (auto and isinstance(series.dtype, pd.CategoricalDtype)):
            role = SYMBOL
        else:
            role = FIELD
        audits.append(_audit_column(name, series, role, protocol_version))
    return audits


def releases_gil(audits: Sequence[ColumnAudit]) -> bool:
    """Whether ``dataframe()`` on the whole frame releases the GIL: only if no column holds Python objects."""
    return all(audit.parallel for audit in audits if audit.accepted)


def _remedy(fix: str, file: bool) -> str:
    """The fix as the user applies it: for a file, the flag that makes the conversion; for DataFrames, pandas."""
    return f"send with --convert-dtypes, which applies {fix} to each piece" if file else fix


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


def audit_table(audits: Sequence[ColumnAudit], file: bool = False) -> str:
    """The audit as a plain text table, a row per column: role, path, QuestDB type, whether it lets threads
    run in parallel, and the fix (or, for a refused column, why and the fix; ``file``: as the flag that makes it)."""
    rows = []
    for audit in audits:
        if audit.refusal is not None:
            note = audit.refusal + (f"; convert: {_remedy(audit.fix, file)}" if audit.fix else "")
        else:
            note = f"faster: {_remedy(audit.fix, file)}" if audit.fix else ""
        parallel = "-" if not audit.accepted else "yes" if audit.parallel else "no"
        rows.append((audit.column, audit.dtype, audit.role, audit.path, audit.questdb_type or "-", parallel, note))
    return _plain_table(("column", "dtype", "role", "path", "QuestDB type", "parallel", "note"), rows)


def apply_fixes(frame: pd.DataFrame, audits: Sequence[ColumnAudit]) -> pd.DataFrame:
    """A copy of ``frame`` with every conversion the audit proposes applied (``frame`` is left as it is):
    refused columns made acceptable where a conversion is known, Python-object columns moved to a path that
    releases the GIL."""
    fixed = frame.copy(deep=False)
    for audit in audits:
        if audit.conversion is None:
            continue
        try:
            fixed[audit.column] = audit.conversion.convert(fixed[audit.column])
        except (TypeError, ValueError, OverflowError, pa.ArrowException) as exc:
            raise UsageError(f"column {audit.column!r} ({audit.dtype}): {audit.fix} failed: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return fixed


def is_string_like(series: pd.Series) -> bool:
    """Whether the client takes ``series`` as strings (it may be a symbol): object strings, any string dtype, a
    category of strings."""
    return _take(series, DEFAULT_PROTOCOL_VERSION).string
