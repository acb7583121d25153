"""Which of a file's columns become timestamps, and how (``decide``), from its schema, first rows and the user's
choices: the designated timestamp ``--at`` names (a column; where no column has that exact name, columns joined
with ``+``: ``Date+Time``, ``year+month+day+hour``), the columns of ``--parse-dates``, and in a text format every
text column whose first values are timestamps. Without ``--at``, a column of dates beside (either side, the right
first) a column of times of day is joined with it, and where nothing else holds timestamps, columns named year,
month, day (and hour, minute, second) are (``harness.own_data.joined_times``). ``--at`` naming dates alone beside
a time of day is refused in one line unless ``--at-dates-only`` says dates alone are meant (which also leaves a
date found beside a time unjoined). A typed date beside a typed time of day (Parquet's, Arrow IPC's) is joined,
found or named, and refused alone, as text is. A text column's ``NA``, ``null``, ``NaN`` ... are nulls to every decision
here (``harness.own_data.placeholders.as_nulls``), as they are when its values are parsed; a column kept as text
(``--keep-text``) is never found as timestamps."""

from __future__ import annotations

import re
import shlex

import pyarrow as pa

from harness.errors import ParameterError, UsageError, named
from harness.own_data.joined_times import PARTS, JoinedTime, clock_nanos, looks_like_clock
from harness.own_data.normalise import Normalisation
from harness.own_data.placeholders import as_nulls
from harness.own_data.reading import Reading
from harness.own_data.schemas import read_as_time
from harness.own_data.time_formats import HEAD_VALUES, looks_like_times
from harness.own_data.timestamps import TimeParser

_NANOSECONDS = re.compile(r"[.,]\d{7,}")


def joined_parts(reading: Reading, names: list[str]) -> tuple[str, ...] | None:
    """The columns ``--at`` joins (``A+B``), or None where it names one column (a column of that exact name
    wins)."""
    if reading.at is None or reading.at in names or "+" not in reading.at:
        return None
    return tuple(part.strip() for part in reading.at.split("+"))


def head_columns(flat: pa.Schema, reading: Reading, text_read: bool) -> list[str]:
    """The columns whose first rows the decision reads: those named, a text format's text columns, the
    neighbours of ``--at``'s column, and columns named as a timestamp's parts."""
    names = flat.names
    wanted = set(reading.named_times()) | set(joined_parts(reading, names) or ())
    if text_read:
        wanted |= {item.name for item in flat if _is_text(item.type)}
    if reading.at in names:
        position = names.index(reading.at)
        wanted |= set(names[max(0, position - 1):position + 2])
    wanted |= {name for name in names if name.lower() in PARTS}
    return [name for name in names if name in wanted]


def decide(flat: pa.Schema, head: pa.Table | None, reading: Reading, text_read: bool,
           inferred: dict[str, pa.DataType], source: str) -> tuple[dict[str, TimeParser], JoinedTime | None]:
    """The parser of each column made timestamps (by the file's flattened names), and the columns joined into
    one, if any (``source``: the data as messages name it)."""
    names = flat.names
    parts = joined_parts(reading, names)
    for name in [*(parts or ()), *(name for name in reading.named_times() if parts is None or name != reading.at)]:
        if name not in names:
            raise ParameterError("parse_dates" if name in reading.parse_dates else "at",
                                 f"{source} has no column {name!r} (columns: {', '.join(names)})")
    parsers = {}
    for item in flat:
        name = item.name
        if not (_is_text(item.type) or _is_number(item.type)) or name in (parts or ()):
            continue
        if name == reading.at:
            parsers[name] = _parser(name, head, tz=reading.tz, parameter="at", at_format=reading.at_format,
                                    at_unit=reading.at_unit)
        elif name in reading.parse_dates:
            parsers[name] = _parser(name, head, tz=reading.tz, parameter="parse_dates")
        elif _is_text(item.type) and text_read and name not in reading.keep_text and (
                read_as_time(inferred.get(name, pa.string())) or _holds_times(head, name)):
            parsers[name] = _parser(name, head, tz=reading.tz, parameter=None)
    if parts is not None:
        return parsers, _named_join(flat, head, reading, parts)
    if reading.at in parsers and not reading.at_dates_only:
        _refuse_dates_alone(flat, head, parsers[reading.at])
    if reading.at in names and pa.types.is_date(flat.field(reading.at).type) and not reading.at_dates_only:
        _refuse_typed_dates_alone(flat, reading.at)
    join = _found_join(flat, head, reading, parsers) if reading.at is None else None
    if join is not None:
        parsers = {name: parser for name, parser in parsers.items() if name not in join.parts}
    return parsers, join


