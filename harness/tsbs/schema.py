"""A measurement's table as QuestDB holds it: SYMBOL tags, typed fields, a designated timestamp, WAL.

Each use case describes its tables with ``TableSchema``; the SQL layer creates and checks tables from it,
so a table's layout is written down once, beside the generator that fills it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

TIMESTAMP_COLUMN = "timestamp"
# How every table is partitioned (QuestDB's ``PARTITION BY``): one partition a day, as TSBS's QuestDB loader.
PARTITION_BY = "DAY"


@dataclass(frozen=True)
class TableSchema:
    """``fields`` pairs each field column with its SQL type (DOUBLE, LONG); tags are all SYMBOL; the designated
    ``timestamp`` is a ``timestamp_type`` column (TIMESTAMP: microseconds; TIMESTAMP_NS).
    ``series_tags`` are the tags that tell one series from another (TSBS: the host), so that with the
    timestamp they key a row: the keys of deduplication."""

    table: str
    tags: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]
    series_tags: tuple[str, ...] = ()
    timestamp: str = TIMESTAMP_COLUMN
    partition_by: str = PARTITION_BY
    timestamp_type: str = "TIMESTAMP"

    @property
    def dedup_keys(self) -> tuple[str, ...]:
        return (self.timestamp, *self.series_tags)

    @property
    def columns(self) -> list[tuple[str, str]]:
        """(name, SQL type) of every column, in table order."""
        return ([(tag, "SYMBOL") for tag in self.tags] + list(self.fields)
                + [(self.timestamp, self.timestamp_type)])

    def renamed(self, table: str) -> TableSchema:
        return dataclasses.replace(self, table=table)
