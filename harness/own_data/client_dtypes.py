"""What the questdb client's ``dataframe()`` does with a column, by its dtype (``client_take``): takes its memory as
it is, exports it to Arrow first, walks its Python objects holding the GIL, or refuses it, and the column type
QuestDB creates for it; the conversion that makes it accepted or faster (``harness.own_data.dtype_conversions``).

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
serializing other frames wait (``harness.own_data.audit.releases_gil``). Probed with a thread counting its wake-ups from
``time.sleep(0.001)`` while another serializes a million rows: ~900 a second beside a native or Arrow
column, none beside a column of Python objects.

Row matters, not dtype ones, which the audit leaves alone: a row whose every column but the designated
timestamp is null is refused ("All values are nulls"); a NaT designated timestamp sends the row without a
timestamp (the server's clock stamps it); a designated timestamp before 1970 is refused at its row.
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import uuid
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from harness.own_data.dtype_conversions import (
    DATES_TO_TIMESTAMPS,
    NULLS_TO_FALSE,
    PERIODS_TO_TIMESTAMPS,
    STRING_CATEGORIES,
    TO_ARROW_INT64,
    TO_ARROW_STRING,
    TO_BOOL,
    TO_DATETIME,
    TO_DENSE,
    TO_FLOAT64,
    TO_FLOAT64_ARRAYS,
    TO_INT64,
    TO_MICROS,
    TO_NULLABLE_FLOAT64,
    TO_NULLABLE_INT64,
    TO_SECONDS,
    TO_UTC_MICROS,
    Conversion,
)

# How the client takes a column (``Take.path``, ``harness.own_data.audit.ColumnAudit.path``).
NATIVE = "native buffer"
ARROW = "Arrow export"
OBJECTS = "Python objects (holds the GIL)"
REFUSED = "refused"
SKIPPED = "skipped (every value null)"

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


@dataclass(frozen=True)
class Take:
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
             **source) -> Take:
    return Take(REFUSED, refusal=refusal, client_error=client_error, conversion=conversion, early=early, **source)


def _early(refusal: str, client_error: str, conversion: Conversion | None = None) -> Take:
    return _refused(refusal, client_error, conversion, early=True)


def _timestamp_type(unit: str, protocol_version: int) -> str:
    return "TIMESTAMP_NS" if unit == "ns" and protocol_version >= 2 else "TIMESTAMP"


def _unsupported(dtype, conversion: Conversion | None = None, what: str | None = None) -> Take:
    return _early(f"the questdb client refuses {what or str(dtype)} columns", "Unsupported dtype", conversion)


def _unmapped_arrow(dtype, conversion: Conversion | None = None) -> Take:
    return _refused(f"the questdb client's row path has no mapping for the Arrow type {dtype.pyarrow_dtype}",
                    "Could not map column source type", conversion)


def _too_big(conversion: Conversion) -> Take:
    return _refused("the questdb client refuses uint64 values above 2^63-1 (QuestDB's LONG is signed)",
                    "uint64 value too large for int64", conversion)


def _unsigned_max(series: pd.Series) -> int:
    values = series.dropna()
    return int(values.max()) if len(values) else 0


def _boolean(series: pd.Series, path: str) -> Take:
    if series.hasnans:
        return _refused("the questdb client refuses nulls in boolean columns (QuestDB's BOOLEAN has no null)",
                        "Cannot insert null values into a boolean column", NULLS_TO_FALSE)
    return Take(path, "BOOLEAN")


def _decimals(protocol_version: int) -> Take:
    if protocol_version < 3:
        return _refused(f"the questdb client sends decimals only under protocol version 3, not "
                        f"{protocol_version}", "does not support the decimal datatype", TO_FLOAT64)
    return _refused("QuestDB does not create DECIMAL columns from ILP: create the table with its DECIMAL "
                    "column first", "decimal columns must be created manually", TO_FLOAT64)


def of_strings(dtype: pd.CategoricalDtype) -> bool:
    """Whether a category's categories are strings (or none at all): what both clients take as text."""
    categories = dtype.categories
    return pd.api.types.is_string_dtype(categories.dtype) and pd.api.types.infer_dtype(categories) in ("string",
                                                                                                   "empty")


def is_null_object(value) -> bool:
    """The client's null in an object column: None, pd.NA, pd.NaT or a float NaN."""
    return value is None or value is pd.NA or value is pd.NaT or (type(value) is float and value != value)



def client_take(series: pd.Series, protocol_version: int) -> Take:
    """How the client's planner takes the column's source (``_dataframe_resolve_source_and_buffers``)."""
    if isinstance(series.dtype, np.dtype):
        return _numpy_take(series, protocol_version)
    return _extension_take(series, protocol_version)


