"""The schema of the user's data as one: every file's schema unified (the same names in the same order, their case
aside; types widened where the files' differ), and a text format's columns as read (``as_read``: what its reader's
inference would make timestamps, dates or times of, or nothing of, read as text, parsed by
``harness.own_data.timestamps`` instead; ``widening``: the type a later value needs)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa

from harness.errors import UsageError, named
from harness.own_data.formats import DataPart
from harness.own_data.placeholders import Placeholders
from harness.own_data.reading import Reading


def unified(schemas: list[tuple[DataPart, pa.Schema]], source: str) -> tuple[pa.Schema, dict[Path, dict[str, str]]]:
    """One schema for every part's (``source``: the data as messages name it): the same names in the same order
    (their case may differ: the first file's spelling is the dataset's), types widened where one part's differ
    from another's (an integer column that is float in another file); and, by part, the dataset's names whose
    case the part's file spells otherwise, each to the file's spelling."""
    first_part, unified_schema = schemas[0]
    unified_schema = unified_schema.remove_metadata() if len(schemas) > 1 else unified_schema
    own_names = {}
    for part, schema in schemas[1:]:
        if [name.lower() for name in schema.names] != [name.lower() for name in unified_schema.names]:
            raise UsageError(f"{source}: {first_part.path} and {part.path} have different columns "
                             f"({', '.join(unified_schema.names)}; {', '.join(schema.names)}): a dataset's files share "
                             f"one schema")
        if schema.names != unified_schema.names:  # the same names but for case (QuestDB's are case-insensitive)
            own_names[part.path] = {name: own for name, own in zip(unified_schema.names, schema.names) if name != own}
            schema = pa.schema([pa.field(name, item.type) for name, item in zip(unified_schema.names, schema)])
        try:
            unified_schema = pa.unify_schemas([unified_schema, schema.remove_metadata()], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            differ = next(item.name for item, other in zip(unified_schema, schema) if item.type != other.type)
            raise UsageError(f"{source}: {first_part.path} and {part.path} differ in column {differ!r} "
                             f"({unified_schema.field(differ).type}; {schema.field(differ).type}): a dataset's files "
                             f"share one schema") from None
    return unified_schema, own_names


def as_read(inferred: pa.Schema, reading: Reading, source: str) -> pa.Schema:
    """A text format's columns as its reader reads them, from the types it ``inferred``: text it would make
    timestamps, dates or times of, or nothing of (a column empty in the first block), a symbol, a column kept as
    text (``--keep-text``), and text named a timestamp, read as text (parsed by the dataset); a column of bytes its
    encoding cannot decode (past the start the dialect was sniffed on) refused in one line."""
    undecoded = next((item.name for item in inferred if pa.types.is_binary(item.type)), None)
    if undecoded is not None:
        raise UsageError(f"{source}: column {undecoded!r} holds text that is not {reading.encoding or 'utf-8'}: "
                         f"give the file's encoding with {named('encoding')} (e.g. latin-1, cp1252)")
    named_times = reading.named_times()
    texts = set(reading.symbols) | set(reading.keep_text)
    return pa.schema([
        pa.field(item.name, pa.string()) if read_as_text(item.type) or item.name in texts or (
            item.name in named_times and pa.types.is_timestamp(item.type)) else item for item in inferred])


def widened(arrow_type: pa.DataType, value: str) -> pa.DataType | None:
    """The type a text format's integer or boolean column read as ``arrow_type`` takes instead, where a later
    ``value`` is not of it: an integer column with a number (a decimal) double, a boolean column text; None for a
    column of any other type, and for text in an integer column (never made text in silence:
    ``harness.own_data.placeholders``)."""
    if pa.types.is_boolean(arrow_type):
        return pa.string()
    if not pa.types.is_integer(arrow_type):
        return None
    try:
        float(value)
    except ValueError:
        return None
    return pa.float64()


def widening(column: str, arrow_type: pa.DataType, numbers: Placeholders | None, value: str,
             na_values: tuple[str, ...]) -> tuple[pa.DataType, Placeholders | None, str, str, str] | None:
    """How a text format's ``column`` read as ``arrow_type`` (and as numbers with placeholders: ``numbers``) takes a
    later ``value`` its type cannot: the type it is read as instead, its placeholders then, what it was and is sent
    as, and how; None where nothing does. A decimal in an int64 column of numbers with placeholders widens it to
    double; a number column's ``value`` that ``--na-values`` names makes it numbers with placeholders, read as text."""
    later = f"a later value, {value!r},"
    if numbers is not None:
        return arrow_type, dataclasses.replace(numbers, type=pa.float64()), str(numbers.type), "double", \
            f"{later} is not {numbers.type}: the column's type as its first rows gave it, widened"
    if (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)) and value.strip() in na_values:
        made = Placeholders(column, na_values, arrow_type)
        return pa.string(), made, str(arrow_type), str(arrow_type), f"{later} is one of {named('na_values')}: " \
            f"{made.describe()}"
    if (after := widened(arrow_type, value)) is None:
        return None
    return after, None, str(arrow_type), str(after), f"{later} is not {arrow_type}: the column's type as its first " \
        f"16 MiB gave it, widened"


def read_as_time(arrow_type: pa.DataType) -> bool:
    """A text reader's type that is a time: a timestamp or a date."""
    return pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type)


def read_as_text(arrow_type: pa.DataType) -> bool:
    """A text reader's type that is read as text instead: timestamps and dates (parsed here, every form and
    every later value), times of day, nothing (a column empty in the first block)."""
    return read_as_time(arrow_type) or pa.types.is_time(arrow_type) or pa.types.is_null(arrow_type)
