"""What QWP's ``QuestDB.dataframe()`` (the questdb client's ``questdb.connect()``: columnar over WebSocket) does with
a column (``qwp_columns``): which of the client's two planners takes it, the column type QuestDB creates for it as a
field and as the designated timestamp, whether it may be a symbol, what lands otherwise than it was sent, or why it
is refused and the conversion that makes it accepted (``harness.own_data.dtype_conversions``). ILP's
``Sender.dataframe()`` has its own table: ``harness.own_data.client_dtypes``.

Every claim here was probed against questdb client 6.0.0 and the pinned QWP server (``.env``'s ``QUESTDB_QWP``),
with pandas 3.1, pyarrow 26, polars 2.1 and numpy 2.4, one column a table, its type read back from
``table_columns()``; tests/test_qwp_audit.py checks each claim against both again. What was found:

- Two planners. A pyarrow Table, a Polars frame (its Arrow C stream) and a pandas frame whose every column is an
  ``ArrowDtype`` or an Arrow-backed ``StringDtype`` (pandas 3's ``str`` too) go through the Arrow stream, typed by
  their Arrow types. Any other pandas frame (one NumPy, object, nullable or categorical column is enough) goes
  through the NumPy planner, every column of it, its ``ArrowDtype`` columns included, which it takes mostly as the
  Arrow stream does: not ``bool[pyarrow]`` (refused), and a dictionary of strings there is a SYMBOL even when
  ``symbols`` leaves it out (and refused when it names it).
- Integers keep their width where ILP widens every one to LONG: 8- and 16-bit integers (signed or not, NumPy or
  Arrow) become INT, 32- and 64-bit ones LONG; pandas' nullable ``Int8`` ... ``UInt64`` are LONG whatever their
  width. A uint64 above 2^63-1 is refused at its row. ``float32`` (and Arrow's and Polars' ``float16``) become FLOAT,
  ``float64`` DOUBLE; NumPy's ``float16`` is refused.
- Strings are VARCHAR (SYMBOL when named), whatever holds them, Arrow's ``string_view`` (Polars' ``String``)
  included, which ILP refuses. As a symbol the NumPy planner takes a category of strings and Arrow-backed strings,
  not Python ``str`` objects nor ``string[python]`` (ILP takes both). A category (a dictionary column, Polars'
  ``Categorical`` and ``Enum``) of strings is VARCHAR unless named; of anything else, refused.
- Timestamps: ``datetime64[ns]`` and ``timestamp[ns]`` become TIMESTAMP_NS, ``[us]`` and ``[s]`` TIMESTAMP; NumPy's
  ``datetime64[ms]`` TIMESTAMP too, but Arrow's ``timestamp[ms]`` (Polars' ``Datetime('ms')``), ``date32`` and
  ``date64`` become DATE. Tz-aware columns are stored in UTC; the NumPy planner refuses a tz-aware ``ms`` or ``s``
  field but takes it as the designated timestamp. The designated timestamp takes ``datetime64`` of any unit and
  Arrow timestamps of any unit (TIMESTAMP, TIMESTAMP_NS for ``ns``), not dates, text or Python ``datetime``
  objects (which are TIMESTAMP fields, as over ILP).
- Types ILP has not: bytes (``bytes``/``bytearray`` objects, Arrow binaries) become BINARY, ``uuid.UUID`` objects
  and Arrow's ``uuid`` UUID, ``IPv4Address`` objects IPv4. Decimals become DECIMAL: Arrow's ``decimal32``/``64`` as
  DECIMAL(18, s), ``decimal128`` (Polars' ``Decimal``) DECIMAL(38, s), ``decimal256`` DECIMAL(76, s); a column of
  ``decimal.Decimal`` objects DECIMAL(38, s) or, past 38 digits, DECIMAL(76, s), its scale the largest among the
  values sent (so each call's own: a later call whose values have more decimals is refused by the table), more
  than 76 digits refused. Arrow ``time32``/``time64`` and ``duration`` columns become LONG nanoseconds.
- Arrays: lists of float64 (any Arrow list, Polars' ``List`` and ``Array``, object columns of float64 numpy arrays)
  become DOUBLE[] (DOUBLE[][] ...); of any other element type, refused. Structs, maps and Arrow's ``null`` type are
  refused, and so are Polars' ``Int128``, ``UInt128`` and ``Object``.
- Booleans: a null in an Arrow boolean lands as false; pandas' nullable ``boolean`` and object booleans holding a
  null are refused. A column with no value at all is left out of the table (no column is made) when it is an object
  or a pandas nullable column; a typed Arrow column of nulls gets its type, an Arrow ``null`` column is refused.
- Fixed-size binaries: 8-byte values are refused (Polars exports its ``Object`` dtype so); 16- or 32-byte ones
  (UUIDs? LONG256?) are BINARY from a pyarrow Table (the client logs a warning) and refused from a pandas frame.
- Object columns are typed by their first non-null value and refuse a value of another type at its row, as ILP's.
- Not a dtype matter: the NumPy planner takes an Arrow-backed column only as one contiguous Arrow array from its
  start; a slice of a frame, a ``pd.concat`` and a Parquet file of several row groups read whole are refused
  ("v1 requires one contiguous zero-offset buffer"), which ``whole_arrow_columns`` mends by a copy. The Arrow stream
  takes slices as they are.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import ipaddress
import uuid
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.own_data.client_dtypes import INT64_MAX, INT64_MIN, REFUSED, SKIPPED, is_null_object
from harness.own_data.dtype_conversions import (
    DATES_TO_TIMESTAMPS,
    NULLS_TO_FALSE,
    PERIODS_TO_TIMESTAMPS,
    POLARS_TO_DECIMALS,
    POLARS_TO_FLOAT64_LISTS,
    POLARS_TO_MICROS,
    POLARS_TO_STRING,
    STRING_CATEGORIES,
    TABLE_TO_BINARY,
    TABLE_TO_DECIMALS,
    TABLE_TO_FLOAT64_LISTS,
    TABLE_TO_MICROS,
    TABLE_TO_STRING,
    TO_ARROW_BINARY,
    TO_ARROW_DECIMALS,
    TO_ARROW_FLOAT64_LISTS,
    TO_ARROW_STRING,
    TO_ARROW_STRINGS,
    TO_CATEGORY,
    TO_DATETIME,
    TO_DENSE,
    TO_FLOAT64,
    TO_FLOAT64_ARRAYS,
    TO_MICROS,
    TO_PYTHON_DECIMALS,
    TO_SECONDS,
    TO_UTC_MICROS,
    VIEWS_TO_ARROW_STRINGS,
    Conversion,
)

# How QWP's client takes a column (``Take.path``): the planner of the whole frame.
NUMPY_PLANNER = "NumPy planner"
ARROW_STREAM = "Arrow stream"

# The client's words when a column cannot play a role: the designated timestamp, a symbol.
_PLANNER_AT = "Bad argument `at`"
_ARROW_AT = "is not Timestamp(_)"
_PLANNER_SYMBOL = "Must be a strings column"
_PLANNER_OBJECT_SYMBOL = "v1 only supports pandas string Categorical or string[pyarrow] symbol columns"
# What the NumPy planner takes as a symbol: neither Python str objects nor string[python], nor string_view[pyarrow].
_PLANNER_STRINGS = {"symbol_refusal": "QWP's NumPy planner takes symbols from categories of strings and Arrow-backed "
                                      "strings (not string_view) only", "symbol_error": _PLANNER_OBJECT_SYMBOL}
_ARROW_SYMBOL = "is not a strings column"
# Decimal precisions of QuestDB's DECIMAL columns QWP makes, by the bits of the Arrow decimal it is sent as.
_DECIMAL_PRECISION = {32: 18, 64: 18, 128: 38, 256: 76}


@dataclass(frozen=True)
class Take:
    """How QWP's client takes a column, before its role is known. As a field: ``field_type`` (None: no column is made,
    ``SKIPPED``), or ``refusal`` in the client's words ``client_error`` and the ``conversion`` that makes it accepted;
    ``early``: the client refuses it whatever its role. As the designated timestamp: ``at_type``, or refused in the
    words ``at_error``, ``at_conversion`` the fix. As a symbol: ``symbol``, or refused in the words
    ``symbol_error``, ``symbol_conversion`` the fix; ``always_symbol``: a SYMBOL even when ``symbols`` leaves it out.
    ``symbol_refusal`` says why it is no symbol. ``lands``: what lands otherwise than it was sent (a null boolean as
    false). ``nulls``: whether it holds a null (which the designated timestamp may not); ``route``: the planner of
    its frame (``path`` where the client takes it)."""

    path: str
    field_type: str | None = None
    at_type: str | None = None
    symbol: bool = False
    always_symbol: bool = False
    lands: str | None = None
    refusal: str | None = None
    client_error: str | None = None
    conversion: Conversion | None = None
    early: bool = False
    at_error: str = _PLANNER_AT
    at_conversion: Conversion | None = None
    symbol_refusal: str = "QWP takes symbols from string columns only"
    symbol_error: str = _PLANNER_SYMBOL
    symbol_conversion: Conversion | None = None
    nulls: bool = False
    route: str = NUMPY_PLANNER

    @property
    def at_null_error(self) -> str:
        """The client's words for a null in the designated timestamp."""
        return "cannot contain NaT" if self.at_error == _PLANNER_AT else "must have no null rows"


