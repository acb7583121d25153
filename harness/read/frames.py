"""Rows into DataFrames: the column kinds of a QuestDB result and the conversions every reader shares.

A reader that decodes rows (asyncpg's Records, psycopg's tuples) turns a batch of them into columns here
(``rows_frame``), its driver set to hand TIMESTAMP over as the wire's integer (microseconds since
2000-01-01, ``PG_EPOCH_US`` after 1970) rather than as datetime objects, which cost ten times as much to
make and to convert; a reader that gets Arrow (CSV and Parquet over HTTP, connectorx) gathers record batches
into chunks of ``chunk_rows`` rows and converts each once (``ArrowChunks``). Either way the frame has: SYMBOL and string columns
as the driver's strings (Python str objects in an object column from the row readers: no copy, no
conversion; Arrow's dictionary columns as ``category``; Arrow strings as ``str``), DOUBLE as float64 (NULL: NaN), LONG
and the other integers as int64 (as nullable ``Int64`` where the chunk has a NULL), BOOLEAN as bool, TIMESTAMP as
datetime64[us, UTC] (QuestDB's microseconds), TIMESTAMP_NS as datetime64[ns, UTC] where the protocol carries
nanoseconds (HTTP) and datetime64[us, UTC] where it does not (PGWire's timestamp is microseconds: QuestDB sends a
TIMESTAMP_NS truncated toward zero), anything else as the driver gives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

STRING, DOUBLE, LONG, BOOLEAN, TIMESTAMP, TIMESTAMP_NS, OTHER = (
    "string", "double", "long", "boolean", "timestamp", "timestamp_ns", "other")
_KINDS = {"SYMBOL": STRING, "VARCHAR": STRING, "STRING": STRING, "CHAR": STRING, "DOUBLE": DOUBLE,
          "FLOAT": DOUBLE, "LONG": LONG, "INT": LONG, "SHORT": LONG, "BYTE": LONG, "BOOLEAN": BOOLEAN,
          "TIMESTAMP": TIMESTAMP, "TIMESTAMP_NS": TIMESTAMP_NS}
TIMESTAMP_KINDS = (TIMESTAMP, TIMESTAMP_NS)


PG_EPOCH_US = 946_684_800_000_000  # 2000-01-01, PostgreSQL's epoch, in microseconds since 1970
_NULL = np.iinfo(np.int64).min  # numpy's NaT


def kind_of(questdb_type: str) -> str:
    """The conversion a column of this QuestDB type gets (a type of no kind here, ``OTHER``: as given)."""
    return _KINDS.get(questdb_type.upper(), OTHER)


@dataclass(frozen=True)
class Column:
    name: str
    questdb_type: str

    @property
    def kind(self) -> str:
        return kind_of(self.questdb_type)


def rows_frame(rows: Sequence, columns: Sequence[Column]) -> pd.DataFrame:
    """A DataFrame of ``rows`` (each a sequence of values in ``columns`` order)."""
    values = list(zip(*rows)) if rows else [() for _ in columns]
    return pd.DataFrame({column.name: _column(column.kind, list(cells)) for column, cells in zip(columns, values)},
                        copy=False)


def _column(kind: str, cells: list) -> object:
    if kind == DOUBLE:
        return np.array(cells, dtype=np.float64)  # None -> NaN
    if kind == LONG:
        try:
            return np.array(cells, dtype=np.int64)
        except TypeError:  # a NULL
            return pd.array(cells, dtype="Int64")
    if kind == BOOLEAN:  # QuestDB's BOOLEAN has no NULL
        return np.array(cells, dtype=bool)
    if kind in TIMESTAMP_KINDS:  # the wire's microseconds, TIMESTAMP_NS's too
        try:
            micros = np.array(cells, dtype=np.int64) + PG_EPOCH_US
        except TypeError:  # a NULL
            micros = pd.array(cells, dtype="Int64").to_numpy(dtype=np.int64, na_value=_NULL)
            micros[micros != _NULL] += PG_EPOCH_US
        return pd.DatetimeIndex(micros.view("datetime64[us]")).tz_localize("UTC")
    # An explicit object Series: a bare object array would be turned into pandas' str dtype, a copy.
    return pd.Series(np.array(cells, dtype=object), dtype=object, copy=False)


def arrow_frame(table: pa.Table, columns: Sequence[Column]) -> pd.DataFrame:
    """``table`` as a DataFrame of the module's dtypes (timestamps read without a zone are UTC)."""
    kinds = {column.name: column.kind for column in columns}
    for index, field in enumerate(table.schema):
        if kinds.get(field.name) in TIMESTAMP_KINDS and pa.types.is_timestamp(field.type) and field.type.tz is None:
            table = table.set_column(index, field.name, table.column(index).cast(pa.timestamp(field.type.unit, "UTC")))
    frame = table.to_pandas(split_blocks=True, self_destruct=True)
    for column in columns:
        if column.kind == LONG and column.name in frame and frame[column.name].dtype == np.float64:
            frame[column.name] = frame[column.name].astype("Int64")  # Arrow's NULLs made it float
    return frame


class ArrowChunks:
    """Record batches (of any size) cut into tables of exactly ``chunk_rows`` rows (the last may be smaller);
    the cuts are slices, not copies."""

    def __init__(self, chunk_rows: int):
        self.chunk_rows = chunk_rows

    def tables(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Table]:
        pending, rows = [], 0
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            rows += batch.num_rows
            if rows >= self.chunk_rows:
                table = pa.Table.from_batches(pending)
                start = 0
                while rows - start >= self.chunk_rows:
                    yield table.slice(start, self.chunk_rows)
                    start += self.chunk_rows
                rest = table.slice(start)
                pending, rows = rest.to_batches(), rest.num_rows
        if rows:
            yield pa.Table.from_batches(pending)
