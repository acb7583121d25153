"""A table as the harness makes it and compares it: created exactly as its ``TableSchema`` says, and an
existing table held against a schema by two rules. ``check_schema``: can it take this run's rows as they are
(an append; extra columns are allowed)? ``schema_difference``: is it the table this benchmark makes (a
drop; any difference means it is not ours to drop)?"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from harness.errors import UsageError, named
from harness.questdb.http import QuestDBSql, checked_table_name
from harness.tsbs.schema import TableSchema


class TableWal(StrEnum):
    """Whether the tables a run makes write through the WAL: wal (WAL), bypass (BYPASS WAL: written directly), or
    server-default (neither keyword: the server's cairo.wal.enabled.default decides)."""

    wal = "wal"
    bypass = "bypass"
    server_default = "server-default"


@dataclass(frozen=True)
class TablePolicy:
    """What a run does with its tables: append to an existing one after a schema check (``keep``), drop one whose
    schema is not the run's (``replace``: by default such a table is not the harness's to drop), make them as ``wal``
    says, deduplicating (``dedup``: exactly-once), and wait this long for the rows sent to become visible."""

    keep: bool = False
    replace: bool = False
    wal: TableWal = TableWal.wal
    dedup: bool = False
    validation_timeout: float = 120.0


_WAL_CLAUSE = {TableWal.wal: " WAL", TableWal.bypass: " BYPASS WAL", TableWal.server_default: ""}


def create_table(questdb: QuestDBSql, schema: TableSchema, dedup: bool = False,
                 wal: TableWal = TableWal.wal) -> None:
    """A table exactly as the schema says: SYMBOL tags, typed fields, designated timestamp, WAL as ``wal`` says;
    with ``dedup``, a row that arrives again (same timestamp and series) replaces itself.

    Created explicitly so that ILP never picks the types (a nanosecond ``at`` under protocol 2 would
    otherwise create a TIMESTAMP_NS column, integers sent as doubles a DOUBLE one)."""
    columns = ", ".join(f"{column_name(name)} {sql_type}" for name, sql_type in schema.columns)
    keys = f" DEDUP UPSERT KEYS({', '.join(map(column_name, schema.dedup_keys))})" if dedup else ""
    questdb.exec(f"create table '{checked_table_name(schema.table)}' ({columns}) "
                 f"timestamp({column_name(schema.timestamp)}) partition by {schema.partition_by}"
                 f"{_WAL_CLAUSE[TableWal(wal)]}{keys}")


def column_name(name: str) -> str:
    """A column's name quoted for SQL: a user's columns may be keywords (``count``, ``sample``) or hold spaces."""
    if '"' in name or any(ord(char) < 32 for char in name):
        raise UsageError(f"column name {name!r}: QuestDB column names hold no double quotes or control characters")
    return f'"{name}"'


def check_schema(questdb: QuestDBSql, schema: TableSchema, dedup: bool = False) -> None:
    """Raise UsageError unless the table exists and can take rows of ``schema`` as they are: every
    column of the schema there with its type, the timestamp designated, and (``dedup``) deduplication
    on. Extra columns are allowed (they stay null)."""
    columns = questdb.show_columns(schema.table)
    if columns is None:
        raise UsageError(f"table {schema.table} does not exist")
    # QuestDB column names are case-insensitive.
    actual = {str(column["column"]).lower(): column for column in columns}
    clashes = []
    for name, wanted in schema.columns:
        column = actual.get(name)
        if column is None:
            clashes.append(f"{name} is missing")
        elif column["type"] != wanted:
            clashes.append(f"{name} is {column['type']}, needs {wanted}")
    timestamp = actual.get(schema.timestamp)
    if timestamp is not None and not timestamp.get("designated"):
        clashes.append(f"{schema.timestamp} is not the designated timestamp")
    partitioned = questdb.table_layout(schema.table).get("partitionBy")
    if partitioned and partitioned != schema.partition_by:
        # Rows append to any partitioning, but the run would hold a table other than the one its record names.
        clashes.append(f"it is partitioned by {partitioned}, this run's by {schema.partition_by} "
                       f"({named('partition_by')} {partitioned} matches it)")
    if dedup and not questdb.deduplicates(schema.table):
        clashes.append("deduplication is off (--exactly-once needs DEDUP UPSERT KEYS)")
    if clashes:
        shown = "; ".join(clashes[:3]) + (f"; and {len(clashes) - 3} more" if len(clashes) > 3 else "")
        raise UsageError(
            f"table {schema.table} exists with a schema incompatible with this run ({shown}); "
            f"drop it or run without --keep-table"
        )


def schema_difference(questdb: QuestDBSql, schema: TableSchema, wal: TableWal = TableWal.wal) -> str | None:
    """The first way the existing table differs from ``schema`` as ``create_table`` makes it (a column
    missing, of another type or extra, the designated timestamp, the partitioning, WAL unless the server's
    default decides it), or None when it is the same. Deduplication is not compared: a run sets it either way on
    the tables it makes."""
    columns = questdb.table_columns(schema.table)
    if columns is None:
        return None
    actual = {name.lower(): sql_type for name, sql_type in columns}
    for name, wanted in schema.columns:
        if name not in actual:
            return f"it has no column {name} ({wanted})"
        if actual[name] != wanted:
            return f"its column {name} is {actual[name]}, the benchmark's is {wanted}"
    extra = [name for name, _ in columns if name.lower() not in dict(schema.columns)]
    if extra:
        return f"it has a column {extra[0]} ({actual[extra[0].lower()]}) the benchmark's has not"
    layout = questdb.table_layout(schema.table)
    if str(layout.get("designatedTimestamp") or "").lower() != schema.timestamp:
        return (f"its designated timestamp is {layout.get('designatedTimestamp') or 'none'}, the benchmark's "
                f"is {schema.timestamp}")
    if layout.get("partitionBy") != schema.partition_by:
        return f"it is partitioned by {layout.get('partitionBy')}, the benchmark's by {schema.partition_by}"
    if wal == TableWal.wal and not layout.get("walEnabled"):
        return "it is not a WAL table, the benchmark's is"
    if wal == TableWal.bypass and layout.get("walEnabled"):
        return "it is a WAL table, the benchmark's is not (--table-wal bypass)"
    return None