def _numpy_take(series: pd.Series, protocol_version: int) -> Take:
    """A column of a numpy dtype: numbers, booleans and datetimes as they are, Python objects one by one."""
    dtype = series.dtype
    if dtype.kind == "M":
        unit = np.datetime_data(dtype)[0]
        kind = _timestamp_type(unit, protocol_version)
        return Take(NATIVE, kind, at_type=kind)
    if dtype.kind == "b":
        return Take(NATIVE, "BOOLEAN")
    if dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8):
        return Take(NATIVE, "LONG")
    if dtype.kind == "u":
        return Take(NATIVE, "LONG") if _unsigned_max(series) <= INT64_MAX else _too_big(TO_FLOAT64)
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return Take(NATIVE, "DOUBLE")
    if dtype.kind == "O":
        return _object_take(series, protocol_version)
    if dtype.kind == "m":
        return _unsupported(dtype, TO_SECONDS, "timedelta")
    if dtype.kind == "f":
        return _unsupported(dtype, TO_FLOAT64)
    return _unsupported(dtype)


def _extension_take(series: pd.Series, protocol_version: int) -> Take:
    """A column of a pandas extension dtype: tz-aware datetimes, nullable numbers and booleans, strings,
    categories, Arrow dtypes; sparse and period ones refused."""
    dtype = series.dtype
    if isinstance(dtype, pd.DatetimeTZDtype):
        if dtype.unit in ("ns", "us"):
            kind = _timestamp_type(dtype.unit, protocol_version)
            return Take(ARROW, kind, at_type=kind)
        return _early(f"the questdb client takes tz-aware timestamps of unit ns or us only, not {dtype.unit}",
                      "Unsupported pandas dtype", TO_MICROS)
    if isinstance(dtype, pd.BooleanDtype):
        return _boolean(series, ARROW)
    if isinstance(dtype, pd.core.dtypes.dtypes.BaseMaskedDtype):  # Int8 ... UInt64, Float32, Float64
        if dtype.kind == "f":
            return Take(ARROW, "DOUBLE")
        if dtype.kind == "u" and dtype.itemsize == 8 and _unsigned_max(series) > INT64_MAX:
            return _too_big(TO_NULLABLE_FLOAT64)
        return Take(ARROW, "LONG")
    if isinstance(dtype, pd.StringDtype):
        if dtype.storage == "pyarrow":
            return Take(ARROW, "VARCHAR", string=True)
        return Take(OBJECTS, "VARCHAR", string=True, conversion=TO_ARROW_STRING)
    if isinstance(dtype, pd.CategoricalDtype):
        if of_strings(dtype):
            return Take(ARROW, "VARCHAR", string=True)
        return _early(f"the questdb client takes categories of strings only, not of {dtype.categories.dtype}",
                      "Expected a category of strings", STRING_CATEGORIES)
    if isinstance(dtype, pd.ArrowDtype):
        return _arrow_take(series, protocol_version)
    if isinstance(dtype, pd.SparseDtype):
        return _unsupported(dtype, TO_DENSE, "sparse")
    if isinstance(dtype, pd.PeriodDtype):
        return _unsupported(dtype, PERIODS_TO_TIMESTAMPS, "period")
    return _unsupported(dtype)


def _object_take(series: pd.Series, protocol_version: int) -> Take:
    """An object column, typed as the client types it: by its first non-null value, every later one having
    to be of the same kind."""
    first = next((value for value in series.array if not is_null_object(value)), None)
    if first is None:
        return Take(SKIPPED)
    kind = pd.api.types.infer_dtype(series, skipna=True)
    mixed = _refused("the questdb client types an object column by its first value and refuses another type "
                     f"further down (this one holds {kind})", "Failed to serialize value of column")
    if type(first) in (bool, int, float, str):
        return _python_scalars_take(series, first, kind, mixed)
    if type(first) is np.ndarray:
        return _arrays_take(series, first, protocol_version)
    return _other_objects_take(first, kind, mixed, protocol_version)


