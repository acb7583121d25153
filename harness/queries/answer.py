"""A query's answer as the harness compares it: column names and rows, normalised so that PGWire and HTTP
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