@dataclass(frozen=True)
class _Fixes:
    """The conversions of one kind of frame on the Arrow stream, in its own library's lines."""

    decimals: Conversion | None
    binary: Conversion | None
    strings: Conversion | None
    float64_lists: Conversion | None
    micros: Conversion | None
    decoded: Conversion | None


_PANDAS_FIXES = _Fixes(TO_ARROW_DECIMALS, TO_ARROW_BINARY, TO_ARROW_STRINGS, TO_ARROW_FLOAT64_LISTS,
                       DATES_TO_TIMESTAMPS,
                       Conversion("df[{c}] = df[{c}].astype(pd.ArrowDtype(df[{c}].dtype.pyarrow_dtype.value_type))",
                                  lambda s: s.astype(pd.ArrowDtype(s.dtype.pyarrow_dtype.value_type))))
_TABLE_FIXES = _Fixes(TABLE_TO_DECIMALS, TABLE_TO_BINARY, TABLE_TO_STRING, TABLE_TO_FLOAT64_LISTS, TABLE_TO_MICROS,
                      Conversion("table = table.set_column(table.schema.get_field_index({c}), {c}, "
                                 "table[{c}].cast(table[{c}].type.value_type))",
                                 lambda column: column.cast(column.type.value_type)))
# Polars has no fixed-size binary of its own nor dictionaries of anything but strings.
_POLARS_FIXES = _Fixes(POLARS_TO_DECIMALS, None, POLARS_TO_STRING, POLARS_TO_FLOAT64_LISTS, POLARS_TO_MICROS, None)