def _python_scalars_take(series: pd.Series, first: bool | int | float | str, kind: str, mixed: Take) -> Take:
    """An object column whose first value is a Python bool, int, float or str: every other value must be of its
    kind (pandas' ``infer_dtype``)."""
    if type(first) is bool:
        if kind != "boolean":
            return mixed
        taken = _boolean(series, OBJECTS)
        return taken if taken.refusal else Take(OBJECTS, "BOOLEAN", conversion=TO_BOOL)
    if type(first) is int:
        if kind != "integer":
            return _refused(mixed.refusal, mixed.client_error, TO_FLOAT64 if kind == "mixed-integer-float" else None)
        present = series.dropna()
        if int(present.min()) < INT64_MIN or int(present.max()) > INT64_MAX:
            return _refused("the questdb client refuses Python ints outside the 64-bit range",
                            "int too big to convert", TO_FLOAT64)
        return Take(OBJECTS, "LONG", conversion=TO_NULLABLE_INT64 if series.hasnans else TO_INT64)
    if type(first) is float:
        if kind != "floating":
            return _refused(mixed.refusal, mixed.client_error, TO_FLOAT64 if kind == "mixed-integer-float" else None)
        return Take(OBJECTS, "DOUBLE", conversion=TO_FLOAT64)
    if kind != "string":
        return _refused(mixed.refusal, mixed.client_error, TO_ARROW_STRING, string=True)
    return Take(OBJECTS, "VARCHAR", string=True, conversion=TO_ARROW_STRING)


def _arrays_take(series: pd.Series, first: np.ndarray, protocol_version: int) -> Take:
    """An object column whose first value is a numpy array: arrays of float64 throughout, under protocol
    version 2 and up, become DOUBLE[] (of as many dimensions as the first)."""
    if first.dtype != np.float64:
        return _early(f"the questdb client takes numpy arrays of float64 only, not {first.dtype}",
                      "Unsupported object column containing a numpy array", TO_FLOAT64_ARRAYS)
    if any(not (type(value) is np.ndarray and value.dtype == np.float64)
           for value in series.array if not is_null_object(value)):
        return _refused("the questdb client refuses a cell that is not a float64 numpy array in an array "
                        "column", "Failed to serialize value of column")
    if protocol_version < 2:
        return _refused("protocol version 1 has no arrays: send with protocol_version=2",
                        "does not support array datatype")
    return Take(OBJECTS, "DOUBLE" + "[]" * first.ndim)


def _other_objects_take(first: object, kind: str, mixed: Take, protocol_version: int) -> Take:
    """An object column whose first value is neither a Python scalar nor an array: datetimes are taken, bytes,
    UUIDs, addresses, dates, decimals and anything else refused."""
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
        return Take(OBJECTS, "TIMESTAMP", conversion=TO_UTC_MICROS)
    if isinstance(first, datetime.date):
        return _early("the questdb client refuses datetime.date objects", "object of type datetime.date",
                      TO_DATETIME)
    if isinstance(first, decimal.Decimal):
        return _decimals(protocol_version)
    conversion = {"integer": TO_NULLABLE_INT64, "floating": TO_FLOAT64, "string": TO_ARROW_STRING,
                  "datetime64": TO_DATETIME}.get(kind)
    return _early(f"the questdb client refuses objects of type {type(first).__module__}.{type(first).__name__}",
                  "Unsupported object column containing an object of type", conversion)


def _arrow_take(series: pd.Series, protocol_version: int) -> Take:
    dtype = series.dtype
    arrow = dtype.pyarrow_dtype
    if pa.types.is_string(arrow) or pa.types.is_large_string(arrow):
        return Take(ARROW, "VARCHAR", string=True)
    if pa.types.is_decimal(arrow):
        return _decimals(protocol_version)
    if pa.types.is_boolean(arrow):
        return _boolean(series, ARROW)
    if pa.types.is_float32(arrow) or pa.types.is_float64(arrow):
        return Take(ARROW, "DOUBLE")
    if pa.types.is_signed_integer(arrow) or pa.types.is_uint32(arrow):
        return Take(ARROW, "LONG")
    if pa.types.is_uint8(arrow) or pa.types.is_uint16(arrow):
        return _unmapped_arrow(dtype, TO_ARROW_INT64)
    if pa.types.is_uint64(arrow):
        return _unmapped_arrow(dtype, TO_ARROW_INT64 if _unsigned_max(series) <= INT64_MAX else TO_NULLABLE_FLOAT64)
    if pa.types.is_timestamp(arrow):
        if arrow.unit in ("ns", "us"):
            kind = _timestamp_type(arrow.unit, protocol_version)
            return Take(ARROW, kind, at_type=kind)
        return _unmapped_arrow(dtype, TO_MICROS)
    if pa.types.is_float16(arrow):
        return _unmapped_arrow(dtype, TO_FLOAT64)
    if pa.types.is_date(arrow):
        return _unmapped_arrow(dtype, DATES_TO_TIMESTAMPS)
    if pa.types.is_duration(arrow):
        return _unmapped_arrow(dtype, TO_SECONDS)
    return _unmapped_arrow(dtype)

