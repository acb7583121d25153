"""How the user's table is partitioned (QuestDB's ``PARTITION BY``): the unit the user names (``--partition-by``),
or one chosen from the data's time span, rows and width; and the limit that bounds it, the memory mappings a read
of the whole table needs against the server's ``vm.max_map_count``.

QuestDB keeps each column of a partition in a file of its own (two for a column of variable size: its data and its
offsets) and maps every file a query touches: a read of the whole table maps about partitions × those files. Linux
refuses a process more mappings than ``vm.max_map_count`` (65,530 by default), and the server maps other tables,
WAL segments and its own code besides: one table is given half of it (``MAP_SHARE``). Within that, the default is
the finest unit whose partitions hold ``TARGET_VALUES`` values or more (rows × columns); data too small for any is
partitioned by the finest unit of the fewest partitions (a day of data by DAY, twenty years by YEAR). NONE is never
chosen: QuestDB's WAL tables need a partitioning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.errors import named
from harness.own_data.choices import PARTITION_UNITS

# The default's candidates, finest first: every unit but NONE.
NONE = "NONE"
UNITS = tuple(unit for unit in PARTITION_UNITS if unit != NONE)
_PLURAL = {"HOUR": "hours", "DAY": "days", "WEEK": "weeks", "MONTH": "months", "YEAR": "years", NONE: "partitions"}
_SINGULAR = {"HOUR": "an hour", "DAY": "a day", "WEEK": "a week", "MONTH": "a month", "YEAR": "a year",
             NONE: "in one partition"}
_LENGTHS = {"HOUR": pd.Timedelta(hours=1), "DAY": pd.Timedelta(days=1), "WEEK": pd.Timedelta(days=7)}

MAP_COUNT_FILE = "/proc/sys/vm/max_map_count"
LINUX_DEFAULT_MAP_COUNT = 65_530
# The share of the server's mappings one table's read may take (its other tables, WAL segments and code the rest).
MAP_SHARE = 0.5
# Values (rows × columns) a partition holds at least, where the data has that many: ~2 MB of 8-byte values, column
# files of a size a read streams rather than opens one by one.
TARGET_VALUES = 250_000
# Column types of variable size: a file of data and one of offsets in each partition.
_TWO_FILES = ("VARCHAR", "STRING", "BINARY")


@dataclass(frozen=True)
class MapLimit:
    """The server's ``vm.max_map_count`` and where it came from (``said``: read, or assumed and why)."""

    count: int
    said: str

    @property
    def budget(self) -> int:
        return int(self.count * MAP_SHARE)

    def described(self) -> dict:
        return {"max_map_count": self.count, "from": self.said}


def map_limit(local: bool, path: str = MAP_COUNT_FILE) -> MapLimit:
    """The server's limit: read from ``path`` where the server is on this machine (a native or Docker server shares
    its kernel), else Linux's default, assumed and said so."""
    if not local:
        return MapLimit(LINUX_DEFAULT_MAP_COUNT, "Linux's default, assumed: the server is not on this machine")
    try:
        return MapLimit(int(Path(path).read_text().strip()), f"read from {path}")
    except (OSError, ValueError):
        return MapLimit(LINUX_DEFAULT_MAP_COUNT, f"Linux's default, assumed: {path} could not be read")


@dataclass(frozen=True)
class TimeSpan:
    """The data's designated timestamps: the least and the greatest (UTC), its rows, and what they were found from."""

    first: pd.Timestamp
    last: pd.Timestamp
    rows: int
    basis: str

    def described(self) -> dict:
        return {"first": self.first.isoformat(), "last": self.last.isoformat(), "rows": self.rows,
                "from": self.basis}


def utc(value) -> pd.Timestamp:
    """A timestamp as QuestDB partitions it: UTC, naive."""
    stamp = pd.Timestamp(value)
    return stamp.tz_convert("UTC").tz_localize(None) if stamp.tz is not None else stamp


def partitions(unit: str, span: TimeSpan) -> int:
    """Partitions of ``unit`` between the span's first and last timestamps (at most: a gap leaves some out); QuestDB's
    weeks start on Monday."""
    first, last = span.first, span.last
    if unit == NONE:
        return 1
    if unit == "YEAR":
        return last.year - first.year + 1
    if unit == "MONTH":
        return (last.year * 12 + last.month) - (first.year * 12 + first.month) + 1
    start, end = first.floor("h"), last.floor("h")
    if unit != "HOUR":
        start, end = first.normalize(), last.normalize()
    if unit == "WEEK":
        start, end = start - pd.Timedelta(days=start.weekday()), end - pd.Timedelta(days=end.weekday())
    return (end - start) // _LENGTHS[unit] + 1


def files_per_partition(column_types: list[str]) -> int:
    """The files a partition holds: one a column, two for a column of variable size."""
    return sum(2 if sql_type in _TWO_FILES else 1 for sql_type in column_types)


