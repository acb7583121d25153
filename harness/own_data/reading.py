"""How the user's file is read, as the user's choices say (``Reading``): one value for ``bench --data``, ``inspect``,
``tune`` and ``read --check-against`` alike, checked before any file is opened."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import ParameterError, UsageError, named
from harness.own_data.choices import EpochUnit, OnBadTimestamp
from harness.own_data.names import parse_renames
from harness.own_data.timestamps import check_zone


@dataclass(frozen=True)
class Reading:
    """How a file is read: the designated timestamp ``at`` (a column, or columns joined: ``Date+Time``) and how its
    text or numbers are read (``at_format``, ``at_unit``, ``tz``; ``at_dates_only``: dates alone are meant, even
    beside a column of times of day), other columns read as timestamps (``parse_dates``), what a value that does
    not parse does (``on_bad_timestamp``: fail or skip its row), the symbol columns (a text file's read as text: a
    rack number stays the text ``042``), a CSV's dialect where not sniffed, the encoding, the user's column names
    (``renames``: ``old=new,...``), the tokens that mark a missing number (``na_values``, besides those the
    placeholder rule finds: ``harness.own_data.placeholders``), the columns kept as text (``keep_text``) and the lines
    above a CSV's header (``skip_rows``; None: as its sniffer finds them, ``harness.own_data.preamble``)."""

    at: str | None = None
    at_format: str | None = None
    at_unit: str | None = None
    tz: str | None = None
    parse_dates: tuple[str, ...] = ()
    on_bad_timestamp: str = "fail"
    symbols: tuple[str, ...] = ()
    csv_delimiter: str | None = None
    csv_no_header: bool = False
    encoding: str | None = None
    renames: str | None = None
    at_dates_only: bool = False
    na_values: tuple[str, ...] = ()
    keep_text: tuple[str, ...] = ()
    skip_rows: int | None = None

    def check(self) -> None:
        if self.on_bad_timestamp not in tuple(OnBadTimestamp):
            raise ParameterError("on_bad_timestamp", f"fail or skip, got {self.on_bad_timestamp!r}")
        if self.at_unit is not None and self.at_unit not in tuple(EpochUnit):
            raise ParameterError("at_unit", f"s, ms, us or ns, got {self.at_unit!r}")
        for parameter, value in (("at_format", self.at_format), ("at_unit", self.at_unit)):
            if value is not None and self.at is None:
                raise UsageError(f"{named(parameter)} reads the designated timestamp: name its column with "
                                 f"{named('at')}")
        if self.skip_rows is not None and (not isinstance(self.skip_rows, int) or self.skip_rows < 0):
            raise ParameterError("skip_rows", f"a number of lines, 0 or more, got {self.skip_rows!r}")
        parse_renames(self.renames)
        check_zone(self.tz)

    def named_times(self) -> set[str]:
        """The columns the user named timestamps: the designated one (as named: ``Date+Time`` where it joins
        columns) and those of ``parse_dates``."""
        return {name for name in (self.at, *self.parse_dates) if name}
