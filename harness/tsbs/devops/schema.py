"""The nine tables of TSBS's ``devops`` use case: each measurement's tags, fields and their SQL types.

Every row carries the host's ten tags (as cpu-only's), then its measurement's own tags. A field is one
of three kinds:

- ``walk``: a random walk's state, which TSBS prints truncated to int64 (``--fields long``: LONG); with
  ``--fields double`` the state itself (DOUBLE), as for cpu-only;
- ``long``: a value TSBS derives as an integer (disk sizes, memory bytes, boot time, uptime): LONG always;
- ``double``: a ratio TSBS prints as a float (mem's percentages): DOUBLE always.

The measurement order is TSBS's: within an epoch every host's cpu row comes first, then every host's
diskio row, and so on. ``postgresl`` is spelled as TSBS spells it.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.tsbs.choices import FieldType, choice
from harness.tsbs.devops.cpu_schema import FIELD_COLUMNS
from harness.tsbs.hosts import TAG_COLUMNS
from harness.tsbs.schema import TableSchema

WALK, LONG, DOUBLE = "walk", "long", "double"


@dataclass(frozen=True)
class Measurement:
    """One devops measurement: its table, the tags it adds to the host's, and its fields with their kinds."""

    table: str
    tags: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.fields)

    def sql_type(self, kind: str, fields: str) -> str:
        if kind == WALK:
            return choice(FieldType, fields, "fields").sql_type
        return "LONG" if kind == LONG else "DOUBLE"

    def schema(self, fields: str) -> TableSchema:
        return TableSchema(self.table, TAG_COLUMNS + self.tags,
                           tuple((name, self.sql_type(kind, fields)) for name, kind in self.fields),
                           series_tags=("hostname",))


def _walks(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, WALK) for name in names)


CPU = Measurement("cpu", (), _walks(*FIELD_COLUMNS))
DISKIO = Measurement("diskio", ("serial",), _walks("reads", "writes", "read_bytes", "write_bytes", "read_time",
                                                   "write_time", "io_time"))
DISK = Measurement("disk", ("path", "fstype"), tuple((name, LONG) for name in (
    "total", "free", "used", "used_percent", "inodes_total", "inodes_free", "inodes_used")))
KERNEL = Measurement("kernel", (), (("boot_time", LONG),) + _walks(
    "interrupts", "context_switches", "processes_forked", "disk_pages_in", "disk_pages_out"))
MEM = Measurement("mem", (), tuple((name, LONG) for name in ("total", "available", "used", "free", "cached",
                                                             "buffered"))
                  + tuple((name, DOUBLE) for name in ("used_percent", "available_percent", "buffered_percent")))
NET = Measurement("net", ("interface",), _walks("bytes_sent", "bytes_recv", "packets_sent", "packets_recv",
                                                "err_in", "err_out", "drop_in", "drop_out"))
NGINX = Measurement("nginx", ("port", "server"), _walks("accepts", "active", "handled", "reading", "requests",
                                                        "waiting", "writing"))
POSTGRESQL = Measurement("postgresl", (), _walks(
    "numbackends", "xact_commit", "xact_rollback", "blks_read", "blks_hit", "tup_returned", "tup_fetched",
    "tup_inserted", "tup_updated", "tup_deleted", "conflicts", "temp_files", "temp_bytes", "deadlocks",
    "blk_read_time", "blk_write_time"))
REDIS = Measurement("redis", ("port", "server"), (("uptime_in_seconds", LONG),) + _walks(
    "total_connections_received", "expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses",
    "instantaneous_ops_per_sec", "instantaneous_input_kbps", "instantaneous_output_kbps", "connected_clients",
    "used_memory", "used_memory_rss", "used_memory_peak", "used_memory_lua", "rdb_changes_since_last_save",
    "sync_full", "sync_partial_ok", "sync_partial_err", "pubsub_channels", "pubsub_patterns", "latest_fork_usec",
    "connected_slaves", "master_repl_offset", "repl_backlog_active", "repl_backlog_size", "repl_backlog_histlen",
    "mem_fragmentation_ratio", "used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"))

MEASUREMENTS = (CPU, DISKIO, DISK, KERNEL, MEM, NET, NGINX, POSTGRESQL, REDIS)
TABLES = tuple(measurement.table for measurement in MEASUREMENTS)


def schemas(fields: str) -> list[TableSchema]:
    """The nine tables, in TSBS's measurement order."""
    return [measurement.schema(fields) for measurement in MEASUREMENTS]