def _refused(refusal: str, client_error: str, conversion: Conversion | None = None, early: bool = False,
             **role) -> Take:
    return Take(REFUSED, refusal=refusal, client_error=client_error, conversion=conversion, early=early, **role)


def _timestamp(unit: str) -> str:
    return "TIMESTAMP_NS" if unit == "ns" else "TIMESTAMP"


def is_arrow_backed(dtype) -> bool:
    """Whether a pandas column of ``dtype`` is one the client hands the Arrow stream (a frame of such columns only)."""
    return isinstance(dtype, pd.ArrowDtype) or (isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow")


def qwp_columns(frame) -> list[tuple[str, str, Take]]:
    """(name, dtype as the frame holds it, how QWP takes it) of every column of ``frame``: a pandas DataFrame, a
    pyarrow Table or a Polars DataFrame, as ``QuestDB.dataframe()`` is handed it."""
    if isinstance(frame, pd.DataFrame):
        arrow = len(frame.columns) > 0 and all(is_arrow_backed(dtype) for dtype in frame.dtypes)
        series = [frame.iloc[:, position] for position in range(len(frame.columns))]
        return [(str(name), str(column.dtype),
                 dataclasses.replace(_arrow_take(_arrow_of(column), _PANDAS_FIXES, pandas=True, planner=False) if arrow
                                     else _planner_take(column), nulls=bool(column.isna().any()),
                                     route=ARROW_STREAM if arrow else NUMPY_PLANNER))
                for name, column in zip(frame.columns, series)]
    if isinstance(frame, pa.Table):
        return [(name, str(column.type),
                 dataclasses.replace(_arrow_take(column, _TABLE_FIXES, pandas=False, planner=False),
                                     nulls=column.null_count > 0, route=ARROW_STREAM))
                for name, column in zip(frame.column_names, frame.columns)]
    return [(name, str(dtype), dataclasses.replace(_polars_take(frame, name, dtype),
                                                   nulls=frame[name].null_count() > 0, route=ARROW_STREAM))
            for name, dtype in frame.schema.items()]


def _arrow_of(series: pd.Series) -> pa.ChunkedArray:
    """An Arrow-backed pandas column as Arrow holds it."""
    array = pa.array(series.array)
    return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])


