"""TSBS's ``cpu-only`` use case: the hosts, their tags, and the clamped random walks, as pandas DataFrames
(``frames``) or as TSBS's own text (``text_jobs``).

Owns the exact order in which TSBS draws from Go's source (see ``go.rand``):

1. Every host 0..scale-1 is created before any row: 10 x ``Float64()*100`` (initial walk states in
   field order), region ``Intn(9)``, datacenter ``Intn(len(region's datacenters))``, rack
   ``Int63n(100)``, arch ``Intn(2)``, os ``Intn(3)``, service ``Int63n(20)``, service_version
   ``Int63n(2)``, service_environment ``Intn(3)``, team ``Intn(4)``.
2. Rows are time-major: epoch k holds host_0 .. host_{scale-1} at ``start + k*interval``. The first
   epoch shows the initial states; before each later epoch every host advances, host by host and
   field by field: ``state += NormFloat64()``, then clamped to [0, 100].

``frames(spec, chunk_rows)`` yields DataFrames of exactly ``chunk_rows`` rows (the last may be
shorter), so memory stays bounded however many rows are asked for; any chunk size concatenates to
the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from harness.tsbs import groups
from harness.tsbs.choices import FieldType, SymbolDtype, choice
from harness.tsbs.devops.cpu_schema import FIELD_COLUMNS
from harness.tsbs.go.seed import seeded_source
from harness.tsbs.hosts import (
    DATACENTER_COUNTS,
    DATACENTER_OFFSETS,
    HOST_TAG_DRAWS,
    TAG_COLUMNS,
    Hosts,
    host_table,
    host_tag_columns,
    timestamp_column,
)
from harness.tsbs.ilp_text import RowPrinter
from harness.tsbs.kernel_cache import generator_kernels
from harness.tsbs.params import DatasetSpec
from harness.tsbs.query_types import QUERY_TYPES
from harness.tsbs.schema import TIMESTAMP_COLUMN, TableSchema
from harness.tsbs.use_case import TsbsSource

# pandas is imported only where frames are made: `generate --fields long` prints text straight from the walk
# (``text_jobs``) and starts sooner without it.
if TYPE_CHECKING:
    import pandas as pd

    from harness.tsbs.use_case import Chunk, TextJob

NAME = "cpu-only"
TABLE_NAME = "cpu"
COLUMNS = TAG_COLUMNS + FIELD_COLUMNS + (TIMESTAMP_COLUMN,)

# dataframe() has a fixed cost per call whatever the rows (per-column set-up), so chunks should be large;
# but a chunk's ILP copy must stay under glibc's 32 MiB mmap ceiling, above which it is mmapped and zeroed
# anew for every chunk. 50k rows leaves room for double's longer lines.
DEFAULT_CHUNK_ROWS = 50_000


class CpuOnlySimulator:
    """Stateful TSBS cpu-only simulator: hosts are created on construction, then ``next_values``
    hands out the walk states of consecutive epochs."""

    def __init__(self, spec: DatasetSpec):
        self.spec = spec
        self._kernels = generator_kernels()
        self._words, self._cursor = seeded_source(spec.seed)
        self._states = np.empty((spec.scale, 10), dtype=np.float64)
        tag_codes = np.empty((spec.scale, HOST_TAG_DRAWS), dtype=np.int64)
        self._kernels.create_hosts(self._words, self._cursor, spec.scale, DATACENTER_OFFSETS, DATACENTER_COUNTS,
                                   self._states, tag_codes)
        self.hosts = host_table(spec.scale, tag_codes)
        self._epochs_emitted = 0

    def next_values(self, epochs: int) -> np.ndarray:
        """Walk states of the next ``epochs`` epochs: shape (10, epochs*scale), rows time-major."""
        values = np.empty((10, epochs * self.spec.scale), dtype=np.float64)
        self._kernels.walk_epochs(self._words, self._cursor, self._states, self._epochs_emitted > 0, values)
        self._epochs_emitted += epochs
        return values


def frames(
    spec: DatasetSpec,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    fields: str = "double",
    symbol_dtype: str = "category",
    first_chunk_rows: int | None = None,
) -> Iterator[pd.DataFrame]:
    """DataFrames of ``chunk_rows`` consecutive rows of the data set (the last one may be shorter); the
    first one of ``first_chunk_rows`` if given and smaller (so that a stream's first bytes come sooner).

    ``fields='long'`` gives TSBS's printed values (each state truncated to int64); ``'double'`` the
    walk states themselves. Tags, timestamps and row order are the same in both.
    """
    simulator = CpuOnlySimulator(spec)
    # A group's chunk is cut from groups x the rows, so that it holds about ``chunk_rows`` of the group's.
    whole_rows, whole_first = chunk_rows * spec.groups, first_chunk_rows and first_chunk_rows * spec.groups
    for first_row, values in _walk_chunks(simulator, whole_rows, whole_first):
        rows = np.arange(first_row, first_row + values.shape[1], dtype=np.int64)
        if spec.grouped:  # the group's rows of the chunk (``groups``)
            offset = groups.first_in_group(first_row, spec.group, spec.groups)
            rows, values = rows[offset::spec.groups], np.ascontiguousarray(values[:, offset::spec.groups])
        if len(rows):
            yield _frame(spec, simulator.hosts, rows, values, fields, symbol_dtype)


def text_jobs(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS,
              first_chunk_rows: int | None = None) -> Iterator[TextJob]:
    """TSBS's own bytes (``--fields long``) of the chunks ``frames`` would give, as jobs that each print
    one chunk (``ilp_text``) and return (rows, [its bytes]); the walk itself runs as the iterator advances,
    so a pool can print earlier chunks meanwhile (``ingest.ordered_write``)."""
    simulator = CpuOnlySimulator(spec)
    printer = RowPrinter(TABLE_NAME, {tag: simulator.hosts.strings(tag) for tag in TAG_COLUMNS}, FIELD_COLUMNS,
                         spec.start_ns, spec.interval_ns)
    for first_row, values in _walk_chunks(simulator, chunk_rows, first_chunk_rows):
        yield partial(_printed, printer, first_row, values, spec.group, spec.groups)


def _printed(printer: RowPrinter, first_row: int, values: np.ndarray, group: int, groups_: int) -> tuple[int, list]:
    # A group's rows are every groups_-th row of the chunk, from its first one in it: printed alone.
    offset = groups.first_in_group(first_row, group, groups_)
    kept = values[:, offset::groups_]
    return kept.shape[1], [printer.print_rows(first_row + offset, kept, groups_)]


def _walk_chunks(simulator: CpuOnlySimulator, chunk_rows: int,
                 first_chunk_rows: int | None) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, walk states of the chunk's rows: shape (10, rows)) of consecutive chunks, as ``frames``
    cuts them."""
    spec = simulator.spec
    scale, total_rows = spec.scale, spec.row_count
    chunk_rows = min(chunk_rows, total_rows)  # a chunk larger than the run would only allocate emptiness
    first_chunk_rows = min(first_chunk_rows or chunk_rows, chunk_rows)
    pending: list[np.ndarray] = []  # value blocks not yet handed out, oldest first
    pending_rows = 0
    first_row = 0
    while first_row < total_rows:
        rows = min(chunk_rows if first_row else first_chunk_rows, total_rows - first_row)
        if pending_rows < rows:
            # The epochs this chunk still lacks, walked in one call (the walk does not care how it is cut).
            block = simulator.next_values(-(-(rows - pending_rows) // scale))
            pending.append(block)
            pending_rows += block.shape[1]
        values = pending[0] if len(pending) == 1 else np.concatenate(pending, axis=1)
        chunk_values, rest = values[:, :rows], values[:, rows:]
        pending, pending_rows = ([rest] if rest.shape[1] else []), rest.shape[1]
        yield first_row, chunk_values
        first_row += rows


def chunks(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS, fields: str = "double",
           symbol_dtype: str = "category", table: str = TABLE_NAME,
           first_chunk_rows: int | None = None) -> Iterator[Chunk]:
    """``frames`` as chunks of the ingest layer: each maps the table to its rows."""
    for frame in frames(spec, chunk_rows, fields, symbol_dtype, first_chunk_rows):
        yield {table: frame}


def schema(fields: str, table: str = TABLE_NAME) -> TableSchema:
    """The cpu table: 10 SYMBOL tags, 10 fields DOUBLE (``double``) or LONG (``long``)."""
    sql_type = choice(FieldType, fields, "fields").sql_type
    return TableSchema(table, TAG_COLUMNS, tuple((name, sql_type) for name in FIELD_COLUMNS),
                       series_tags=("hostname",))


def _frame(
    spec: DatasetSpec, hosts: Hosts, row_index: np.ndarray, values: np.ndarray, fields: str, symbol_dtype: str
) -> pd.DataFrame:
    """``values``' rows as a cpu frame; ``row_index`` numbers them among the measurement's rows (epoch-major)."""
    import pandas as pd

    epoch, host = np.divmod(row_index, spec.scale)
    columns = host_tag_columns(hosts, host, symbol_dtype)
    field_values = values.astype(np.int64) if fields == FieldType.long else values
    for position, field in enumerate(FIELD_COLUMNS):
        columns[field] = field_values[position]
    columns[TIMESTAMP_COLUMN] = timestamp_column(spec, epoch)
    return pd.DataFrame(columns, copy=False)


@dataclass(frozen=True)
class CpuOnly(TsbsSource):
    """cpu-only in the use-case registry (``harness.tsbs.use_cases``): one table, ``cpu``."""

    name: str = NAME
    measurements_per_host: int = 1
    default_chunk_rows: int = DEFAULT_CHUNK_ROWS
    renamable_table: bool = True
    row_api: bool = True
    unique_keys: bool = True
    known_schemas: bool = True
    in_time_order: bool = True
    # A host's walk states and tag codes, and a chunk row's values, row index, tag codes and timestamps
    # with pandas' copies, with margin.
    bytes_per_host: int = 400
    bytes_per_chunk_row: int = 600
    # A row held whole before the timed phases (the DataFrames measured at 80-125 bytes a row), with margin.
    bytes_per_held_row: int = 200

    query_types: tuple[str, ...] = QUERY_TYPES
    query_module: str = "harness.tsbs.devops.queries"
    dataframe_symbols: bool = True
    dataframe_at: str = TIMESTAMP_COLUMN
    # The default use case: its runs' names say nothing of it.
    mode_prefix = ""

    def tables(self, table: str | None = None) -> tuple[str, ...]:
        return (table or TABLE_NAME,)

    def schemas(self, fields: FieldType, table: str | None = None) -> list[TableSchema]:
        return [schema(fields, table or TABLE_NAME)]

    def chunks(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType, symbol_dtype: SymbolDtype,
               table: str | None = None, first_chunk_rows: int | None = None) -> Iterator[Chunk]:
        return chunks(spec, chunk_rows, fields, symbol_dtype, table or TABLE_NAME, first_chunk_rows)

    def table_rows(self, spec: DatasetSpec, table: str | None = None) -> dict[str, int]:
        return {table or TABLE_NAME: int(groups.lines_before(spec.row_count, spec.group, spec.groups))}

    def text_jobs(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType,
                  first_chunk_rows: int | None = None) -> Iterator[TextJob] | None:
        return text_jobs(spec, chunk_rows, first_chunk_rows) if fields == FieldType.long else None

    def go_floats(self, fields: FieldType) -> bool:
        return False  # TSBS prints cpu-only's fields as integers; doubles have no TSBS original


USE_CASE = CpuOnly()
