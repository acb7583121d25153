"""Periods written as text, each read as its first instant: quarters (``1974Q1``, ``1974-Q1``, ``Q1 1974``) by
their own pattern, months (``1977-Jan``, ``2020-03``, ``Jan 1977``) by the strftime forms here, which format
inference (``harness.own_data.timestamps``) tries beside the others. A format without a day is a month's."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Months as text, tried by format inference after pandas' own guesses (which find ``%Y-%m`` alone).
MONTH_FORMATS = ("%Y-%b", "%b-%Y", "%b %Y", "%B %Y", "%Y-%B", "%Y/%m", "%m/%Y", "%Y-%m")
# A quarter: its year then its number, or its number then its year (Arrow's regular expressions: RE2).
_YEAR_FIRST = r"^\s*(?P<year>\d{4})\s*[-/ ]?\s*[Qq](?P<quarter>[1-4])\s*$"
_QUARTER_FIRST = r"^\s*[Qq](?P<quarter>[1-4])\s*[-/ ]?\s*(?P<year>\d{4})\s*$"
_QUARTER = re.compile(f"{_YEAR_FIRST}|{_QUARTER_FIRST}".replace("?P<year>", "").replace("?P<quarter>", ""))
_DAY_DIRECTIVES = ("%d", "%j", "%a", "%A", "%U", "%W", "%c", "%x", "%F", "%D")


def is_quarter(text: str) -> bool:
    """Whether ``text`` names a quarter (``1974Q1``)."""
    return bool(_QUARTER.match(text))


def is_month_format(fmt: str) -> bool:
    """Whether a strftime format names months: a year and a month, no day."""
    return "%Y" in fmt and ("%m" in fmt or "%b" in fmt or "%B" in fmt) and not any(
        directive in fmt for directive in _DAY_DIRECTIVES)


def quarter_starts(array: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Each quarter's first instant (naive, nanoseconds), and a mask of the values that name no quarter (their
    instants null)."""
    text = array.cast(pa.string())
    years, quarters = np.zeros(len(text), dtype=np.int64), np.zeros(len(text), dtype=np.int64)
    found = np.zeros(len(text), dtype=bool)
    for pattern in (_YEAR_FIRST, _QUARTER_FIRST):
        parts = pc.extract_regex(text, pattern)
        matched = parts.is_valid().to_numpy(zero_copy_only=False) & ~found
        if matched.any():
            fields = dict(zip((item.name for item in parts.type), parts.flatten()))  # a row not matched: null
            year = pc.cast(pc.fill_null(fields["year"], "1970"), pa.int64()).to_numpy(zero_copy_only=False)
            quarter = pc.cast(pc.fill_null(fields["quarter"], "1"), pa.int64()).to_numpy(zero_copy_only=False)
            years[matched], quarters[matched] = year[matched], quarter[matched]
            found |= matched
    months = (years - 1970) * 12 + (quarters - 1) * 3
    starts = months.astype("datetime64[M]").astype("datetime64[ns]").astype(np.int64)
    bad = text.is_valid().to_numpy(zero_copy_only=False) & ~found
    return pa.array(starts, pa.int64(), mask=~found).view(pa.timestamp("ns")), bad