def whole_arrow_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as QWP's NumPy planner takes it: each Arrow-backed column (pandas 3's ``str``, an ``ArrowDtype``) one
    contiguous Arrow array from its start, copied into one where it is not: the planner refuses a slice of a frame, a
    ``pd.concat`` and a Parquet file of several row groups read whole ("v1 requires one contiguous zero-offset
    buffer"), as a user's own code then must. A frame the Arrow stream takes (slices and chunks alike), or one with
    no such column, is returned as it is."""
    if not len(frame.columns) or all(is_arrow_backed(dtype) for dtype in frame.dtypes):
        return frame
    pieced = [position for position, dtype in enumerate(frame.dtypes) if is_arrow_backed(dtype)
              and ((column := _arrow_of(frame.iloc[:, position])).num_chunks != 1 or column.chunk(0).offset)]
    if not pieced:
        return frame
    whole = frame.copy(deep=False)
    for position in pieced:
        series = frame.iloc[:, position]
        whole.isetitem(position, pd.Series(pd.array(pa.concat_arrays(_arrow_of(series).chunks), dtype=series.dtype),
                                           index=series.index))
    return whole


def _polars_take(frame, name: str, dtype) -> Take:
    """A Polars column: by the Arrow type its C stream exports, but for the dtypes pyarrow cannot import."""
    import polars as pl

    if dtype in (pl.Int128, pl.UInt128):
        return _refused(f"QWP's Arrow reader takes no 128-bit integers (polars' {dtype})",
                        "is outside the pinned Arrow", POLARS_TO_DECIMALS, early=True)
    if dtype == pl.Object:
        return _refused("QWP refuses polars' Object dtype (handles to Python objects, not data)",
                        "polars Object dtype is not supported", early=True)
    column = pa.table(frame.select(name)).column(0)
    return _arrow_take(column, _POLARS_FIXES, pandas=False, planner=False)


# --- the Arrow stream (and an Arrow-backed column of a frame the NumPy planner takes) ----------------------------


def _is_string(arrow: pa.DataType) -> bool:
    return pa.types.is_string(arrow) or pa.types.is_large_string(arrow) or pa.types.is_string_view(arrow)


def _list_depth(arrow: pa.DataType) -> tuple[int, pa.DataType]:
    """How many lists deep ``arrow`` is, and the type of its leaves."""
    depth = 0
    while pa.types.is_list(arrow) or pa.types.is_large_list(arrow) or pa.types.is_fixed_size_list(arrow) \
            or pa.types.is_list_view(arrow) or pa.types.is_large_list_view(arrow):
        depth, arrow = depth + 1, arrow.value_type
    return depth, arrow


def _arrow_take(column: pa.ChunkedArray, fixes: _Fixes, pandas: bool, planner: bool) -> Take:
    """A column by its Arrow type (``pandas``: of a pandas frame; ``planner``: in a frame the NumPy planner takes)."""
    arrow = column.type
    path = NUMPY_PLANNER if planner else ARROW_STREAM
    roles = {"at_error": _PLANNER_AT if planner else _ARROW_AT,
             "symbol_error": _PLANNER_SYMBOL if planner else _ARROW_SYMBOL}
    as_strings = {"symbol_conversion": fixes.strings}
    if pa.types.is_dictionary(arrow):
        if not _is_string(arrow.value_type):
            return _refused(f"QWP takes categories (dictionaries) of strings only, not of {arrow.value_type}",
                            "Dictionary values require Utf8", fixes.decoded, **roles)
        if planner:  # a SYMBOL unasked, refused asked
            return Take(path, "SYMBOL", always_symbol=True, symbol_conversion=TO_ARROW_STRINGS,
                        symbol_refusal="QWP's NumPy planner makes an Arrow dictionary column a SYMBOL unasked and "
                                       "refuses it named as one", **roles)
        return Take(path, "VARCHAR", symbol=True, **roles)
    if _is_string(arrow):
        if planner and pa.types.is_string_view(arrow):
            return Take(path, "VARCHAR", symbol_conversion=VIEWS_TO_ARROW_STRINGS, at_error=_PLANNER_AT,
                        symbol_refusal=_PLANNER_STRINGS["symbol_refusal"], symbol_error=_PLANNER_SYMBOL)
        return Take(path, "VARCHAR", symbol=True, **roles)
    if pa.types.is_boolean(arrow):
        if planner:
            return _refused("QWP's NumPy planner refuses bool[pyarrow] beside NumPy columns", "Arrow nullable bool "
                            "not yet supported", NULLS_TO_FALSE, **roles, **as_strings)
        return Take(path, "BOOLEAN", lands="a null lands as false" if column.null_count else None, **roles,
                    **as_strings)
    if pa.types.is_integer(arrow):
        if arrow.bit_width <= 16:
            return Take(path, "INT", **roles, **as_strings)
        if pa.types.is_uint64(arrow) and column.null_count < len(column) and pc.max(column).as_py() > INT64_MAX:
            return _refused("QWP refuses uint64 values above 2^63-1 (QuestDB's LONG is signed)",
                            "does not fit QuestDB LONG", fixes.decimals, **roles, **as_strings)
        return Take(path, "LONG", **roles, **as_strings)
    if pa.types.is_floating(arrow):
        return Take(path, "DOUBLE" if pa.types.is_float64(arrow) else "FLOAT", **roles, **as_strings)
    if pa.types.is_decimal(arrow):
        return Take(path, f"DECIMAL({_DECIMAL_PRECISION[arrow.bit_width]},{arrow.scale})", **roles, **as_strings)
    if pa.types.is_timestamp(arrow):
        field_type = "DATE" if arrow.unit == "ms" else _timestamp(arrow.unit)
        return Take(path, field_type, at_type=_timestamp(arrow.unit), **roles, **as_strings)
    if pa.types.is_date(arrow):
        return Take(path, "DATE", at_conversion=fixes.micros, **roles, **as_strings)
    if pa.types.is_time(arrow) or pa.types.is_duration(arrow):
        what = "nanoseconds since midnight" if pa.types.is_time(arrow) else "nanoseconds"
        return Take(path, "LONG", lands=f"as {what}", **roles, **as_strings)
    if isinstance(arrow, pa.UuidType):
        return Take(path, "UUID", **roles)
    if pa.types.is_fixed_size_binary(arrow):
        width = arrow.byte_width
        if width == 8:
            return _refused("QWP refuses 8-byte fixed-size binaries (the shape of polars' Object dtype)",
                            "its values are 8 bytes each", fixes.binary, early=True, **roles)
        if width in (16, 32) and pandas:
            return _refused(f"QWP refuses unlabelled {width}-byte binaries from pandas (UUIDs? LONG256?)",
                            f"its values are {width} bytes each", fixes.binary, early=True, **roles)
        return Take(path, "BINARY", lands="with a warning logged (UUIDs? LONG256?)" if width in (16, 32) else None,
                    **roles)
    if pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow) or pa.types.is_binary_view(arrow):
        return Take(path, "BINARY", **roles)
    depth, leaf = _list_depth(arrow)
    if depth:
        if pa.types.is_float64(leaf):
            return Take(path, "DOUBLE" + "[]" * depth, **roles)
        numbers = pa.types.is_integer(leaf) or pa.types.is_floating(leaf)
        return _refused(f"QWP's arrays hold float64 only, not {leaf}", "QuestDB ARRAY ingress requires Float64",
                        fixes.float64_lists if depth == 1 and numbers else None, early=True, **roles)
    if pa.types.is_null(arrow):
        return _refused("QWP refuses Arrow's null type (a column of no values)", "Arrow format 'n' is not supported",
                        fixes.strings, early=True, **roles)
    return _refused(f"QWP refuses Arrow {arrow} columns", "not supported", early=True, **roles)


# --- the NumPy planner -----------------------------------------------------------------------------------------


def _planner_take(series: pd.Series) -> Take:
    """A column of a pandas frame the NumPy planner takes: by its dtype, an object column by its values."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        return _numpy_take(series)
    if isinstance(dtype, pd.DatetimeTZDtype):
        kind = _timestamp(dtype.unit)
        if dtype.unit in ("ns", "us"):
            return Take(NUMPY_PLANNER, kind, at_type=kind)
        return _refused(f"QWP takes tz-aware timestamps of unit ns or us only as fields, not {dtype.unit}",
                        "Unsupported pandas dtype", TO_MICROS, at_type=kind)
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype) and not series.notna().any():
        return Take(SKIPPED)  # boolean, Int8 ... UInt64, Float32, Float64 without a value
    if isinstance(dtype, pd.BooleanDtype):
        return _booleans(series)
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype):
        if dtype.kind == "u" and dtype.itemsize == 8 and int(series.max()) > INT64_MAX:
            return _refused("QWP refuses values outside the 64-bit range (QuestDB's LONG is signed)",
                            "integer out of range for a LONG column", TO_ARROW_DECIMALS)
        return Take(NUMPY_PLANNER, "DOUBLE" if dtype.kind == "f" else "LONG", symbol_conversion=TO_ARROW_STRING)
    if isinstance(dtype, pd.StringDtype):
        if dtype.storage == "pyarrow":
            return Take(NUMPY_PLANNER, "VARCHAR", symbol=True, at_conversion=TO_UTC_MICROS)
        return Take(NUMPY_PLANNER, "VARCHAR", symbol_conversion=TO_CATEGORY, at_conversion=TO_UTC_MICROS,
                    **_PLANNER_STRINGS)
    if isinstance(dtype, pd.CategoricalDtype):
        categories = dtype.categories
        if pd.api.types.is_string_dtype(categories.dtype) and pd.api.types.infer_dtype(categories) in ("string",
                                                                                                       "empty"):
            return Take(NUMPY_PLANNER, "VARCHAR", symbol=True)
        return _refused(f"QWP takes categories of strings only, not of {categories.dtype}",
                        "Expected a category of strings", STRING_CATEGORIES, early=True)
    if isinstance(dtype, pd.ArrowDtype):
        return _arrow_take(_arrow_of(series), _PANDAS_FIXES, pandas=True, planner=True)
    conversion = TO_DENSE if isinstance(dtype, pd.SparseDtype) else \
        PERIODS_TO_TIMESTAMPS if isinstance(dtype, pd.PeriodDtype) else None
    return _refused(f"QWP refuses {dtype} columns", "Unsupported dtype", conversion, early=True)


