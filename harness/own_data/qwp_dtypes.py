"""What QWP's ``QuestDB.dataframe()`` (the questdb client's ``questdb.connect()``: columnar over WebSocket) does with
a column (``qwp_columns``): which of the client's two planners takes it, the column type QuestDB creates for it as a
field and as the designated timestamp, whether it may be a symbol, what lands otherwise than it was sent, or why it
is refused and the conversion that makes it accepted (``harness.own_data.dtype_conversions``). ILP's
``Sender.dataframe()`` has its own table: ``harness.own_data.client_dtypes``.

Every claim here was probed against questdb client 6.0.0 and the pinned QWP server (``.env``'s ``QUESTDB_QWP``),
with pandas 3.1, pyarrow 26, polars 2.1 and numpy 2.4, one column a table, its type read back from
``table_columns()``; tests/test_qwp_audit.py checks each claim against both again. What was found is written down
once, dtype by dtype, in docs/own-data.md ("QWP's column"). In short: a pyarrow Table, a Polars frame and a pandas
frame of Arrow-backed columns only go through the client's Arrow stream, typed by their Arrow types; any other pandas
frame goes, every column of it, through its NumPy planner, which refuses some Arrow columns the stream takes and
takes an Arrow-backed column only as one contiguous array from its start (``whole_arrow_columns`` mends that by a
copy). Object columns are typed by their first non-null value and refuse a value of another type at its row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.own_data.client_dtypes import INT64_MAX, SKIPPED, of_strings
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
    TO_DENSE,
    TO_FLOAT64,
    TO_MICROS,
    TO_SECONDS,
    TO_UTC_MICROS,
    VIEWS_TO_ARROW_STRINGS,
    Conversion,
)
from harness.own_data.qwp_objects import booleans_take, objects_take
from harness.own_data.qwp_take import (
    ARROW_AT,
    ARROW_STREAM,
    ARROW_SYMBOL,
    DECIMAL_PRECISION,
    NUMPY_PLANNER,
    PLANNER_AT,
    PLANNER_STRINGS,
    PLANNER_SYMBOL,
    Take,
    refused,
    timestamp_type,
)

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
        return refused(f"QWP's Arrow reader takes no 128-bit integers (polars' {dtype})",
                        "is outside the pinned Arrow", POLARS_TO_DECIMALS, early=True)
    if dtype == pl.Object:
        return refused("QWP refuses polars' Object dtype (handles to Python objects, not data)",
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
    path = NUMPY_PLANNER if planner else ARROW_STREAM
    roles = {"at_error": PLANNER_AT if planner else ARROW_AT,
             "symbol_error": PLANNER_SYMBOL if planner else ARROW_SYMBOL}
    arrow = column.type
    if pa.types.is_dictionary(arrow) or _is_string(arrow) or pa.types.is_boolean(arrow):
        return _text_or_boolean_take(column, fixes, planner, path, roles)
    take = _scalar_take(column, fixes, path, roles)
    return take if take is not None else _binary_or_list_take(arrow, fixes, pandas, path, roles)


def _text_or_boolean_take(column: pa.ChunkedArray, fixes: _Fixes, planner: bool, path: str, roles: dict) -> Take:
    """A dictionary, a string or a boolean column: what may be a symbol, and the NumPy planner's refusals."""
    arrow = column.type
    if pa.types.is_dictionary(arrow):
        if not _is_string(arrow.value_type):
            return refused(f"QWP takes categories (dictionaries) of strings only, not of {arrow.value_type}",
                            "Dictionary values require Utf8", fixes.decoded, **roles)
        if planner:  # a SYMBOL unasked, refused asked
            return Take(path, "SYMBOL", always_symbol=True, symbol_conversion=TO_ARROW_STRINGS,
                        symbol_refusal="QWP's NumPy planner makes an Arrow dictionary column a SYMBOL unasked and "
                                       "refuses it named as one", **roles)
        return Take(path, "VARCHAR", symbol=True, **roles)
    if _is_string(arrow):
        if planner and pa.types.is_string_view(arrow):
            return Take(path, "VARCHAR", symbol_conversion=VIEWS_TO_ARROW_STRINGS, at_error=PLANNER_AT,
                        symbol_refusal=PLANNER_STRINGS["symbol_refusal"], symbol_error=PLANNER_SYMBOL)
        return Take(path, "VARCHAR", symbol=True, **roles)
    as_strings = {"symbol_conversion": fixes.strings}
    if planner:
        return refused("QWP's NumPy planner refuses bool[pyarrow] beside NumPy columns", "Arrow nullable bool "
                        "not yet supported", NULLS_TO_FALSE, **roles, **as_strings)
    return Take(path, "BOOLEAN", lands="a null lands as false" if column.null_count else None, **roles, **as_strings)


