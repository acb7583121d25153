"""A timestamp written in several columns, joined into one: a date and a time of day beside it (``Date`` and
``Time``), or its parts (year, month, day, hour, minute, second), named ``--at Date+Time``,
``--at year+month+day+hour`` or found (``harness.own_data.time_columns``). The joined column takes the first
part's place, named by the parts joined with ``_`` (``Date_Time``), as pandas' ``parse_dates`` names it; the parts
are not sent apart.

- The date is read as a column alone would be (``harness.own_data.timestamps``: ISO 8601, an inferred format whose
  day and month are decided over the whole column, or ``--at-format``, the date's format).
- A time of day is ``H:MM``, ``HH:MM:SS``, with a fraction, or a 12-hour clock (``12:00 AM``, ``1:30 PM``);
  ``24:00`` is the next midnight; a whole number is an hour (``0`` to ``24``).
- Parts are whole numbers (or text of one); the hour may be 24 (the next midnight).
- A typed date (Arrow's ``date32``/``date64``, as Parquet and Arrow IPC hold them) beside a typed time of day
  (``time32``/``time64``) is joined as its text would be.

The wall time so joined is UTC, or local time in ``--tz``, as a single column's is. A text part's ``NA``, ``null``,
``NaN`` ... are nulls, as a single timestamp column's are (``harness.own_data.placeholders.as_nulls``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import named
from harness.own_data.placeholders import as_nulls
from harness.own_data.timestamps import BadValue, TimeParser

# A time of day (Arrow's regular expressions: RE2): hours, minutes, seconds and a fraction, a 12-hour clock's half.
_CLOCK = (r"^\s*(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<fraction>\d{1,9}))?)?"
          r"\s*(?P<half>[AaPp])?\.?(?:[Mm]\.?)?\s*$")
PARTS = ("year", "month", "day", "hour", "minute", "second")
_NANOS = {"hour": 3_600 * 10**9, "minute": 60 * 10**9, "second": 10**9}
# The share of a column's first values that must be times of day for it to be found as one.
CLOCK_SHARE = 0.9


def clock_nanos(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Nanoseconds since midnight of each time of day in ``array`` (text, or whole hours), and a mask of the
    values that are none (their nanoseconds 0); a null is 0, not marked."""
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        hours = pd.to_numeric(pd.Series(array.to_pandas()), errors="coerce").to_numpy(dtype=float)
        present = ~np.isnan(hours)
        bad = present & ((hours != np.round(hours)) | (hours < 0) | (hours > 24))
        return np.where(present & ~bad, hours, 0).astype(np.int64) * _NANOS["hour"], bad
    text = array.cast(pa.string())
    found = pc.extract_regex(text, _CLOCK)
    matched = found.is_valid().to_numpy(zero_copy_only=False)
    fields = dict(zip((item.name for item in found.type), found.flatten()))
    number = {name: _digits(fields[name]) for name in ("hour", "minute", "second")}
    fraction = _digits(pc.utf8_rpad(pc.fill_null(fields["fraction"], ""), 9, "0"))
    half = pc.utf8_lower(pc.fill_null(fields["half"], "")).to_numpy(zero_copy_only=False)
    hour = number["hour"]
    twelve = half != ""
    valid = matched & (number["minute"] < 60) & (number["second"] < 60)
    valid &= np.where(twelve, (hour >= 1) & (hour <= 12), (hour < 24) | (
        (hour == 24) & (number["minute"] == 0) & (number["second"] == 0) & (fraction == 0)))
    hour = np.where(twelve, hour % 12 + np.where(half == "p", 12, 0), hour)
    nanos = hour * _NANOS["hour"] + number["minute"] * _NANOS["minute"] + number["second"] * _NANOS["second"]
    bad = text.is_valid().to_numpy(zero_copy_only=False) & ~valid
    return np.where(valid, nanos + fraction, 0), bad


def _digits(array: pa.Array) -> np.ndarray:
    """Text of digits (empty or null: 0) as integers."""
    filled = pc.if_else(pc.equal(pc.fill_null(array, ""), ""), "0", pc.fill_null(array, "0"))
    return pc.cast(filled, pa.int64()).to_numpy(zero_copy_only=False)


def looks_like_clock(values: list) -> bool:
    """Whether a text column whose first values are ``values`` holds times of day: the first, and nine in ten."""
    present = [value for value in values if value is not None]
    if not present or not all(isinstance(value, str) for value in present):
        return False
    _, bad = clock_nanos(pa.array(present, pa.string()))
    return not bad[0] and (~bad).mean() >= CLOCK_SHARE