def _numpy_take(series: pd.Series) -> Take:
    dtype = series.dtype
    as_strings = {"symbol_conversion": TO_ARROW_STRING}
    if dtype.kind == "M":
        kind = _timestamp(np.datetime_data(dtype)[0])
        return Take(NUMPY_PLANNER, kind, at_type=kind, **as_strings)
    if dtype.kind == "b":
        return Take(NUMPY_PLANNER, "BOOLEAN", **as_strings)
    if dtype.kind in "iu":
        if dtype.itemsize <= 2:
            return Take(NUMPY_PLANNER, "INT", **as_strings)
        if dtype.kind == "u" and dtype.itemsize == 8 and len(series) and int(series.max()) > INT64_MAX:
            return _refused("QWP refuses uint64 values above 2^63-1 (QuestDB's LONG is signed)",
                            "does not fit QuestDB LONG", TO_ARROW_DECIMALS, **as_strings)
        return Take(NUMPY_PLANNER, "LONG", **as_strings)
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return Take(NUMPY_PLANNER, "FLOAT" if dtype.itemsize == 4 else "DOUBLE", **as_strings)
    if dtype.kind == "O":
        return _objects_take(series)
    conversion = TO_SECONDS if dtype.kind == "m" else TO_FLOAT64 if dtype.kind == "f" else None
    return _refused(f"QWP refuses {dtype} columns", "Unsupported dtype", conversion, early=True)


