"""The conversions the dtype audit proposes (``harness.own_data.audit``): each the line a user would write and the
function that makes it, which ``--convert-dtypes`` applies to each piece: pandas lines, and for QWP, which takes a
pyarrow Table or a Polars frame as it is, lines in those libraries too."""

from __future__ import annotations

import decimal
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa


@dataclass(frozen=True)
class Conversion:
    """A conversion of one column: the line a user would write (``{c}`` stands for the column's name) and the
    function that does it (to a pandas Series; to the column of a pyarrow Table or a Polars frame for their lines)."""

    code: str
    convert: Callable

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

# QWP's fixes (``harness.own_data.qwp_dtypes``): pandas lines for the columns only QWP refuses, and, for a pyarrow
# Table or a Polars frame handed to QWP as it is, the line in that library (``convert`` then takes its column: a
# ``pyarrow.ChunkedArray``, a ``polars.Series``).
TO_ARROW_BINARY = Conversion("df[{c}] = df[{c}].astype(pd.ArrowDtype(pa.binary()))",
                             lambda s: s.astype(pd.ArrowDtype(pa.binary())))
# Integers past LONG's range kept exact, as decimals (QuestDB's DECIMAL, which QWP makes).
TO_ARROW_DECIMALS = Conversion("df[{c}] = df[{c}].astype(pd.ArrowDtype(pa.decimal128(20, 0)))",
                               lambda s: s.astype(pd.ArrowDtype(pa.decimal128(20, 0))))
TO_PYTHON_DECIMALS = Conversion("df[{c}] = df[{c}].map(decimal.Decimal, na_action='ignore')",
                                lambda s: s.map(decimal.Decimal, na_action="ignore"))
TO_ARROW_FLOAT64_LISTS = Conversion("df[{c}] = df[{c}].astype(pd.ArrowDtype(pa.list_(pa.float64())))",
                                    lambda s: s.astype(pd.ArrowDtype(pa.list_(pa.float64()))))
# pandas casts no string_view column (it has no kernel for them): pyarrow does.
VIEWS_TO_ARROW_STRINGS = Conversion(
    "df[{c}] = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(df[{c}].array).cast(pa.string())), index=df.index)",
    lambda s: pd.Series(pd.arrays.ArrowExtensionArray(pa.array(s.array).cast(pa.string())), index=s.index))
TO_ARROW_STRINGS = Conversion("df[{c}] = df[{c}].astype(pd.ArrowDtype(pa.string()))",
                              lambda s: s.astype(pd.ArrowDtype(pa.string())))


def _table_cast(code: str, target: Callable[[], pa.DataType]) -> Conversion:
    return Conversion("table = table.set_column(table.schema.get_field_index({c}), {c}, table[{c}].cast(" + code
                      + "))", lambda column: column.cast(target()))


def _polars_cast(code: str, target: Callable) -> Conversion:
    def cast(series):
        import polars as pl

        return series.cast(target(pl))
    return Conversion("df = df.with_columns(pl.col({c}).cast(" + code + "))", cast)


TABLE_TO_DECIMALS = _table_cast("pa.decimal128(20, 0)", lambda: pa.decimal128(20, 0))
TABLE_TO_BINARY = _table_cast("pa.binary()", pa.binary)
TABLE_TO_STRING = _table_cast("pa.string()", pa.string)
TABLE_TO_FLOAT64_LISTS = _table_cast("pa.list_(pa.float64())", lambda: pa.list_(pa.float64()))
TABLE_TO_MICROS = _table_cast("pa.timestamp('us')", lambda: pa.timestamp("us"))
POLARS_TO_DECIMALS = _polars_cast("pl.Decimal(38, 0)", lambda pl: pl.Decimal(38, 0))
POLARS_TO_STRING = _polars_cast("pl.String", lambda pl: pl.String)
POLARS_TO_FLOAT64_LISTS = _polars_cast("pl.List(pl.Float64)", lambda pl: pl.List(pl.Float64))
POLARS_TO_MICROS = _polars_cast("pl.Datetime('us')", lambda pl: pl.Datetime("us"))