def _scalar_take(column: pa.ChunkedArray, fixes: _Fixes, path: str, roles: dict) -> Take | None:
    """A number, a decimal, a timestamp, a date, a time or a duration column; None for any other."""
    arrow = column.type
    as_strings = {"symbol_conversion": fixes.strings}
    if pa.types.is_integer(arrow):
        if arrow.bit_width <= 16:
            return Take(path, "INT", **roles, **as_strings)
        if pa.types.is_uint64(arrow) and column.null_count < len(column) and pc.max(column).as_py() > INT64_MAX:
            return refused("QWP refuses uint64 values above 2^63-1 (QuestDB's LONG is signed)",
                            "does not fit QuestDB LONG", fixes.decimals, **roles, **as_strings)
        return Take(path, "LONG", **roles, **as_strings)
    if pa.types.is_floating(arrow):
        return Take(path, "DOUBLE" if pa.types.is_float64(arrow) else "FLOAT", **roles, **as_strings)
    if pa.types.is_decimal(arrow):
        return Take(path, f"DECIMAL({DECIMAL_PRECISION[arrow.bit_width]},{arrow.scale})", **roles, **as_strings)
    if pa.types.is_timestamp(arrow):
        field_type = "DATE" if arrow.unit == "ms" else timestamp_type(arrow.unit)
        return Take(path, field_type, at_type=timestamp_type(arrow.unit), **roles, **as_strings)
    if pa.types.is_date(arrow):
        return Take(path, "DATE", at_conversion=fixes.micros, **roles, **as_strings)
    if pa.types.is_time(arrow) or pa.types.is_duration(arrow):
        what = "nanoseconds since midnight" if pa.types.is_time(arrow) else "nanoseconds"
        return Take(path, "LONG", lands=f"as {what}", **roles, **as_strings)
    return None


