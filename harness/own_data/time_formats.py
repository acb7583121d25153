"""The formats of text timestamps: ISO 8601's shape, the forms tried beside pandas' guesses, the one inferred from
a column's first values (``inferred_format``), whether a text column holds timestamps at all (``looks_like_times``),
whether a format or a value holds dates alone, and a format's day and month in each other's place (``swapped``:
the other reading of a value such as ``05.01.2015``)."""

from __future__ import annotations

import re
import warnings

import pandas as pd

from harness.own_data.periods import MONTH_FORMATS, is_quarter

# ISO 8601's shape: a date (year-month-day), then optionally T or a space and a time.
_ISO = re.compile(r"^\s*[+-]?\d{4}-\d{2}-\d{2}([T ]\d{2}(:?\d{2}(:?\d{2}([.,]\d+)?)?)?)?"
                  r"\s*(Z|[+-]\d{2}(:?\d{2})?)?\s*$")
# Forms of text timestamps pandas' guess from one value misses (12-hour clocks, day-first dates it reads month
# first), tried after its guesses; the one that parses the most first values wins.
COMMON_FORMATS = ("%m/%d/%Y %I:%M:%S %p", "%m/%d/%Y %I:%M %p", "%d/%m/%Y %I:%M:%S %p", "%m/%d/%Y %H:%M:%S",
                  "%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%d/%m/%Y %H:%M", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y %H:%M:%S",
                  "%d.%m.%Y %H:%M", "%d.%m.%Y", "%Y%m%d%H%M%S", "%Y%m%d %H:%M:%S", "%Y%m%d", *MONTH_FORMATS)
# A format's time of day: without any of these, a format reads dates alone.
_CLOCK_DIRECTIVES = ("%H", "%I", "%M", "%S", "%p", "%f", "%T", "%X", "%c", "%s", "%R")
_DATE_ONLY = re.compile(r"^\s*[+-]?\d{4}-\d{2}-\d{2}\s*$")
# First values a format is judged by, and the share of them that must parse for a text column to hold timestamps.
HEAD_VALUES = 1_000
TIMES_SHARE = 0.9


def inferred_format(values: list[str]) -> str | None:
    """The format of text timestamps, from their first values: of pandas' guesses from the first value (month
    first, then day first) and the common forms pandas cannot guess (``COMMON_FORMATS``), the one that parses the
    most of ``values`` (the first value among them; on a tie, the earlier)."""
    first = values[0].strip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns when a day-first guess is not day first
        guesses = [pd.tseries.api.guess_datetime_format(first, dayfirst=dayfirst) for dayfirst in (False, True)]
    candidates = list(dict.fromkeys(guess for guess in (*guesses, *COMMON_FORMATS) if guess))
    sample = pd.Series(values[:HEAD_VALUES], dtype=object)
    best, best_count = None, 0
    for candidate in candidates:
        try:
            parsed = pd.to_datetime(sample, format=candidate, errors="coerce",
                                    utc="%z" in candidate or "%Z" in candidate)
        except (ValueError, TypeError):
            continue
        if pd.isna(parsed.iloc[0]):
            continue
        count = int(parsed.notna().sum())
        if count > best_count:
            best, best_count = candidate, count
    return best


def looks_like_times(values: list[str]) -> bool:
    """Whether a text column whose first values are ``values`` holds timestamps: the first of the first 1,000 and
    nine in ten of them are ISO 8601, or parse with the format inferred from them (``inferred_format``); a bare
    number never does. (A later value that does not parse is then named by its line, or skipped.)"""
    values = [value for value in values[:HEAD_VALUES] if value is not None]
    if not values:
        return False
    if is_iso(values[0]) and sum(map(is_iso, values)) >= TIMES_SHARE * len(values):
        return True
    if is_quarter(values[0]) and sum(map(is_quarter, values)) >= TIMES_SHARE * len(values):
        return True
    first = values[0].strip()
    if not re.search(r"\d", first) or re.fullmatch(r"[+-]?\d+([.,]\d+)?", first):
        return False
    fmt = inferred_format(values)
    if fmt is None:
        return False
    parsed = pd.to_datetime(pd.Series(values, dtype=object), format=fmt, errors="coerce",
                            utc="%z" in fmt or "%Z" in fmt)
    return bool(parsed.notna().mean() >= TIMES_SHARE)


def is_iso(text: str) -> bool:
    """Whether ``text`` is an ISO 8601 date or timestamp, in one of the forms parsed as such."""
    return bool(_ISO.match(text))


def is_date_only(text: str) -> bool:
    """Whether ``text`` is an ISO 8601 date without a time of day."""
    return bool(_DATE_ONLY.match(text))


def dates_only_format(fmt: str) -> bool:
    """Whether a strftime format reads dates without a time of day."""
    return not any(directive in fmt for directive in _CLOCK_DIRECTIVES)


def swapped(fmt: str) -> str:
    """``fmt`` with its day and month in each other's place: itself where it lacks either, or where the year comes
    first (year, month, day is the only order written so)."""
    if "%d" not in fmt or "%m" not in fmt or ("%Y" in fmt and fmt.index("%Y") < min(fmt.index("%d"),
                                                                                       fmt.index("%m"))):
        return fmt
    return fmt.replace("%d", "\0").replace("%m", "%d").replace("\0", "%m")


def day_month_order(fmt: str) -> str:
    """Whether ``fmt`` reads the day first or the month first."""
    return "day first" if fmt.index("%d") < fmt.index("%m") else "month first"
