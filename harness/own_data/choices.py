"""How the user's file is read, where a flag chooses among a few: the epoch unit of numbers read as timestamps,
and what a timestamp that does not parse does; and the units its table may be partitioned by. Light to import: the
command line declares its flags from here."""

from __future__ import annotations

from enum import StrEnum


class EpochUnit(StrEnum):
    """The unit of numbers read as epoch time (``--at-unit``)."""

    s = "s"
    ms = "ms"
    us = "us"
    ns = "ns"


class OnBadTimestamp(StrEnum):
    """What a timestamp that does not parse does (``--on-bad-timestamp``): end the run naming its line, or leave
    its row out, counted."""

    fail = "fail"
    skip = "skip"


# QuestDB's PARTITION BY units (``--partition-by``), NONE first and then finest first.
PARTITION_UNITS = ("NONE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR")
PARTITION_UNITS_SAID = ", ".join(PARTITION_UNITS[:-1]) + f" or {PARTITION_UNITS[-1]}"


def partition_unit(value: str) -> str | None:
    """``value`` as a unit of ``PARTITION_UNITS`` (any case), or None where it is none."""
    unit = str(value).strip().upper()
    return unit if unit in PARTITION_UNITS else None