def _booleans(series: pd.Series) -> Take:
    """pandas' nullable booleans, or Python bools: no null in them."""
    if series.hasnans:
        return _refused("QWP refuses nulls in pandas' boolean columns (QuestDB's BOOLEAN has no null)",
                        "cannot insert null into a boolean column", NULLS_TO_FALSE)
    return Take(NUMPY_PLANNER, "BOOLEAN", symbol_conversion=TO_ARROW_STRING)


# An object column's first value, the kind of values it asks the others to be, and the client's name for it.
_OBJECT_KINDS: tuple[tuple[type, str], ...] = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"),
                                                (datetime.datetime, "datetime.datetime"))


def _objects_take(series: pd.Series) -> Take:
    """An object column, typed by its first non-null value, the others having to be of its kind."""
    values = [value for value in series.array if not is_null_object(value)]
    if not values:
        return Take(SKIPPED)
    first = values[0]
    for kind, name in _OBJECT_KINDS:
        if isinstance(first, kind):
            return _scalars_take(series, values, kind, name)
    if isinstance(first, datetime.date):
        return _refused("QWP refuses datetime.date objects", "an object of type datetime.date", TO_DATETIME,
                        early=True)
    if isinstance(first, decimal.Decimal):
        return _decimals_take(values)
    if isinstance(first, (bytes, bytearray, memoryview)):
        return Take(NUMPY_PLANNER, "BINARY")
    if isinstance(first, uuid.UUID):
        return Take(NUMPY_PLANNER, "UUID")
    if isinstance(first, ipaddress.IPv4Address):
        return Take(NUMPY_PLANNER, "IPv4")
    if isinstance(first, np.ndarray):
        if first.dtype != np.float64:
            return _refused(f"QWP takes numpy arrays of float64 only, not {first.dtype}",
                            "a numpy array of an unsupported element type", TO_FLOAT64_ARRAYS, early=True)
        return Take(NUMPY_PLANNER, "DOUBLE" + "[]" * first.ndim)
    return _refused(f"QWP refuses objects of type {type(first).__module__}.{type(first).__name__}",
                    "Unsupported object column containing an object of type", early=True)


