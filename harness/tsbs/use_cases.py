"""The use cases the harness reproduces, by name, behind one interface (``UseCase``): the one place a use
case is chosen. Commands, the session and the query layer ask the registry (``get``) for tables, schemas,
chunks, rows per table, memory and query types instead of branching on a name.

A use case's module is imported when it is first asked for, so a command that uses cpu-only never loads
devops's kernels and pandas.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import psutil

from harness.errors import ParameterError, UsageError
from harness.tsbs import params
from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.params import DatasetSpec
from harness.tsbs.schema import TableSchema

if TYPE_CHECKING:
    import pandas as pd

# Name -> the module whose ``USE_CASE`` implements it, in the order help texts list them.
_MODULES = {
    "cpu-only": "harness.tsbs.cpu_only",
    "devops": "harness.tsbs.devops",
    "iot": "harness.tsbs.iot",
}
NAMES = tuple(_MODULES)
DEFAULT = "cpu-only"

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
    # Whether TSBS writes each table's rows in time order (iot's arrive partly late; ``--sort`` orders them).
    in_time_order: bool
    # Memory a host and a row of a chunk in flight cost, with margin (``check_memory``).
    bytes_per_host: int
    bytes_per_chunk_row: int
    # TSBS's query types that run on its data set (empty: none), and the module of harness.tsbs that makes
    # them: its ``Generator(seed, scale, start_ns, end_ns).make(query_type)`` and
    # ``refusal(query_type, scale, start_ns, end_ns)`` (why TSBS would refuse a type, or None).
    query_types: tuple[str, ...]
    query_module: str

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


def get(name: str) -> UseCase:
    """The use case called ``name``."""
    module = _MODULES.get(str(name))
    if module is None:
        raise ParameterError("use_case", f"unknown use case {name!r} (supported: {', '.join(NAMES)})")
    return importlib.import_module(module).USE_CASE


def make_spec(*, use_case: str = DEFAULT, **flags: Any) -> DatasetSpec:
    """``params.make_spec`` for the use case called ``use_case`` (``flags``: seed, scale, timestamp_start,
    timestamp_end, log_interval, row_limit, time_ordered, interleaved_generation_group_id,
    interleaved_generation_groups)."""
    chosen = get(use_case)
    if flags.get("time_ordered") and chosen.in_time_order:
        raise ParameterError("time_ordered", f"{chosen.name}'s rows are in time order as TSBS writes them: "
                                             f"nothing to sort")
    return params.make_spec(use_case=str(use_case), measurements_per_host=chosen.measurements_per_host, **flags)


def memory_needed(use_case: UseCase, scale: int, chunk_rows: int) -> int:
    """Bytes the hosts of ``scale`` and a chunk of ``chunk_rows`` rows in flight need."""
    return scale * use_case.bytes_per_host + chunk_rows * use_case.bytes_per_chunk_row


def check_memory(use_case: UseCase, scale: int, chunk_rows: int) -> None:
    """Refuse, in one line, a scale or chunk size this machine's free memory cannot hold."""
    needed = memory_needed(use_case, scale, chunk_rows)
    available = psutil.virtual_memory().available
    if needed > available:
        raise UsageError(f"{use_case.name} at a scale of {scale} hosts with chunks of {chunk_rows} rows needs about "
                         f"{needed / 2**30:.1f} GiB; {available / 2**30:.1f} GiB of memory is available")


def ilp_file_use_case(table_lines: dict[str, int]) -> UseCase | None:
    """The use case whose tables an ILP file's lines (``table -> lines``) fill: the first registered one
    whose tables hold every measurement the file names; None if none does."""
    named = {table for table, lines in table_lines.items() if lines}
    for name in NAMES:
        use_case = get(name)
        if named <= set(use_case.tables()):
            return use_case
    return None


def known_tables() -> tuple[str, ...]:
    """Every table any use case writes (under its own names), each once."""
    return tuple(dict.fromkeys(table for name in NAMES for table in get(name).tables()))


def schemas_named(table: str) -> list[TableSchema]:
    """Every schema a run of any use case, with any fields, gives a table called ``table`` (a renamable
    table under that name too): what the harness itself may have left there."""
    found = []
    for name in NAMES:
        use_case = get(name)
        for fields in FieldType:
            for schema in use_case.schemas(fields, table if use_case.renamable_table else None):
                if schema.table.lower() == table.lower() and schema not in found:
                    found.append(schema)
    return found