def _binary_or_list_take(arrow: pa.DataType, fixes: _Fixes, pandas: bool, path: str, roles: dict) -> Take:
    """A UUID, a binary or a list column, or the refusal of any other."""
    if isinstance(arrow, pa.UuidType):
        return Take(path, "UUID", **roles)
    if pa.types.is_fixed_size_binary(arrow):
        width = arrow.byte_width
        if width == 8:
            return refused("QWP refuses 8-byte fixed-size binaries (the shape of polars' Object dtype)",
                            "its values are 8 bytes each", fixes.binary, early=True, **roles)
        if width in (16, 32) and pandas:
            return refused(f"QWP refuses unlabelled {width}-byte binaries from pandas (UUIDs? LONG256?)",
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
        return refused(f"QWP's arrays hold float64 only, not {leaf}", "QuestDB ARRAY ingress requires Float64",
                        fixes.float64_lists if depth == 1 and numbers else None, early=True, **roles)
    if pa.types.is_null(arrow):
        return refused("QWP refuses Arrow's null type (a column of no values)", "Arrow format 'n' is not supported",
                        fixes.strings, early=True, **roles)
    return refused(f"QWP refuses Arrow {arrow} columns", "not supported", early=True, **roles)


# --- the NumPy planner -----------------------------------------------------------------------------------------


def _planner_take(series: pd.Series) -> Take:
    """A column of a pandas frame the NumPy planner takes: by its dtype, an object column by its values."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        return _numpy_take(series)
    if isinstance(dtype, pd.DatetimeTZDtype):
        kind = timestamp_type(dtype.unit)
        if dtype.unit in ("ns", "us"):
            return Take(NUMPY_PLANNER, kind, at_type=kind)
        return refused(f"QWP takes tz-aware timestamps of unit ns or us only as fields, not {dtype.unit}",
                        "Unsupported pandas dtype", TO_MICROS, at_type=kind)
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype) and not series.notna().any():
        return Take(SKIPPED)  # boolean, Int8 ... UInt64, Float32, Float64 without a value
    if isinstance(dtype, pd.BooleanDtype):
        return booleans_take(series)
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype):
        if dtype.kind == "u" and dtype.itemsize == 8 and int(series.max()) > INT64_MAX:
            return refused("QWP refuses values outside the 64-bit range (QuestDB's LONG is signed)",
                            "integer out of range for a LONG column", TO_ARROW_DECIMALS)
        return Take(NUMPY_PLANNER, "DOUBLE" if dtype.kind == "f" else "LONG", symbol_conversion=TO_ARROW_STRING)
    if isinstance(dtype, pd.StringDtype):
        if dtype.storage == "pyarrow":
            return Take(NUMPY_PLANNER, "VARCHAR", symbol=True, at_conversion=TO_UTC_MICROS)
        return Take(NUMPY_PLANNER, "VARCHAR", symbol_conversion=TO_CATEGORY, at_conversion=TO_UTC_MICROS,
                    **PLANNER_STRINGS)
    if isinstance(dtype, pd.CategoricalDtype):
        if of_strings(dtype):
            return Take(NUMPY_PLANNER, "VARCHAR", symbol=True)
        return refused(f"QWP takes categories of strings only, not of {dtype.categories.dtype}",
                        "Expected a category of strings", STRING_CATEGORIES, early=True)
    if isinstance(dtype, pd.ArrowDtype):
        return _arrow_take(_arrow_of(series), _PANDAS_FIXES, pandas=True, planner=True)
    conversion = TO_DENSE if isinstance(dtype, pd.SparseDtype) else \
        PERIODS_TO_TIMESTAMPS if isinstance(dtype, pd.PeriodDtype) else None
    return refused(f"QWP refuses {dtype} columns", "Unsupported dtype", conversion, early=True)


def _numpy_take(series: pd.Series) -> Take:
    dtype = series.dtype
    as_strings = {"symbol_conversion": TO_ARROW_STRING}
    if dtype.kind == "M":
        kind = timestamp_type(np.datetime_data(dtype)[0])
        return Take(NUMPY_PLANNER, kind, at_type=kind, **as_strings)
    if dtype.kind == "b":
        return Take(NUMPY_PLANNER, "BOOLEAN", **as_strings)
    if dtype.kind in "iu":
        if dtype.itemsize <= 2:
            return Take(NUMPY_PLANNER, "INT", **as_strings)
        if dtype.kind == "u" and dtype.itemsize == 8 and len(series) and int(series.max()) > INT64_MAX:
            return refused("QWP refuses uint64 values above 2^63-1 (QuestDB's LONG is signed)",
                            "does not fit QuestDB LONG", TO_ARROW_DECIMALS, **as_strings)
        return Take(NUMPY_PLANNER, "LONG", **as_strings)
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return Take(NUMPY_PLANNER, "FLOAT" if dtype.itemsize == 4 else "DOUBLE", **as_strings)
    if dtype.kind == "O":
        return objects_take(series)
    conversion = TO_SECONDS if dtype.kind == "m" else TO_FLOAT64 if dtype.kind == "f" else None
    return refused(f"QWP refuses {dtype} columns", "Unsupported dtype", conversion, early=True)


