"""What a use case is: the interface (``UseCase``) every use case of the registry (``harness.tsbs.use_cases``)
implements, and the chunks and text jobs it makes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.params import DatasetSpec
from harness.tsbs.schema import TableSchema

if TYPE_CHECKING:
    import pandas as pd

# A chunk of the data set: each table it has rows of, mapped to its DataFrame of consecutive rows.
Chunk = dict[str, "pd.DataFrame"]
# A job printing one chunk of TSBS's text: returns (rows, [bytes]) (``ingest.ordered_write``).
TextJob = Callable[[], tuple[int, list]]


class UseCase(Protocol):
    """What every part of the harness may ask of a use case."""

    name: str
    # Rows a host gives per epoch: one per measurement it simulates.
    measurements_per_host: int
    # Rows per chunk `generate` uses by default (the client's per-call cost against a chunk's memory).
    default_chunk_rows: int
    # Whether its one table may be given another name (cpu-only's ``--table``).
    renamable_table: bool
    # Whether rows may go row by row through the client's row API (the iterrows/itertuples baselines).
    row_api: bool
    # Whether every row is unique by its series tags and timestamp: what --exactly-once's deduplication keys.
    unique_keys: bool
    # Whether a table of a schema the use case makes is the harness's to drop and make again (TSBS's tables);
    # without, an existing table is the user's: never dropped or written unless the user says so.
    known_schemas: bool
    # Whether TSBS writes each table's rows in time order (iot's arrive partly late; ``--sort`` orders them).
    in_time_order: bool
    # Memory a host and a row of a chunk in flight cost, with margin (``check_memory``).
    bytes_per_host: int
    bytes_per_chunk_row: int
    # Memory a row takes when every chunk is made before the timed phases (no --stream): ``check_held_rows``.
    bytes_per_held_row: int
    # TSBS's query types that run on its data set (empty: none), and the module of harness.tsbs that makes
    # them: its ``Generator(seed, scale, start_ns, end_ns).make(query_type)`` and
    # ``refusal(query_type, scale, start_ns, end_ns)`` (why TSBS would refuse a type, or None).
    query_types: tuple[str, ...]
    query_module: str
    # What a chunk's frames pass the client's ``dataframe()``: ``symbols=`` (True: every string column) and the
    # designated timestamp column ``at=``.
    dataframe_symbols: bool | str | tuple[str, ...]
    dataframe_at: str

    def tables(self, table: str | None = None) -> tuple[str, ...]:
        """Its tables, in TSBS's measurement order (``table`` renames a renamable one)."""

    def schemas(self, fields: FieldType, table: str | None = None) -> list[TableSchema]:
        """Its tables' schemas, in ``tables()`` order."""

    def chunks(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType, symbol_dtype: SymbolDtype,
               table: str | None = None, first_chunk_rows: int | None = None) -> Iterator[Chunk]:
        """The data set in chunks of ``chunk_rows`` rows of all tables together (the first of
        ``first_chunk_rows`` if given), in TSBS's row order; any chunk size gives the same rows. Of a grouped
        spec, its group's rows: the whole data set's chunks, each cut to the group's rows (so chunks hold fewer
        rows, a few none, and are not yielded then)."""

    def table_rows(self, spec: DatasetSpec, table: str | None = None) -> dict[str, int]:
        """Rows per table of ``spec``: of its group where it is one (``spec.groups`` > 1), else of the whole data
        set; ``table_rows(spec.whole)`` counts the whole data set's rows of a group's spec."""

    def text_jobs(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType,
                  first_chunk_rows: int | None = None) -> Iterator[TextJob] | None:
        """TSBS's text printed without the client, where the use case has a printer for ``fields``; else None
        (the chunks then go through the client's serializer)."""

    def go_floats(self, fields: FieldType) -> bool:
        """Whether the client's text of ``fields`` needs Go's float formatting to equal TSBS's bytes."""
