"""A query's answer as the harness compares it: column names and rows, normalised so that PGWire, HTTP and QWP
give the same values (timestamps int microseconds since the Unix epoch, UTC; SYMBOL/VARCHAR str; DOUBLE
float; LONG/INT int; NULL None), rows in the order the server returned them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone


@dataclass(frozen=True)
class Answer:
    columns: list[str]
    rows: list[tuple]


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_NAIVE = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def _exec_timestamp(text: str) -> int:
    # /exec writes 2016-01-01T00:00:00.000000Z
    return (datetime.fromisoformat(text) - _EPOCH) // _MICROSECOND


_EXEC_CONVERTERS = {"TIMESTAMP": _exec_timestamp, "DOUBLE": float, "FLOAT": float,
                    "LONG": int, "INT": int, "SHORT": int, "BYTE": int}


def from_exec(result: dict) -> Answer:
    """An answer from /exec's JSON (``columns`` with their types, ``dataset`` rows)."""
    converters = [_EXEC_CONVERTERS.get(column["type"], str) for column in result["columns"]]
    rows = [tuple(None if value is None else convert(value) for value, convert in zip(row, converters))
            for row in result["dataset"]]
    return Answer([column["name"] for column in result["columns"]], rows)


def _pgwire_value(value):
    if isinstance(value, datetime):
        # QuestDB's TIMESTAMP goes over PGWire as timestamp without time zone, in UTC.
        epoch = _EPOCH if value.tzinfo is not None else _EPOCH_NAIVE
        return (value - epoch) // _MICROSECOND
    return value


def from_records(columns: list[str], records) -> Answer:
    """An answer from PGWire rows (asyncpg Records or tuples) and the statement's column names."""
    return Answer(list(columns), [tuple(None if value is None else _pgwire_value(value) for value in record)
                                  for record in records])


def from_arrow(table) -> Answer:
    """An answer from a pyarrow Table (QWP's ``to_arrow()``): a timestamp column as int microseconds (nanoseconds
    truncated toward zero, as QuestDB truncates them), a dictionary column (SYMBOL) as its values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type):
            micros = pc.cast(column, pa.int64())
            unit = column.type.unit
            if unit == "ns":
                micros = pc.divide(micros, 1000)  # integer division truncates toward zero
            elif unit != "us":
                micros = pc.multiply(micros, {"s": 1_000_000, "ms": 1_000}[unit])
            column = micros
        elif pa.types.is_dictionary(column.type):
            column = pc.cast(column, column.type.value_type)
        columns.append(column.to_pylist())
    return Answer(list(table.column_names), list(zip(*columns)) if columns else [])
