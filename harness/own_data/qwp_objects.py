"""What QWP's NumPy planner does with a pandas column of Python objects (``objects_take``): typed by its first
non-null value, the others having to be of its kind; and with pandas' nullable booleans."""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import uuid

import numpy as np
import pandas as pd

from harness.own_data.client_dtypes import INT64_MAX, INT64_MIN, SKIPPED, is_null_object
from harness.own_data.dtype_conversions import (
    NULLS_TO_FALSE,
    TO_ARROW_STRING,
    TO_CATEGORY,
    TO_DATETIME,
    TO_FLOAT64,
    TO_FLOAT64_ARRAYS,
    TO_PYTHON_DECIMALS,
    TO_UTC_MICROS,
)
from harness.own_data.qwp_take import NUMPY_PLANNER, PLANNER_STRINGS, Take, refused

def booleans_take(series: pd.Series) -> Take:
    """pandas' nullable booleans, or Python bools: no null in them."""
    if series.hasnans:
        return refused("QWP refuses nulls in pandas' boolean columns (QuestDB's BOOLEAN has no null)",
                        "cannot insert null into a boolean column", NULLS_TO_FALSE)
    return Take(NUMPY_PLANNER, "BOOLEAN", symbol_conversion=TO_ARROW_STRING)


# An object column's first value, the kind of values it asks the others to be, and the client's name for it.
_OBJECT_KINDS: tuple[tuple[type, str], ...] = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"),
                                                (datetime.datetime, "datetime.datetime"))


def objects_take(series: pd.Series) -> Take:
    """An object column, typed by its first non-null value, the others having to be of its kind."""
    values = [value for value in series.array if not is_null_object(value)]
    if not values:
        return Take(SKIPPED)
    first = values[0]
    for kind, name in _OBJECT_KINDS:
        if isinstance(first, kind):
            return _scalars_take(series, values, kind, name)
    if isinstance(first, datetime.date):
        return refused("QWP refuses datetime.date objects", "an object of type datetime.date", TO_DATETIME,
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
            return refused(f"QWP takes numpy arrays of float64 only, not {first.dtype}",
                            "a numpy array of an unsupported element type", TO_FLOAT64_ARRAYS, early=True)
        return Take(NUMPY_PLANNER, "DOUBLE" + "[]" * first.ndim)
    return refused(f"QWP refuses objects of type {type(first).__module__}.{type(first).__name__}",
                    "Unsupported object column containing an object of type", early=True)


def _scalars_take(series: pd.Series, values: list, kind: type, name: str) -> Take:
    """An object column of Python bools, ints, floats, strings or datetimes."""
    other = next((value for value in values if not isinstance(value, kind) or (kind is int and type(value) is bool)),
                 None)
    timestamps = {"at_conversion": TO_UTC_MICROS}
    if other is not None:
        fix = {int: TO_FLOAT64, float: TO_FLOAT64, str: TO_ARROW_STRING, datetime.datetime: TO_UTC_MICROS}.get(kind)
        return refused(f"QWP types an object column by its first value and refuses another type further down (a "
                        f"{type(other).__name__} after a {name})", f"expected {name}, got", fix,
                        symbol_conversion=TO_ARROW_STRING, **(PLANNER_STRINGS if kind is str else {}), **timestamps)
    if kind is bool:
        return booleans_take(series)
    if kind is int:
        if min(values) < INT64_MIN or max(values) > INT64_MAX:
            return refused("QWP refuses Python ints outside the 64-bit range", "integer out of range for a LONG "
                            "column", TO_PYTHON_DECIMALS, symbol_conversion=TO_ARROW_STRING)
        return Take(NUMPY_PLANNER, "LONG", symbol_conversion=TO_ARROW_STRING)
    if kind is float:
        return Take(NUMPY_PLANNER, "DOUBLE", symbol_conversion=TO_ARROW_STRING)
    if kind is str:
        return Take(NUMPY_PLANNER, "VARCHAR", symbol_conversion=TO_CATEGORY, **PLANNER_STRINGS, **timestamps)
    return Take(NUMPY_PLANNER, "TIMESTAMP", symbol_conversion=TO_ARROW_STRING, **timestamps)


def _decimals_take(values: list) -> Take:
    """An object column of ``decimal.Decimal``: DECIMAL of the largest scale among them, 38 digits or 76."""
    if any(not isinstance(value, decimal.Decimal) for value in values):
        return refused("QWP types an object column by its first value and refuses another type further down",
                        "Bad column", TO_FLOAT64)
    finite = [value for value in values if not value.is_nan()]
    if any(value.is_infinite() for value in finite):
        return refused("QWP refuses infinite decimals", "cannot be interpreted as an integer", TO_FLOAT64)
    scale = max((max(0, -value.as_tuple().exponent) for value in finite), default=0)
    whole = max((max(0, len(value.as_tuple().digits) + value.as_tuple().exponent) for value in finite), default=0)
    digits = whole + scale
    if digits > 76:
        return refused(f"QWP's decimals hold 76 digits at most, not {digits}", "Decimal precision out of range",
                        TO_FLOAT64)
    return Take(NUMPY_PLANNER, f"DECIMAL({38 if digits <= 38 else 76},{scale})")
