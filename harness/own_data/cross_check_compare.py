"""The comparison of two readings of one file, the run's and DuckDB's (``harness.own_data.duckdb_reading.Figures``):
rows; the designated timestamp's first, last and distinct instants; each column's type family (number, text, time,
bool) and nulls. Each disagreement is named in one line (``rows: the run 1,000, DuckDB 1,002``); a difference
expected of the two readers is said as a note, with why, and not counted against the run:

- a number column holding placeholders the run reads as missing (``-``, ``?``, ``NA``) is text to DuckDB: its nulls
  are compared counting those placeholders as DuckDB's nulls;
- a time of day is text to the run (QuestDB has no time-of-day type) and TIME to DuckDB, unless it stands beside a
  designated timestamp of dates alone that ``--at-dates-only`` did not ask for: then the run sent dates alone where
  DuckDB reads a date and its time, which is a disagreement;
- a column the run keeps as text (``--symbols``, ``--keep-text``), a partition folder's key, a timestamp DuckDB's
  sniffer leaves as text, text DuckDB's sniffer takes for booleans (``T``/``F``), numbers it keeps as text (codes
  with leading zeros, ``05``): each reader's choice, said;
- rows the run skipped (``--on-bad-timestamp skip``); with ``--tz``, the instants of a DST gap or overlap, which
  each reader places its own way (distinct instants are then not compared).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from harness.errors import named
from harness.own_data.duckdb_reading import ColumnFigures, Figures


@dataclass
class Context:
    """What the comparison knows of the run's reading beside its figures: the designated timestamp (the run's name)
    and the file's columns it was read from; each run column's file name; the columns beside the designated one that
    DuckDB reads as times of day where DuckDB reads the designated one as dates alone (``time_beside``); the run's
    placeholders (by the run's name), columns it keeps as text and why, partition keys, columns whose file type was a
    time of day, the rows it skipped, ``tz``, whether dates alone were asked for, and why a figure is not compared."""

    at: str = "ts"
    at_columns: tuple[str, ...] = ()
    file_names: dict[str, str] = field(default_factory=dict)
    time_beside: tuple[str, ...] = ()
    placeholders: dict[str, tuple[str, ...]] = field(default_factory=dict)
    kept_text: dict[str, str] = field(default_factory=dict)
    partitions: tuple[str, ...] = ()
    times_of_day: tuple[str, ...] = ()
    parsed: dict[str, str] = field(default_factory=dict)  # run columns parsed as timestamps: how
    skipped_rows: int = 0
    tz: str | None = None
    dates_only: bool = False
    instants_unread: str | None = None  # why DuckDB's instants are not compared (None: they are)


def compare(run: Figures, duck: Figures, context: Context) -> tuple[list[str], list[str]]:
    """The disagreements of ``run`` with ``duck``, each one line, and the notes on differences that are expected."""
    differences, notes = [], []
    _rows(run, duck, context, differences, notes)
    _instants(run, duck, context, differences, notes)
    for name, mine in run.columns.items():
        theirs = duck.columns.get(name)
        if theirs is not None:
            _column(name, mine, theirs, context, differences, notes)
    if duck.unmatched:
        differences.append(f"DuckDB reads columns the run does not: "
                           f"{', '.join(f'`{name}`' for name in duck.unmatched[:5])}")
    return differences, notes


def _said(name: str, context: Context) -> str:
    file_name = context.file_names.get(name, name)
    return f"`{file_name}`" + (f" (sent as `{name}`)" if file_name != name else "")


def _count(value: int) -> str:
    return f"{value:,}"


def _rows(run: Figures, duck: Figures, context: Context, differences: list, notes: list) -> None:
    if run.rows == duck.rows:
        return
    if context.skipped_rows and run.rows + context.skipped_rows == duck.rows:
        notes.append(f"rows: the run {_count(run.rows)}, DuckDB {_count(duck.rows)}: the run skipped "
                     f"{_count(context.skipped_rows)} whose timestamp did not parse ({named('on_bad_timestamp')} skip)")
        return
    differences.append(f"rows: the run {_count(run.rows)}, DuckDB {_count(duck.rows)}")


def _instant(micros: int | None) -> str:
    return "none" if micros is None else pd.Timestamp(micros, unit="us").isoformat()


def _instants(run: Figures, duck: Figures, context: Context, differences: list, notes: list) -> None:
    what = f"`{context.at}`" + (f" (from {' + '.join(f'`{name}`' for name in context.at_columns)})"
                                if context.at_columns and context.at_columns != (context.at,) else "")
    if context.instants_unread is not None:
        notes.append(f"the designated timestamp {what}: not cross-checked: {context.instants_unread}")
        return
    for figure, label in (("first", "first instant"), ("last", "last instant")):
        mine, theirs = getattr(run, figure), getattr(duck, figure)
        if mine != theirs:
            differences.append(f"{label} of {what}: the run {_instant(mine)}, DuckDB {_instant(theirs)}")
    if run.distinct == duck.distinct:
        return
    if context.tz is not None:
        notes.append(f"distinct instants of {what}: the run {_count(run.distinct)}, DuckDB {_count(duck.distinct)}: "
                     f"local times in {context.tz} across a DST change are placed by each reader its own way")
        return
    differences.append(f"distinct instants of {what}: the run {_count(run.distinct or 0)}, DuckDB "
                       f"{_count(duck.distinct or 0)}")


def _column(name: str, mine: ColumnFigures, theirs: ColumnFigures, context: Context, differences: list,
            notes: list) -> None:
    said = _said(name, context)
    tokens = context.placeholders.get(name, ())
    if mine.family != theirs.family:
        if not _type_explained(name, said, mine, theirs, context, differences, notes):
            differences.append(f"type of {said}: the run {mine.family} ({mine.duck_type}), DuckDB {theirs.family} "
                               f"({theirs.duck_type})")
            return
    duck_nulls = theirs.nulls + (theirs.tokens if tokens and theirs.family == "text" else 0)
    if mine.nulls == duck_nulls:
        return
    allowing = f" (its {_count(theirs.nulls)} nulls and {_count(theirs.tokens)} placeholders)" \
        if tokens and theirs.family == "text" else ""
    differences.append(f"nulls of {said}: the run {_count(mine.nulls)}, DuckDB {_count(duck_nulls)}{allowing}")


def _type_explained(name: str, said: str, mine: ColumnFigures, theirs: ColumnFigures, context: Context,
                    differences: list, notes: list) -> bool:
    """Whether the two families of ``name`` differ as expected (a note said, or the time-of-day disagreement
    named); False: a plain disagreement of types."""
    if mine.family == "text" and theirs.duck_type.upper().startswith("TIME") and \
            not theirs.duck_type.upper().startswith("TIMESTAMP"):
        if name in context.time_beside and not context.dates_only:
            date = context.at_columns[0] if context.at_columns else context.at
            differences.append(f"DuckDB reads {said} as TIME beside `{date}`; the run reads dates alone "
                               f"({named('at')} {date}+{context.file_names.get(name, name)} joins them; "
                               f"{named('at_dates_only')} keeps dates alone)")
            return True
        why = f"dates alone, as {named('at_dates_only')} says" if name in context.time_beside else \
            "QuestDB has no time-of-day type"
        notes.append(f"DuckDB reads {said} as TIME; the run sends it as text ({why})")
        return True
    if theirs.duck_type.strip('"').upper() == "NULL":
        notes.append(f"DuckDB types {said} NULL: no value in what it read (the run's type comes of the dataset's "
                     f"other files)")
        return True
    if mine.family == "number" and theirs.family == "text" and name in context.placeholders:
        shown = ", ".join(repr(token) for token in context.placeholders[name][:4])
        notes.append(f"DuckDB reads {said} as text: placeholders ({shown}) are no numbers to it; the run reads them as "
                     f"missing, and the nulls are compared counting them")
        return True
    if mine.family == "text" and name in context.kept_text:
        notes.append(f"DuckDB reads {said} as {theirs.family}; the run keeps it as text ({context.kept_text[name]})")
        return True
    if name in context.partitions:
        notes.append(f"DuckDB types the partition key {said} {theirs.duck_type}, the run {mine.duck_type} (each "
                     f"reader's rule for folder names)")
        return True
    if mine.family == "text" and name in context.times_of_day:
        notes.append(f"{said} is a time of day in the file: the run sends it as text (QuestDB has no time-of-day "
                     f"type), DuckDB reads {theirs.duck_type}")
        return True
    if mine.family == "number" and theirs.family == "text" and theirs.not_numbers == 0:
        file_name = context.file_names.get(name, name)
        notes.append(f"DuckDB's sniffer keeps {said} as text though every value is a number to its cast (numbers "
                     f"written with leading zeros, as codes are, such as 05); the run reads numbers, which drop the "
                     f"zeros ({named('keep_text')} {file_name!r} sends the text)")
        return True
    if mine.family == "text" and theirs.family == "bool":
        notes.append(f"DuckDB's sniffer reads {said} as BOOLEAN (its values are letters or words it takes for "
                     f"true and false, such as T and F); the run sends the text the file holds")
        return True
    if mine.family == "time" and theirs.family in ("text", "number") and name in context.parsed:
        notes.append(f"DuckDB's sniffer reads {said} as {theirs.duck_type}; the run reads it as timestamps "
                     f"({context.parsed[name]})")
        return True
    return False
