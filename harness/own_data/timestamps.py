"""Timestamps from text and numbers: how a column of a file becomes a timestamp column, decided once from its
first values and the user's flags (``--at-format``, ``--at-unit``, ``--tz``), then applied to every piece.

- Text in ISO 8601 (``T`` or a space, with or without seconds and fractions, ``Z`` or ``+hh:mm`` offsets, or a
  date alone) is parsed by Arrow's own ISO 8601 cast, pandas' ``format='ISO8601'`` taking what Arrow leaves.
- Other text: the format is inferred from the first values (pandas' ``guess_datetime_format`` of the first
  one, month first and day first, and common forms it misses: the one that parses the most of the first 1,000),
  and stated; or it is given (``--at-format``, strftime; integers too, such as ``%Y%m%d``).
- Periods: quarters (``1974Q1``) and months (``1977-Jan``, ``2020-03``) are read as their first instant
  (``harness.own_data.periods``).
- Day and month that read either way (``05.01.2015``) are decided over the whole column, by the first value that
  tells (a part above 12): in the first values where one does, else while the file is read before sending
  (``undecided`` until then); a column where none does is refused (``ambiguity``), both readings shown.
- Numbers are epoch time in the unit ``--at-unit`` names (s, ms, us, ns); numbers without it are refused, the
  unit their size suggests named.
- Text with an offset is converted to UTC. Naive text is UTC, or local time in ``--tz`` (an IANA zone): a
  time in a daylight-saving gap (one that never happened) moves forward to the gap's end, as pandas'
  ``nonexistent='shift_forward'``; a time in an overlap (one that happened twice) is daylight time until the
  file's times go back, standard time after, in the file's order.

A column's unit is microseconds unless its first values hold nanoseconds (or ``--at-unit ns``); a later value
finer than the column's unit is refused rather than cut. A value that does not parse is named by its row.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import ParameterError, UsageError, named
from harness.own_data.periods import is_month_format, is_quarter, quarter_starts
from harness.own_data.time_formats import (
    HEAD_VALUES,
    day_month_order,
    dates_only_format,
    inferred_format,
    is_date_only,
    is_iso,
    swapped,
)

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_OFFSET = re.compile(r"(Z|[+-]\d{2}(:?\d{2})?)\s*$")
_FRACTION = re.compile(r"[.,](\d+)")
_DIGITS_DATE = re.compile(r"^(19|20|21)\d{2}(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$")


class BadValue(Exception):
    """A value of a column that does not parse: its position in the piece, the value and why."""

    def __init__(self, position: int, value: object, why: str):
        super().__init__(why)
        self.position, self.value, self.why = position, value, why


def check_zone(tz: str | None) -> None:
    """``tz`` must name an IANA zone."""
    if tz is None:
        return
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ParameterError("tz", f"unknown time zone {tz!r} (an IANA name such as UTC, Europe/Paris or "
                                   f"America/New_York)") from None


def _unit_hint(present: pa.Array) -> str:
    """What the first of a numeric column's values ``present`` reads as in the epoch unit its size suggests (and as
    a date, where its digits are one), for a message."""
    if not len(present):
        return ""
    first = present[0].as_py()
    unit = _suggested_unit(first)
    example = pd.Timestamp(int(first) * (_PER_SECOND["ns"] // _PER_SECOND[unit]), unit="ns")
    hint = f" (its first value, {first}, reads as {example} with {named('at_unit')} {unit}"
    if _DIGITS_DATE.match(str(first)):
        hint += f", as {str(first)[:4]}-{str(first)[4:6]}-{str(first)[6:8]} with {named('at_format')} %Y%m%d"
    return hint + ")"


def _said(parameter: str | None, column: str) -> str:
    """How a message names ``column``: after the parameter that named it, or as a column found by its values."""
    return f"{named(parameter) if parameter else 'column'} {column}"


def _suggested_unit(value: float) -> str:
    """The epoch unit in which ``value`` is a date between 1973 and 5138, as its size suggests."""
    size = abs(value)
    return "s" if size < 1e11 else "ms" if size < 1e14 else "us" if size < 1e17 else "ns"


def _has_offset(text: str) -> bool:
    return bool(_OFFSET.search(text)) and not re.search(r"\d{4}-\d{2}-\d{2}\s*$", text)


@dataclass
class TimeParser:
    """How one column becomes timestamps. ``kind``: ``iso``, ``format`` (``format``, ``inferred`` or given),
    ``quarter`` or ``epoch`` (``epoch_unit``); ``aware``: the text carries offsets; ``unit``: the column's (us or
    ns); ``parameter``: the one that named the column (None: found by its values). An inferred format whose day
    and month read either way is ``undecided`` (month first, day first; ``format`` the first until a value
    tells), ``example`` a value of it; ``told_by``: the value that decided it."""

    column: str
    kind: str
    unit: str = "us"
    format: str | None = None
    inferred: bool = False
    epoch_unit: str | None = None
    aware: bool = False
    tz: str | None = None
    parameter: str | None = "at"
    undecided: tuple[str, str] | None = None
    example: str | None = None
    told_by: str | None = None
    # Where an overlap run stands at the end of the last piece: (in one, the latest wall time, went back).
    _overlap: tuple[bool, int, bool] = field(default=(False, 0, False), repr=False)

    @property
    def type(self) -> pa.DataType:
        """The Arrow type of the parsed column: UTC when the text had offsets or a zone was given."""
        return pa.timestamp(self.unit, "UTC" if self.aware or self.tz else None)

    def describe(self) -> str:
        if self.kind == "epoch":
            how = {"s": "epoch seconds", "ms": "epoch milliseconds", "us": "epoch microseconds",
                   "ns": "epoch nanoseconds"}[self.epoch_unit]
        elif self.kind == "iso":
            how = "ISO 8601"
        elif self.kind == "quarter":
            how = "quarters (1974Q1), each read as its first instant"
        else:
            source = "inferred from its first values" if self.inferred else named("at_format")
            how = f"format {self.format!r} ({source})"
            if self.told_by is not None:
                how += f", {day_month_order(self.format)} as {self.told_by!r} tells"
            if is_month_format(self.format):
                how += ", months read as their first instant"
        if self.aware:
            how += ", offsets converted to UTC"
        elif self.tz:
            how += f", local time in {self.tz} converted to UTC"
        elif self.kind != "epoch":
            how += ", read as UTC"
        return how

    # --- deciding, from the first values ---------------------------------------------------------------------

    @classmethod
    def decide(cls, column: str, head: pa.Array, at_format: str | None = None, at_unit: str | None = None,
               tz: str | None = None, parameter: str | None = "at") -> TimeParser:
        """The parser of ``column`` from its first values ``head`` and the user's choices; ``parameter``: the one
        that named the column (``at``, ``parse_dates``; None: a column found by its values). A column they cannot
        make timestamps of is refused in one line."""
        check_zone(tz)
        numeric = pa.types.is_integer(head.type) or pa.types.is_floating(head.type)
        present = head.drop_null()
        if at_unit is not None:
            return cls._epoch_parser(column, head, at_unit, at_format)
        if numeric and at_format is None:
            raise UsageError(f"{_said(parameter, column)}: the column holds numbers: give their epoch unit with "
                             f"{named('at_unit')} s|ms|us|ns{_unit_hint(present)}")
        if numeric and pa.types.is_integer(head.type):
            present = present.cast(pa.string())  # digits read with an explicit format (%Y%m%d ...)
        elif not (pa.types.is_string(head.type) or pa.types.is_large_string(head.type)):
            raise UsageError(f"{_said(parameter, column)}: the column is {head.type}, neither text nor numbers to "
                             f"read as timestamps")
        values = [value for value in present.to_pylist()]
        if not values:
            raise UsageError(f"{_said(parameter, column)}: the column's first rows are all empty: nothing to tell "
                             f"its timestamps by")
        first = values[0]
        if at_format is not None:
            parser = cls(column, "format", format=at_format, aware="%z" in at_format or "%Z" in at_format, tz=tz)
        elif is_iso(first):
            parser = cls(column, "iso", aware=_has_offset(first), tz=tz)
        elif is_quarter(first):
            parser = cls(column, "quarter", tz=tz)
        else:
            guessed = inferred_format(values)
            if guessed is None:
                raise UsageError(f"{_said(parameter, column)}: cannot tell the timestamp format of its first value "
                                 f"{first!r}: give it with {named('at_format')} (strftime, e.g. '%d/%m/%Y %H:%M')")
            parser = cls(column, "format", format=guessed, inferred=True, aware="%z" in guessed or "%Z" in guessed,
                         tz=tz)
            parser._day_or_month(values)
        parser.parameter = parameter
        parser._refuse_zone_twice(parameter)
        parser._check_head(values, parameter)
        return parser

    def _day_or_month(self, values: list[str]) -> None:
        """An inferred format whose day and month read either way in the first values (as many parse both
        ways) decided by the first of ``values`` that tells, or left ``undecided`` for the rest of the file."""
        other = swapped(self.format)
        if other == self.format:
            return
        sample = pd.Series(values, dtype=object)
        one, two = (self._pandas(sample, fmt) for fmt in (self.format, other))
        mine, theirs = one.notna().to_numpy(), two.notna().to_numpy()
        if mine[:HEAD_VALUES].sum() != theirs[:HEAD_VALUES].sum():
            return  # the first values tell: the format that parses the most of them
        telling = np.flatnonzero(mine != theirs)
        if len(telling):
            self.format = self.format if mine[telling[0]] else other
            self.told_by = values[telling[0]]
        else:
            self.undecided = tuple(sorted((self.format, other), key=lambda fmt: fmt.index("%d")))[::-1]
            differ = np.flatnonzero((one != two).to_numpy() & mine)  # a value the two read as two days
            self.format, self.example = self.undecided[0], values[differ[0] if len(differ) else 0]

    def _decided_on(self, series: pd.Series) -> str:
        """The format of a piece while the day and month are undecided: the first value of ``series`` that
        parses one way only decides it for the column; until one does, the month-first reading."""
        first, second = self.undecided
        mine, theirs = (self._pandas(series, fmt).notna().to_numpy() for fmt in (first, second))
        telling = np.flatnonzero(mine != theirs)
        if len(telling):
            self.format = first if mine[telling[0]] else second
            self.told_by, self.undecided = series.iloc[telling[0]], None
        return self.format

    def ambiguity(self, pin: str | None = None) -> str:
        """Why an ``undecided`` column is refused, in one line: both readings of one of its values, the flags that
        say which (``pin``: what ``--at`` names to read it so; default: the column)."""
        month_first, day_first = self.undecided
        value = self.example.strip()
        readings = [pd.to_datetime(value, format=fmt) for fmt in (month_first, day_first)]
        shown = "%Y-%m-%d %H:%M:%S" if any(stamp != stamp.normalize() for stamp in readings) else "%Y-%m-%d"
        if self.parameter == "at":
            advice = f"give its format with {named('at_format')}"
        else:
            advice = "only the designated timestamp takes a format: " if self.parameter else "give its format with "
            advice += f"{named('at')} {pin or self.column} {named('at_format')}"
        return (f"{_said(self.parameter, self.column)}: its day and month read either way in every value, "
                f"none above 12 tells which ({value!r} is {readings[0].strftime(shown)} month first, "
                f"{readings[1].strftime(shown)} day first): {advice} '{day_first}' (day first) or "
                f"'{month_first}' (month first)")

    def dates_only(self) -> bool:
        """Whether the column holds dates without a time of day (as its reading says)."""
        if self.kind == "quarter":
            return True
        if self.kind == "iso":
            return self.example is not None and is_date_only(self.example)
        return self.kind == "format" and dates_only_format(self.format)

    @classmethod
    def _epoch_parser(cls, column: str, head: pa.Array, at_unit: str, at_format: str | None) -> TimeParser:
        """Numbers as epoch time in ``at_unit``: a column of anything else, or a format given too, refused."""
        if not (pa.types.is_integer(head.type) or pa.types.is_floating(head.type)):
            present = head.drop_null()
            first = present[0].as_py() if len(present) else None
            raise UsageError(f"{named('at_unit')} {at_unit}: column {column!r} holds {_kind_of(head.type)}"
                             f"{f' ({first!r})' if first is not None else ''}, not numbers: leave "
                             f"{named('at_unit')} out")
        if at_format is not None:
            raise UsageError(f"{named('at_format')} reads text, {named('at_unit')} numbers: give one of them")
        return cls(column, "epoch", unit="ns" if at_unit == "ns" else "us", epoch_unit=at_unit, tz=None)

    def _refuse_zone_twice(self, parameter: str | None) -> None:
        """A zone for a column that carries its own offsets: refused where the user named the column, left aside
        for a column found by its values (the zone is for the naive ones)."""
        if self.aware and self.tz and parameter is None:
            self.tz = None
        if self.aware and self.tz:
            raise UsageError(f"{named('tz')} {self.tz}: column {self.column!r} carries its own offsets; "
                             f"{named('tz')} is for naive times")

    def _check_head(self, values: list[str], parameter: str | None) -> None:
        """The first value parses (the later ones are checked row by row, each named by its line); the column's
        unit is nanoseconds if one of the first values holds nanoseconds."""
        fractions = [len(match.group(1)) for value in values if (match := _FRACTION.search(value))]
        if self.kind == "format" and "%f" not in (self.format or ""):
            fractions = []
        self.unit = "ns" if fractions and max(fractions) > 6 else "us"
        self.example = self.example or values[0]
        try:
            self.parse(pa.array(values[:1], pa.string()))
        except BadValue as bad:
            if self.kind == "format" and not self.inferred:
                raise UsageError(f"{named('at_format')} {self.format!r} does not parse column {self.column!r}: its "
                                 f"first value {values[0]!r} is {bad.why}") from None
            raise UsageError(f"{_said(parameter, self.column)}: its first value {values[0]!r} does not parse as "
                             f"{'ISO 8601' if self.kind == 'iso' else repr(self.format)}: give its format with "
                             f"{named('at_format')} (strftime, e.g. '%d/%m/%Y %H:%M')") from None
        self._overlap = (False, 0, False)

    # --- parsing a piece --------------------------------------------------------------------------------------

    def parse(self, array: pa.Array, bad_rows: str = "fail") -> tuple[pa.Array, np.ndarray | None]:
        """The piece's values as timestamps of ``type``, and (``bad_rows='skip'``) a mask of the values that did
        not parse (None: all did), their timestamps null; with ``'fail'`` the first such value raises BadValue."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if self.kind == "epoch":
            result, bad = self._epoch(array), np.zeros(len(array), dtype=bool)
        elif self.kind == "quarter":
            starts, bad = quarter_starts(array)
            result = self.finished(starts)
        else:
            result, bad = self._text(array)
        if not bad.any():
            return result, None
        if bad_rows != "skip":
            position = int(np.flatnonzero(bad)[0])
            raise BadValue(position, array[position].as_py(), self._why())
        return result, bad

    def _why(self) -> str:
        if self.kind == "quarter":
            return "not a quarter (1974Q1)"
        if self.kind == "format" and self.inferred:
            return (f"not of the format {self.format!r}, inferred from the column's first values: give the right one "
                    f"with {named('at_format')}")
        if self.kind == "format":
            return f"not of the format {self.format!r}"
        return "not an ISO 8601 timestamp" + (" with an offset" if self.aware else "")

    def _epoch(self, array: pa.Array) -> pa.Array:
        factor = _PER_SECOND[self.unit] // _PER_SECOND[self.epoch_unit] if self.epoch_unit != "ns" else 1
        if pa.types.is_floating(array.type):
            values = np.round(array.to_numpy(zero_copy_only=False) * factor)
            mask = np.isnan(values)
            return pa.array(np.where(mask, 0, values).astype(np.int64), mask=mask).cast(self.type)
        return pc.multiply_checked(array.cast(pa.int64()), factor).cast(pa.int64()).view(self.type) \
            if factor != 1 else array.cast(pa.int64()).view(self.type)

    def _text(self, array: pa.Array) -> tuple[pa.Array, np.ndarray]:
        array = array.cast(pa.string())
        if self.kind == "iso":
            try:
                parsed = pc.cast(pc.utf8_trim_whitespace(array), pa.timestamp("ns", "UTC" if self.aware else None))
                return self.finished(parsed), np.zeros(len(array), dtype=bool)
            except pa.ArrowInvalid:
                pass  # a form Arrow does not take, or a bad value: pandas decides
        series = pd.Series(array.to_numpy(zero_copy_only=False), dtype=object)
        fmt = "ISO8601" if self.kind == "iso" else self._decided_on(series) if self.undecided else self.format
        parsed = self._pandas(series, fmt)
        bad = array.is_valid().to_numpy(zero_copy_only=False) & parsed.isna().to_numpy()
        return self.finished(pa.array(parsed.dt.as_unit("ns"), from_pandas=True)), bad

    def _pandas(self, series: pd.Series, fmt: str) -> pd.Series:
        """``series`` parsed by pandas, a value that does not parse (or is of another kind: naive among aware)
        NaT."""
        try:
            return pd.to_datetime(series, format=fmt, utc=self.aware, errors="coerce")
        except (ValueError, TypeError):
            # Mixed naive and aware text raises for the whole piece: value by value, then.
            def one(value):
                try:
                    stamp = pd.to_datetime(value, format=fmt, utc=self.aware)
                    return stamp if (stamp.tzinfo is not None) == self.aware else pd.NaT
                except (ValueError, TypeError):
                    return pd.NaT
            return pd.Series([one(value) if value is not None else pd.NaT for value in series],
                             dtype=f"datetime64[ns{', UTC' if self.aware else ''}]")

    def finished(self, parsed: pa.Array) -> pa.Array:
        """Parsed nanoseconds to the column's unit (a finer value refused), naive local time to UTC."""
        if self.tz and not self.aware:
            parsed = self._localised(parsed)
        if self.unit == "us":
            ints = parsed.cast(pa.int64())
            finer = pc.fill_null(pc.not_equal(pc.multiply(pc.divide(ints, 1000), 1000), ints), False)
            if pc.any(finer).as_py():
                position = int(np.flatnonzero(finer.to_numpy(zero_copy_only=False))[0])
                raise BadValue(position, None, "it holds nanoseconds, and the column's first values hold "
                                               "microseconds at most (its unit is decided by them)")
            parsed = pc.divide(ints, 1000).view(pa.timestamp("us", parsed.type.tz))
        return parsed.cast(self.type) if parsed.type != self.type else parsed

    def _localised(self, parsed: pa.Array) -> pa.Array:
        """Naive wall times in ``tz`` as UTC: gaps shifted forward, overlaps daylight time until the times go back."""
        wall = pd.Series(parsed.to_pandas(), dtype="datetime64[ns]")
        marked = wall.dt.tz_localize(self.tz, ambiguous="NaT", nonexistent="shift_forward")
        twice = (marked.isna() & wall.notna()).to_numpy()
        positions = np.flatnonzero(twice)
        if not len(positions):
            self._overlap = (False, 0, False)
            return pa.array(marked.dt.tz_convert("UTC").dt.as_unit("ns"), from_pandas=True)
        daylight = np.zeros(len(wall), dtype=bool)
        in_run, latest, went_back = self._overlap
        if positions[0] != 0:
            in_run = False
        values = wall.to_numpy().astype("datetime64[ns]").astype(np.int64)
        previous = None
        for position in positions:
            if previous is not None and position != previous + 1:
                in_run = False
            if not in_run:
                in_run, latest, went_back = True, values[position], False
            elif values[position] < latest:
                went_back = True
            latest = max(latest, values[position])
            daylight[position] = not went_back
            previous = position
        self._overlap = (in_run and positions[-1] == len(wall) - 1, latest, went_back)
        localised = wall.dt.tz_localize(self.tz, ambiguous=daylight, nonexistent="shift_forward")
        return pa.array(localised.dt.tz_convert("UTC").dt.as_unit("ns"), from_pandas=True)


def _kind_of(arrow_type: pa.DataType) -> str:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type):
        return "timestamps already"
    return str(arrow_type)
