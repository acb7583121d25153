"""TSBS's ``iot`` use case in the registry (``harness.tsbs.use_cases``): a fleet of trucks writing two tables,
``readings`` and ``diagnostics``, with the batches TSBS drops, delays and reorders (``iot_simulator``), as
TSBS's text (``iot_text``) or as DataFrames (``iot_frames``).

Rows per table are not a fixed share of the data set: TSBS's draws drop about a tenth of the points it
simulates, so a row limit (``--row-count``, TSBS's ``--max-data-points``) counts points drawn, and the rows
each table gets are counted by running the simulation (``line_count``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.iot.frames import chunks
from harness.tsbs.iot.schema import TABLES, schemas
from harness.tsbs.iot.simulator import DEFAULT_CHUNK_ROWS, IotSimulator, line_count, max_points
from harness.tsbs.iot.text import LinePrinter, text_chunks, text_jobs
from harness.tsbs.params import DatasetSpec
from harness.tsbs.query_types import IOT_QUERY_TYPES
from harness.tsbs.schema import TIMESTAMP_COLUMN, TableSchema
from harness.tsbs.use_case import TsbsSource

if TYPE_CHECKING:
    from harness.tsbs.use_case import Chunk, TextJob

__all__ = ["NAME", "USE_CASE", "DEFAULT_CHUNK_ROWS", "IotSimulator", "LinePrinter", "chunks", "line_count",
           "max_points", "schemas", "text_chunks", "text_jobs"]

NAME = "iot"


@dataclass(frozen=True)
class Iot(TsbsSource):
    """iot in the use-case registry: two tables; its queries are TSBS's TimescaleDB ones in QuestDB SQL
    (TSBS has no QuestDB queries for it)."""

    name: str = NAME
    measurements_per_host: int = len(TABLES)  # points a truck gives per epoch, before TSBS drops some
    default_chunk_rows: int = DEFAULT_CHUNK_ROWS
    renamable_table: bool = False
    row_api: bool = False
    # TSBS clears a line's name now and then, and nameless lines share timestamps: (name, timestamp) would
    # merge them.
    unique_keys: bool = False
    known_schemas: bool = True
    in_time_order: bool = False  # TSBS holds some points and batches back: they arrive late
    # A truck's states and choices, and a chunk line's record, frame columns and pandas' copies, with margin.
    bytes_per_host: int = 400
    bytes_per_chunk_row: int = 800
    # A row held whole before the timed phases (the DataFrames measured at 80-125 bytes a row), with margin.
    bytes_per_held_row: int = 200
    query_types: tuple[str, ...] = IOT_QUERY_TYPES
    query_module: str = "harness.tsbs.iot.queries"  # TSBS's TimescaleDB iot queries, in QuestDB SQL
    dataframe_symbols: bool = True
    dataframe_at: str = TIMESTAMP_COLUMN

    def tables(self, table: str | None = None) -> tuple[str, ...]:
        return TABLES

    def schemas(self, fields: FieldType, table: str | None = None) -> list[TableSchema]:
        return schemas()

    def chunks(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType, symbol_dtype: SymbolDtype,
               table: str | None = None, first_chunk_rows: int | None = None) -> Iterator[Chunk]:
        return chunks(spec, chunk_rows, fields, symbol_dtype, first_chunk_rows)

    def table_rows(self, spec: DatasetSpec, table: str | None = None) -> dict[str, int]:
        return line_count(spec)

    def text_jobs(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType,
                  first_chunk_rows: int | None = None) -> Iterator[TextJob]:
        return text_jobs(spec, chunk_rows, first_chunk_rows)  # the same text for long and double

    def go_floats(self, fields: FieldType) -> bool:
        return False  # its text always comes from its own printer


USE_CASE = Iot()