def stated(normalisation: Normalisation) -> list[str]:
    """The decisions on the timestamp a run states, a line each: columns joined into one, and the flags that pin
    the designated timestamp's reading where its format was inferred."""
    join = normalisation.join
    if join is not None:
        how = "found: a date beside a time of day" if join.found and (join.date is not None or join.typed) else \
            "found: columns named as a timestamp's parts" if join.found else f"named by {named('at')}"
        return [f"  joined {' + '.join(join.parts)} into one timestamp column, {normalisation.final_name(join.name)} "
                f"({how}; pin it: {join.pin()})"]
    chosen = [parser for parser in normalisation.parsers.values() if parser.parameter in ("at", None)]
    if len(chosen) == 1 and chosen[0].kind == "format" and chosen[0].inferred:
        return [f"  timestamp {chosen[0].column}: pin its reading with {named('at')} {shlex.quote(chosen[0].column)} "
                f"{named('at_format')} '{chosen[0].format}'"]
    return []


def _parser(name: str, head: pa.Table | None, **how) -> TimeParser:
    """``name``'s parser, decided on its first values in ``head`` (a text column's placeholders nulls)."""
    return TimeParser.decide(name, _head_array(head, name), **how)


def _head_array(head: pa.Table | None, column: str) -> pa.Array:
    """``column``'s first values in ``head`` as one array, text's placeholders (``NA``, ``null`` ...) nulls."""
    values = head.column(column) if head is not None and column in head.column_names else pa.array([], pa.string())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    return as_nulls(values) if _is_text(values.type) else values


def _named_join(flat: pa.Schema, head: pa.Table | None, reading: Reading, parts: tuple[str, ...]) -> JoinedTime:
    """``--at A+B``: a date and a time of day; ``--at A+B+C...``: a timestamp's parts, year first."""
    if reading.at_unit is not None:
        raise UsageError(f"{named('at_unit')} reads numbers as epoch time: {named('at')} {reading.at} joins columns "
                         f"of dates, times of day or a timestamp's parts")
    if len(parts) == 2 and pa.types.is_date(flat.field(parts[0]).type):
        if not pa.types.is_time(flat.field(parts[1]).type):
            raise UsageError(f"{named('at')} {reading.at}: column {parts[0]!r} holds typed dates, and {parts[1]!r} "
                             f"({flat.field(parts[1]).type}) no typed times of day to join them with")
        return _typed_date_and_time(flat, reading, parts, found=False)
    if len(parts) == 2:
        return _date_and_time(head, reading, parts, found=False)
    if not 3 <= len(parts) <= len(PARTS):
        raise ParameterError("at", f"{reading.at}: joins a date and a time of day (DATE+TIME) or a timestamp's parts, "
                                   f"year+month+day[+hour[+minute[+second]]]: not {len(parts)} columns")
    if reading.at_format is not None:
        raise UsageError(f"{named('at_format')} reads a date's text: {named('at')} {reading.at} joins whole numbers, "
                         f"a timestamp's parts ({', '.join(PARTS[:len(parts)])})")
    return _of_parts(flat, reading, parts, found=False)


def _date_and_time(head: pa.Table | None, reading: Reading, parts: tuple[str, ...], found: bool) -> JoinedTime:
    date_column, clock_column = parts
    date = _parser(date_column, head, tz=None, parameter="at" if not found else None,
                   at_format=None if found else reading.at_format)
    clocks = _head_values(head, clock_column)
    if not found and clocks:
        _, bad = clock_nanos(pa.array(clocks))
        if bad[0]:
            raise UsageError(f"{named('at')} {reading.at}: column {clock_column!r} holds no times of day (its first "
                             f"value is {clocks[0]!r}; HH:MM, HH:MM:SS, 24:00, 1:30 PM or a whole hour)")
    fine = any(isinstance(value, str) and _NANOSECONDS.search(value) for value in clocks)
    zone = TimeParser("+".join(parts), "joined", unit="ns" if fine else "us", tz=reading.tz)
    return JoinedTime("+".join(parts), parts, "_".join(parts), date, zone, found)


def _typed_date_and_time(flat: pa.Schema, reading: Reading, parts: tuple[str, ...], found: bool) -> JoinedTime:
    fine = any(getattr(flat.field(part).type, "unit", None) == "ns" for part in parts)
    zone = TimeParser("+".join(parts), "joined", unit="ns" if fine else "us", tz=reading.tz)
    return JoinedTime("+".join(parts), parts, "_".join(parts), None, zone, found, typed=True)


