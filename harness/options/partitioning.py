"""The user's table's partitioning as a command takes it (``--partition-by``): a unit, or the default chosen from
the data (``harness.own_data.partitioning``), bounded by the mappings of the server the command's --host names."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import UsageError
from harness.options.declare import option
from harness.telemetry.timeseries import LOCAL_HOSTS


@dataclass
class PartitionOptions:
    """How the table a user's file fills is partitioned: what ``bench --data``, ``paths --data``, ``tune --data``,
    ``inspect`` and ``read --check-against`` (which makes no table but checks the one it reads) take alike."""

    partition_by: str | None = option(None, "The table's PARTITION BY: NONE, HOUR, DAY, WEEK, MONTH or YEAR (any "
                                            "case). Default: chosen from the data's time span, rows and columns, "
                                            "within the server's vm.max_map_count; the run says which and why "
                                            "(docs/own-data.md). TSBS's tables are always DAY.")

    def check_values(self) -> None:
        super().check_values()
        if self.partition_by is None:
            return
        from harness.own_data.partitioning import ALL_UNITS, NONE, parse_unit  # pandas: only where a unit is given

        unit = parse_unit(self.partition_by)
        if unit is None:
            raise UsageError(f"--partition-by: {', '.join(ALL_UNITS[:-1])} or {ALL_UNITS[-1]}, got "
                             f"{self.partition_by!r}")
        if unit == NONE and str(getattr(self, "table_wal", "")) == "wal":
            raise UsageError("--partition-by NONE: QuestDB's WAL tables need a partitioning (with --table-wal bypass "
                             "a table may have none)")

    def map_limit(self):
        """The server's vm.max_map_count: this machine's where --host is local (a native or Docker server shares its
        kernel), else Linux's default, assumed."""
        from harness.own_data.partitioning import map_limit

        return map_limit(getattr(self, "host", "localhost") in LOCAL_HOSTS)
