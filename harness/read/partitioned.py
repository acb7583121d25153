"""``read --check-against``'s word on the table's partitioning: the table it reads was made by ``bench --data`` of the
same file and flags, so its ``PARTITION BY`` is the unit ``--partition-by`` names (a table otherwise partitioned is
refused, in one line naming the flag) or, without it, the one the data chooses (``harness.own_data.partitioning``:
the file's time span and rows, the table's columns), said beside what the table has."""

from __future__ import annotations

from harness.errors import UsageError, named
from harness.own_data.frames import DataFrames
from harness.own_data.choices import partition_unit
from harness.own_data.partitioning import MapLimit, TimeSpan, choose, utc
from harness.questdb.http import QuestDBSql


def partitioning_said(questdb: QuestDBSql, table: str, data: DataFrames, at: str, partition_by: str | None,
                      limit: MapLimit) -> str:
    """The line the read says of ``table``'s partitioning against ``data``'s (``at``: its designated timestamp);
    a UsageError where the table is not partitioned as ``partition_by`` names."""
    held = questdb.table_layout(table).get("partitionBy")
    if partition_by is not None:
        unit = partition_unit(partition_by)
        if held != unit:
            raise UsageError(f"{named('partition_by')} {unit}: table {table} is partitioned by {held}")
        return f"Table {table} partitioned by {held}, as {named('partition_by')} says"
    found = data.time_span(at)
    columns = questdb.table_columns(table) or []
    if found is None or not columns:
        return f"Table {table} partitioned by {held}"
    rows = data.rows()
    span = TimeSpan(utc(found[0]), utc(found[1]), rows, f"the least and greatest {at} of its {rows:,} rows")
    chosen = choose(span, [sql_type for _, sql_type in columns], limit)
    if chosen.by == held:
        return f"Table {table} {chosen.line}"
    return (f"Table {table} partitioned by {held}, not as the data would choose ({chosen.line}): made with "
            f"{named('partition_by')} {held}, or by another run")
