"""A DataFrame's rows as the PGWire drivers bind them: a tuple of Python values per row, a null as ``None``.

A timestamp becomes a naive ``datetime`` in UTC: microseconds, as PGWire's TIMESTAMP carries them (a
nanosecond part is lost here, and the exactness check says so). A category or string becomes ``str``, a float
NaN, ``NaT`` or ``pd.NA`` becomes ``None``.
"""

from __future__ import annotations

import pandas as pd


def python_rows(frame: pd.DataFrame, columns: list[tuple[str, str]]) -> list[tuple]:
    """``frame``'s ``columns`` (name, SQL type), row by row."""
    return list(zip(*(_values(frame[name], sql_type) for name, sql_type in columns)))


def _values(series: pd.Series, sql_type: str) -> list:
    if sql_type.startswith("TIMESTAMP") or isinstance(series.dtype, pd.DatetimeTZDtype) or \
            pd.api.types.is_datetime64_any_dtype(series.dtype):
        stamps = pd.to_datetime(series, utc=True).dt.tz_localize(None)
        return [None if stamp is pd.NaT else stamp.to_pydatetime(warn=False) for stamp in stamps]
    values = series.astype(object)
    return values.where(series.notna(), None).tolist()