def _of_parts(flat: pa.Schema, reading: Reading, parts: tuple[str, ...], found: bool) -> JoinedTime:
    for part in parts:
        kind = flat.field(part).type
        if not (_is_text(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise UsageError(f"{named('at')} {'+'.join(parts)}: column {part!r} is {kind}, not whole numbers of a "
                             f"timestamp's part")
    zone = TimeParser("+".join(parts), "joined", tz=reading.tz)
    return JoinedTime("+".join(parts), parts, "_".join(parts), None, zone, found)


def _found_join(flat: pa.Schema, head: pa.Table | None, reading: Reading,
                parsers: dict[str, TimeParser]) -> JoinedTime | None:
    """Without ``--at``: the first column of dates found beside a column of times of day, joined with it (unless
    ``at_dates_only``); else, where nothing else holds timestamps, the columns named year, month, day (hour,
    minute, second)."""
    for name, parser in parsers.items():
        if reading.at_dates_only:
            break
        if parser.parameter is None and parser.dates_only() and (clock := _clock_beside(flat, head, name)):
            return _date_and_time(head, reading, (name, clock), found=True)
    for item in flat if not reading.at_dates_only else ():
        if pa.types.is_date(item.type) and (clock := _typed_clock_beside(flat, item.name)):
            return _typed_date_and_time(flat, reading, (item.name, clock), found=True)
    if parsers or any(read_as_time(item.type) for item in flat):
        return None
    by_name = {name.lower(): name for name in flat.names}
    parts = []
    for role in PARTS:
        if role not in by_name:
            break
        parts.append(by_name[role])
    return _of_parts(flat, reading, tuple(parts), found=True) if len(parts) >= 3 else None


def _refuse_dates_alone(flat: pa.Schema, head: pa.Table | None, parser: TimeParser) -> None:
    """``--at`` naming dates alone beside a column of times of day: never sent as dates alone by accident."""
    if not parser.dates_only() or not (clock := _clock_beside(flat, head, parser.column)):
        return
    raise UsageError(f"{named('at')} {parser.column}: the column beside it, {clock!r}, holds times of day "
                     f"({_head_values(head, clock)[0]!r}): join them with {named('at')} {parser.column}+{clock}, or "
                     f"say that dates alone are meant with {named('at_dates_only')}")


def _refuse_typed_dates_alone(flat: pa.Schema, column: str) -> None:
    """``--at`` naming a typed date column alone beside a typed time of day: as ``_refuse_dates_alone``."""
    if clock := _typed_clock_beside(flat, column):
        raise UsageError(f"{named('at')} {column}: the column beside it, {clock!r}, holds times of day "
                         f"({flat.field(clock).type}): join them with {named('at')} {column}+{clock}, or say that "
                         f"dates alone are meant with {named('at_dates_only')}")


def _typed_clock_beside(flat: pa.Schema, column: str) -> str | None:
    """The typed time-of-day column right (else left) of ``column``, if any."""
    position = flat.names.index(column)
    for other in (position + 1, position - 1):
        if 0 <= other < len(flat.names) and pa.types.is_time(flat.field(other).type):
            return flat.names[other]
    return None


def _clock_beside(flat: pa.Schema, head: pa.Table | None, column: str) -> str | None:
    """The text column right (else left) of ``column`` whose first values are times of day, if any."""
    position = flat.names.index(column)
    for other in (position + 1, position - 1):
        if 0 <= other < len(flat.names) and _is_text(flat.field(other).type) and \
                looks_like_clock(_head_values(head, flat.names[other])):
            return flat.names[other]
    return None


def _head_values(head: pa.Table | None, column: str) -> list:
    """``column``'s first present values in ``head`` (``HEAD_VALUES`` of them), placeholders left out."""
    if head is None or column not in head.column_names:
        return []
    return _head_array(head, column).drop_null()[:HEAD_VALUES].to_pylist()


def _holds_times(head: pa.Table | None, column: str) -> bool:
    """Whether a text ``column``'s first values in ``head`` are timestamps (``time_formats.looks_like_times``)."""
    return head is not None and looks_like_times(_head_values(head, column))


def _is_text(arrow_type: pa.DataType) -> bool:
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def _is_number(arrow_type: pa.DataType) -> bool:
    return pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