@dataclass
class JoinedTime:
    """How the columns ``parts`` become one timestamp column ``name`` (``spec``: as the user names it,
    ``Date+Time``): a date (``date``: its column's parser) and a time of day, or parts of a timestamp (``date``
    None); ``zone``: the zone and unit the joined wall times are finished in; ``found``: found by its columns,
    not named. Parses a struct of the parts (``merged``), as ``TimeParser`` parses one column."""

    spec: str
    parts: tuple[str, ...]
    name: str
    date: TimeParser | None
    zone: TimeParser
    found: bool = False
    typed: bool = False  # a typed date and a typed time of day (``date``: None)

    @property
    def type(self) -> pa.DataType:
        return self.zone.type

    @property
    def undecided(self) -> tuple[str, str] | None:
        return None if self.date is None else self.date.undecided

    def ambiguity(self) -> str:
        return self.date.ambiguity(self.spec)

    def describe(self) -> str:
        zone = f"local time in {self.zone.tz} converted to UTC" if self.zone.tz else "read as UTC"
        if self.typed:
            return f"the date and the time of day (typed columns) joined, {zone}"
        if self.date is None:
            return f"{', '.join(PARTS[:len(self.parts)])} joined, {zone}"
        return f"the date ({self.date.describe().rsplit(', ', 1)[0]}) and the time of day joined, {zone}"

    def pin(self) -> str:
        """The flags that read the columns so whatever they hold (library names, ``harness.errors.named``)."""
        fmt = self.date.format if self.date is not None and self.date.kind == "format" else None
        # Quoted for a shell where the names need it (a TMY3 file's 'Date (MM/DD/YYYY)'), as inspect's flags are.
        return f"{named('at')} {shlex.quote(self.spec)}" + (f" {named('at_format')} '{fmt}'" if fmt else "")

    def merged(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with its parts one struct column ``name``, in the first part's place."""
        if not set(self.parts) <= set(batch.schema.names):
            return batch
        first = min(batch.schema.get_field_index(part) for part in self.parts)
        struct = pa.StructArray.from_arrays([batch.column(part) for part in self.parts], names=list(self.parts))
        arrays, names = [], []
        for index, (name, column) in enumerate(zip(batch.schema.names, batch.columns)):
            if index == first:
                arrays.append(struct)
                names.append(self.name)
            if name not in self.parts:
                arrays.append(column)
                names.append(name)
        return pa.RecordBatch.from_arrays(arrays, names=names)

    def parse(self, array: pa.Array, bad_rows: str = "fail") -> tuple[pa.Array, np.ndarray | None]:
        """The struct of the parts as timestamps of ``type``, as ``TimeParser.parse`` (a text part's placeholders
        nulls); a value that does not parse is given as the parts' text joined by spaces."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        columns = [as_nulls(column) if pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
                   else column for column in array.flatten()]
        if self.typed:
            wall, bad = _of_typed_date_and_time(columns[0], columns[1])
        elif self.date is None:
            wall, bad = self._of_parts(columns)
        else:
            wall, bad = self._of_date_and_time(columns[0], columns[1])
        result = self.zone.finished(wall)
        if not bad.any():
            return result, None
        if bad_rows != "skip":
            position = int(np.flatnonzero(bad)[0])
            shown = " ".join("" if column[position].as_py() is None else str(column[position].as_py())
                             for column in columns)
            raise BadValue(position, shown, f"not a {'date and a time of day' if self.date or self.typed else 'timestamp'} as "
                                            f"the columns {' + '.join(self.parts)} were read")
        return result, bad

    def _of_date_and_time(self, dates: pa.Array, clocks: pa.Array) -> tuple[pa.Array, np.ndarray]:
        day, bad_day = self.date.parse(dates, "skip")
        bad_day = np.zeros(len(dates), dtype=bool) if bad_day is None else bad_day
        nanos, bad_clock = clock_nanos(clocks)
        midnight = pc.fill_null(day.cast(pa.int64()), 0).to_numpy(zero_copy_only=False) * (
            1000 if self.date.unit == "us" else 1)
        missing = ~day.is_valid().to_numpy(zero_copy_only=False) | ~clocks.is_valid().to_numpy(zero_copy_only=False)
        bad = bad_day | bad_clock
        wall = pa.array(midnight + nanos, pa.int64(), mask=missing | bad).view(pa.timestamp("ns"))
        return wall, bad

    def _of_parts(self, columns: list[pa.Array]) -> tuple[pa.Array, np.ndarray]:
        values = {role: pd.to_numeric(pd.Series(column.to_pandas()), errors="coerce")
                  for role, column in zip(PARTS, columns)}
        missing = np.logical_or.reduce([series.isna().to_numpy() for series in values.values()])
        frame = pd.DataFrame({role: series.fillna(1 if role in ("month", "day") else 0) for role, series in
                              values.items()})
        hour = frame.get("hour")
        next_day = None if hour is None else (hour == 24).to_numpy()
        if next_day is not None:
            frame["hour"] = hour.where(hour != 24, 0)
        stamps = pd.to_datetime(frame, errors="coerce")
        if next_day is not None:
            stamps = stamps + pd.to_timedelta(next_day.astype(np.int64), unit="D")
        present = [column.is_valid().to_numpy(zero_copy_only=False) for column in columns]
        bad = (stamps.isna().to_numpy() & ~missing) | np.logical_or.reduce(
            [given & series.isna().to_numpy() for given, series in zip(present, values.values())])
        wall = pa.array(stamps.dt.as_unit("ns"), from_pandas=True)
        return pc.if_else(pa.array(missing | bad), pa.nulls(len(wall), wall.type), wall), bad


def _of_typed_date_and_time(dates: pa.Array, clocks: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Wall times (nanoseconds) of a typed date and a typed time of day; a null in either is a null. Typed values
    are all valid: none is bad."""
    midnight = pc.fill_null(dates.cast(pa.timestamp("ns")).cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    nanos = pc.fill_null(clocks.cast(pa.time64("ns")).cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
    missing = ~dates.is_valid().to_numpy(zero_copy_only=False) | ~clocks.is_valid().to_numpy(zero_copy_only=False)
    wall = pa.array(midnight + nanos, pa.int64(), mask=missing).view(pa.timestamp("ns"))
    return wall, np.zeros(len(dates), dtype=bool)
