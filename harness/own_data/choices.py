"""How the user's file is read, where a flag chooses among a few: the epoch unit of numbers read as timestamps,
and what a timestamp that does not parse does. Light to import: the command line declares its flags from here."""

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
