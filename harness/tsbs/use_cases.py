"""The use cases the harness reproduces, by name, behind one interface (``harness.tsbs.use_case``): the one
place a use case is chosen. Commands, the session and the query layer ask the registry (``get``) for tables, schemas,
chunks, rows per table, memory and query types instead of branching on a name.

A use case's module is imported when it is first asked for, so a command that uses cpu-only never loads
devops's kernels and pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.errors import ParameterError
from harness.tsbs import params
from harness.tsbs.choices import FieldType
from harness.tsbs.params import DatasetSpec
from harness.tsbs.schema import TableSchema
from harness.tsbs.use_case import UseCase

# Name -> the module whose ``USE_CASE`` implements it, in the order help texts list them.
_MODULES = {
    "cpu-only": "harness.tsbs.cpu_only.generator",
    "devops": "harness.tsbs.devops.generator",
    "iot": "harness.tsbs.iot.use_case",
}
NAMES = tuple(_MODULES)
DEFAULT = "cpu-only"

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