def _scalars_take(series: pd.Series, values: list, kind: type, name: str) -> Take:
    """An object column of Python bools, ints, floats, strings or datetimes."""
    other = next((value for value in values if not isinstance(value, kind) or (kind is int and type(value) is bool)),
                 None)
    timestamps = {"at_conversion": TO_UTC_MICROS}
    if other is not None:
        fix = {int: TO_FLOAT64, float: TO_FLOAT64, str: TO_ARROW_STRING, datetime.datetime: TO_UTC_MICROS}.get(kind)
        return _refused(f"QWP types an object column by its first value and refuses another type further down (a "
                        f"{type(other).__name__} after a {name})", f"expected {name}, got", fix,
                        symbol_conversion=TO_ARROW_STRING, **(_PLANNER_STRINGS if kind is str else {}), **timestamps)
    if kind is bool:
        return _booleans(series)
    if kind is int:
        if min(values) < INT64_MIN or max(values) > INT64_MAX:
            return _refused("QWP refuses Python ints outside the 64-bit range", "integer out of range for a LONG "
                            "column", TO_PYTHON_DECIMALS, symbol_conversion=TO_ARROW_STRING)
        return Take(NUMPY_PLANNER, "LONG", symbol_conversion=TO_ARROW_STRING)
    if kind is float:
        return Take(NUMPY_PLANNER, "DOUBLE", symbol_conversion=TO_ARROW_STRING)
    if kind is str:
        return Take(NUMPY_PLANNER, "VARCHAR", symbol_conversion=TO_CATEGORY, **_PLANNER_STRINGS, **timestamps)
    return Take(NUMPY_PLANNER, "TIMESTAMP", symbol_conversion=TO_ARROW_STRING, **timestamps)


def _decimals_take(values: list) -> Take:
    """An object column of ``decimal.Decimal``: DECIMAL of the largest scale among them, 38 digits or 76."""
    if any(not isinstance(value, decimal.Decimal) for value in values):
        return _refused("QWP types an object column by its first value and refuses another type further down",
                        "Bad column", TO_FLOAT64)
    finite = [value for value in values if not value.is_nan()]
    if any(value.is_infinite() for value in finite):
        return _refused("QWP refuses infinite decimals", "cannot be interpreted as an integer", TO_FLOAT64)
    scale = max((max(0, -value.as_tuple().exponent) for value in finite), default=0)
    whole = max((max(0, len(value.as_tuple().digits) + value.as_tuple().exponent) for value in finite), default=0)
    digits = whole + scale
    if digits > 76:
        return _refused(f"QWP's decimals hold 76 digits at most, not {digits}", "Decimal precision out of range",
                        TO_FLOAT64)
    return Take(NUMPY_PLANNER, f"DECIMAL({38 if digits <= 38 else 76},{scale})")
