"""The user's table's partitioning as a command takes it (``--partition-by``): a unit, or the default chosen from
the data (``harness.own_data.partitioning``), bounded by the mappings of the server the command's --host names."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UsageError
from harness.options.declare import option
from harness.own_data.choices import PARTITION_UNITS_SAID, partition_unit
from harness.questdb.schema import TableWal
from harness.questdb.process import LOCAL_HOSTS
from harness.tsbs.schema import PARTITION_BY


@dataclass
class PartitionOptions:
    """How the table a user's file fills is partitioned: what ``bench --data``, ``paths --data``, ``tune --data``,
    ``inspect`` and ``read --check-against`` (which makes no table but checks the one it reads) take alike."""

    partition_by: str | None = option(None, f"The table's PARTITION BY: {PARTITION_UNITS_SAID} (any case). "
                                            "Default: chosen from the data's time span, rows and columns, "
                                            "within the server's vm.max_map_count; the run says which and why "
                                            f"(docs/own-data.md). TSBS's tables are always {PARTITION_BY}.")

    def check_values(self) -> None:
        super().check_values()
        if self.partition_by is None:
            return
        unit = partition_unit(self.partition_by)
        if unit is None:
            raise UsageError(f"--partition-by: {PARTITION_UNITS_SAID}, got {self.partition_by!r}")
        if unit == "NONE" and getattr(self, "table_wal", None) == TableWal.wal:
            raise UsageError("--partition-by NONE: QuestDB's WAL tables need a partitioning (with --table-wal bypass "
                             "a table may have none)")

    def map_limit(self):
        """The server's vm.max_map_count: this machine's where --host is local (a native or Docker server shares its
        kernel), else Linux's default, assumed."""
        from harness.own_data.partitioning import map_limit

        return map_limit(getattr(self, "host", "localhost") in LOCAL_HOSTS)