@dataclass(frozen=True)
class Partitioning:
    """The table's partitioning: its unit (``by``), whether the default chose it (else the user's --partition-by),
    the line a run prints of it (``line``: the choice and why), a warning where the user's unit needs more
    mappings than the server allows a table, and what it was decided from."""

    by: str
    chosen: bool
    line: str
    warning: str | None
    mappings: int | None
    limit: MapLimit
    span: TimeSpan | None

    def described(self) -> dict:
        """As the record keeps it."""
        return {"by": self.by, "chosen": self.chosen, "why": self.line, "warning": self.warning,
                "mappings": self.mappings, **self.limit.described(),
                "span": self.span.described() if self.span is not None else None}


def _counted(unit: str, span: TimeSpan) -> str:
    count = partitions(unit, span)
    return f"{count:,} {_PLURAL[unit] if count != 1 else _PLURAL[unit].removesuffix('s')}"


def _over(unit: str, span: TimeSpan, columns: int, files: int, limit: MapLimit) -> str:
    return (f"{_counted(unit, span)} × {columns} columns would need ~{partitions(unit, span) * files:,} mappings, "
            f"over half the server's vm.max_map_count {limit.count:,} ({limit.said})")


def _mappings_said(unit: str, span: TimeSpan, columns: int, files: int, limit: MapLimit) -> str:
    return (f"{_counted(unit, span)} × {columns} columns need ~{partitions(unit, span) * files:,} mappings of the "
            f"server's {limit.count:,} (vm.max_map_count, {limit.said})")


def choose(span: TimeSpan, column_types: list[str], limit: MapLimit) -> Partitioning:
    """The default: the finest unit whose partitions hold ``TARGET_VALUES`` values or more and whose read fits the
    server's mappings (``MAP_SHARE`` of them); where none holds that many, the finest of the fewest partitions; where
    even YEAR does not fit, YEAR, with a warning."""
    columns, files = len(column_types), files_per_partition(column_types)
    fitting = [unit for unit in UNITS if partitions(unit, span) * files <= limit.budget]
    if not fitting:
        warning = "YEAR: " + _over("YEAR", span, columns, files, limit) + ": a read of the whole table may fail"
        return Partitioning("YEAR", True, f"partitioned by YEAR, the coarsest unit; {warning}", warning,
                            partitions("YEAR", span) * files, limit, span)
    values = {unit: span.rows / partitions(unit, span) * columns for unit in fitting}
    large = [unit for unit in fitting if values[unit] >= TARGET_VALUES]
    if large:
        by = large[0]
        why = (f"~{span.rows // partitions(by, span):,} rows × {columns} columns {_SINGULAR[by]}, the finest unit "
               f"whose partitions hold {TARGET_VALUES:,} values or more")
    else:
        fewest = min(partitions(unit, span) for unit in fitting)
        by = next(unit for unit in fitting if partitions(unit, span) == fewest)
        why = (f"{span.rows:,} rows × {columns} columns: no unit's partitions hold {TARGET_VALUES:,} values, "
               f"{by} the finest of the fewest ({fewest:,})")
    excluded = [unit for unit in UNITS[:UNITS.index(by)] if unit not in fitting]
    mapped = (f"{excluded[-1]}: {_over(excluded[-1], span, columns, files, limit)}" if excluded
              else _mappings_said(by, span, columns, files, limit))
    line = f"partitioned by {by}: {why}; {mapped}; from {span.basis}"
    return Partitioning(by, True, line, None, partitions(by, span) * files, limit, span)


def given(unit: str, span: TimeSpan, column_types: list[str], limit: MapLimit) -> Partitioning:
    """The user's unit, with a warning where a read of the whole table would need more mappings than the server
    allows it (it is not refused: the user may know better, a server's limit raised)."""
    columns, files = len(column_types), files_per_partition(column_types)
    mappings = partitions(unit, span) * files
    warning = None
    if mappings > limit.budget:
        warning = (f"{named('partition_by')} {unit}: " + _over(unit, span, columns, files, limit)
                   + ": a read of the whole table may fail")
    line = (f"partitioned by {unit}, as {named('partition_by')} says: "
            f"{_mappings_said(unit, span, columns, files, limit)}; from {span.basis}")
    return Partitioning(unit, False, line, warning, mappings, limit, span)


def unspanned(unit: str | None, column: str, limit: MapLimit) -> Partitioning:
    """Where the designated timestamp holds no timestamps to choose from: the user's unit, else DAY."""
    why = "as " + named("partition_by") + " says" if unit is not None else "the default where nothing tells"
    return Partitioning(unit or "DAY", unit is None, f"partitioned by {unit or 'DAY'}, {why}: {column} holds no "
                        f"timestamps", None, None, limit, None)
