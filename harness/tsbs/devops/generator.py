"""TSBS's ``devops`` use case as pandas DataFrames: nine measurements per host, one table each.

Owns the order in which TSBS draws from Go's source (see ``go.rand``) for devops:

1. Every host 0..scale-1 is created before any row. A host first builds its nine measurements in order,
   then draws its tags exactly as cpu-only's hosts do (``kernels.draw_host_tags``). The measurements
   draw: cpu 10 x ``Float64()*100`` (initial walk states); diskio its serial ``Intn(1000)`` x 3; disk its
   path ``Intn(10)`` and fstype ``Intn(3)``; kernel its boot time ``Int63n(240)``; mem its total
   ``Intn(3)`` (8, 12 or 16 GiB), then 3 x ``Float64()*total`` (used, cached, buffered); net its interface
   ``Intn(4)``; nginx its server ``Intn(100000)`` and port ``Int63n(20000)+1024``; postgresl nothing;
   redis its server and port as nginx.
2. Epoch k is printed measurement by measurement: every host's cpu row, then every host's diskio row, ...
   then every host's redis row, all at ``start + k*interval``. The first epoch shows the initial states;
   before each later epoch every host advances, host by host, measurement by measurement, distribution by
   distribution: one ``NormFloat64()`` each, ``step = n*stddev + mean``, then a clamped walk adds the step
   and clamps to [min, max], a monotonic walk adds its absolute value, a plain walk adds it.

The 87 distributions of a host are held as one row of a state matrix, in that tick order (``DISTRIBUTIONS``).

``chunks(spec, chunk_rows)`` yields chunks (``dict[table, DataFrame]``, tables in measurement order) of
exactly ``chunk_rows`` rows in all (the last may be shorter), taken in TSBS's row order: each table's
frame holds that table's rows of the chunk, epoch by epoch. Any chunk size gives the same rows per table.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from harness.tsbs import groups
from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.devops.schema import MEASUREMENTS, TABLES, WALK, Measurement, schemas
from harness.tsbs.go.rand import GoRand, go_float64, go_int31n, go_int63n, go_norm_float64
from harness.tsbs.hosts import (
    DATACENTER_COUNTS,
    DATACENTER_OFFSETS,
    HOST_TAG_DRAWS,
    Hosts,
    host_table,
    host_tag_columns,
    symbol_column,
    timestamp_column,
)
from harness.tsbs.kernels import draw_host_tags
from harness.tsbs.params import DatasetSpec
from harness.tsbs.query_types import QUERY_TYPES
from harness.tsbs.schema import TIMESTAMP_COLUMN, TableSchema
from harness.tsbs.use_case import TsbsSource

NAME = "devops"
# Counted in rows of all tables (each gets ~1/9). Every dataframe() call costs the client a set-up that
# grows with the square of the columns (redis: 45), so chunks are twice cpu-only's; 100k rows keep the
# widest table's ILP (redis, ~900 bytes a line) near 10 MB.
DEFAULT_CHUNK_ROWS = 100_000

# Distribution kinds: TSBS's ClampedRandomWalk, MonotonicRandomWalk and RandomWalk; MEM_CLAMPED is a
# clamped walk whose step deviation (total/64) and maximum (total) are the host's memory size.
CLAMPED, MONOTONIC, WALK_PLAIN, MEM_CLAMPED = 0, 1, 2, 3

ONE_TERABYTE = float(1 << 40)
SIXTEEN_GIB = float(16 << 30)
INODE_SIZE = 4096
MEMORY_TOTALS = np.array([8 << 30, 12 << 30, 16 << 30], dtype=np.int64)


def _clamped(mean, stddev, low, high, start=0.0):
    return (CLAMPED, mean, stddev, low, high, start)


def _monotonic(mean, stddev=1.0):
    return (MONOTONIC, mean, stddev, 0.0, 0.0, 0.0)


_MEM = (MEM_CLAMPED, 0.0, 0.0, 0.0, 0.0, 0.0)  # per-host: drawn at creation
# (kind, mean, stddev, min, max, initial state) of each distribution, in a host's tick order.
_DISTRIBUTIONS = {
    "cpu": [_clamped(0.0, 1.0, 0.0, 100.0)] * 10,  # initial states drawn at creation
    "diskio": [_monotonic(50.0)] * 2 + [_monotonic(100.0)] * 2 + [_monotonic(5.0)] * 3,
    "disk": [_clamped(50.0, 1.0, 0.0, ONE_TERABYTE, ONE_TERABYTE / 2)],
    "kernel": [_monotonic(5.0)] * 5,
    "mem": [_MEM] * 3,
    "net": [_monotonic(50.0)] * 4 + [_monotonic(5.0)] * 4,
    "nginx": [_monotonic(5.0), _clamped(5.0, 1.0, 0.0, 100.0)] * 2 + [_monotonic(5.0)]
             + [_clamped(5.0, 1.0, 0.0, 100.0)] * 2,
    "postgresl": [_clamped(5.0, 1.0, 0.0, 1000.0)] * 12 + [_clamped(1024.0, 1.0, 0.0, float(1 << 30))]
                 + [_clamped(5.0, 1.0, 0.0, 1000.0)] * 3,
    "redis": [_monotonic(5.0)] + [_monotonic(50.0)] * 4 + [(WALK_PLAIN, 1.0, 1.0, 0.0, 0.0, 0.0)] * 3
             + [_clamped(50.0, 1.0, 0.0, 10000.0)] + [_clamped(50.0, 1.0, 0.0, SIXTEEN_GIB, SIXTEEN_GIB / 2)] * 4
             + [_clamped(50.0, 1.0, 0.0, 10000.0)] + [_clamped(5.0, 1.0, 0.0, 1000.0)] * 11
             + [_clamped(5.0, 1.0, 0.0, 100.0)] + [_clamped(5.0, 1.0, 0.0, 1000.0)] * 4,
}
# First state column of each measurement's distributions.
STATE_OFFSETS = dict(zip(TABLES, np.cumsum([0] + [len(_DISTRIBUTIONS[t]) for t in TABLES])[:-1].tolist()))
DISTRIBUTIONS = np.array([d for table in TABLES for d in _DISTRIBUTIONS[table]], dtype=np.float64)
DISTRIBUTION_COUNT = len(DISTRIBUTIONS)  # 87
_KINDS = DISTRIBUTIONS[:, 0].astype(np.int64)
_MEANS, _STDDEVS, _MINS, _MAXES, _INITIAL = (DISTRIBUTIONS[:, i].copy() for i in range(1, 6))
_CPU, _MEM_STATES = STATE_OFFSETS["cpu"], STATE_OFFSETS["mem"]

# Per-host draws of the measurements (columns of the host's "measurement codes").
(_SERIAL_A, _SERIAL_B, _SERIAL_C, _PATH, _FSTYPE, _BOOT_TIME, _MEM_TOTAL, _INTERFACE, _NGINX_SERVER,
 _NGINX_PORT, _REDIS_SERVER, _REDIS_PORT) = range(12)
_MEASUREMENT_DRAWS = 12
FSTYPES = ("ext3", "ext4", "btrfs")


@numba.njit(cache=True)
def _create_hosts(words, cursor, scale, datacenter_offsets, datacenter_counts, initial, memory_totals, states,
                  draws, tag_codes):
    for host in range(scale):
        for column in range(initial.shape[0]):
            states[host, column] = initial[column]
        for field in range(10):
            states[host, _CPU + field] = go_float64(words, cursor) * 100.0
        draws[host, _SERIAL_A] = go_int31n(words, cursor, 1000)
        draws[host, _SERIAL_B] = go_int31n(words, cursor, 1000)
        draws[host, _SERIAL_C] = go_int31n(words, cursor, 1000)
        draws[host, _PATH] = go_int31n(words, cursor, 10)
        draws[host, _FSTYPE] = go_int31n(words, cursor, 3)
        draws[host, _BOOT_TIME] = go_int63n(words, cursor, 240)
        total = memory_totals[go_int31n(words, cursor, 3)]
        draws[host, _MEM_TOTAL] = total
        for field in range(3):
            states[host, _MEM_STATES + field] = go_float64(words, cursor) * np.float64(total)
        draws[host, _INTERFACE] = go_int31n(words, cursor, 4)
        draws[host, _NGINX_SERVER] = go_int31n(words, cursor, 100000)
        draws[host, _NGINX_PORT] = go_int63n(words, cursor, 20000) + 1024
        draws[host, _REDIS_SERVER] = go_int31n(words, cursor, 100000)
        draws[host, _REDIS_PORT] = go_int63n(words, cursor, 20000) + 1024
        draw_host_tags(words, cursor, host, datacenter_offsets, datacenter_counts, tag_codes)


# nogil: serializer threads run while the next epochs are drawn.
@numba.njit(cache=True, nogil=True)
def _walk_epochs(words, cursor, states, kinds, means, stddevs, mins, maxes, memory_totals, advance_first, values):
    """Fill ``values`` (87 x epochs*scale, by distribution) with the states of consecutive epochs."""
    scale, count = states.shape
    epochs = values.shape[1] // scale
    for epoch in range(epochs):
        if epoch > 0 or advance_first:
            for host in range(scale):
                for column in range(count):
                    kind = kinds[column]
                    normal = go_norm_float64(words, cursor)
                    state = states[host, column]
                    if kind == MONOTONIC:
                        state += abs(normal * stddevs[column] + means[column])
                    elif kind == WALK_PLAIN:
                        state += normal * stddevs[column] + means[column]
                    else:
                        if kind == MEM_CLAMPED:
                            total = np.float64(memory_totals[host])
                            state += normal * (total / 64.0) + 0.0
                            high, low = total, 0.0
                        else:
                            state += normal * stddevs[column] + means[column]
                            high, low = maxes[column], mins[column]
                        if state > high:
                            state = high
                        if state < low:
                            state = low
                    states[host, column] = state
        base = epoch * scale
        for column in range(count):
            for host in range(scale):
                values[column, base + host] = states[host, column]


@dataclass(frozen=True)
class MeasurementTags:
    """A measurement's own tags per host: codes into categories (they never change for a host)."""

    codes: dict[str, np.ndarray]
    categories: dict[str, pd.CategoricalDtype]


def _factorized(strings: list[str]) -> tuple[np.ndarray, pd.CategoricalDtype]:
    codes, uniques = pd.factorize(np.asarray(strings, dtype=object))
    return codes.astype(np.int32), pd.CategoricalDtype(pd.Index(uniques, dtype="string[pyarrow]"))


class DevopsSimulator:
    """Stateful TSBS devops simulator: hosts on construction, then ``next_states`` hands out the 87
    distribution states of consecutive epochs."""

    def __init__(self, spec: DatasetSpec):
        self.spec = spec
        self._rng = GoRand(spec.seed)
        scale = spec.scale
        self._states = np.empty((scale, DISTRIBUTION_COUNT), dtype=np.float64)
        draws = np.empty((scale, _MEASUREMENT_DRAWS), dtype=np.int64)
        tag_codes = np.empty((scale, HOST_TAG_DRAWS), dtype=np.int64)
        _create_hosts(self._rng.words, self._rng.cursor, scale, DATACENTER_OFFSETS, DATACENTER_COUNTS, _INITIAL,
                      MEMORY_TOTALS, self._states, draws, tag_codes)
        self.hosts: Hosts = host_table(scale, tag_codes)
        self.memory_totals = draws[:, _MEM_TOTAL].copy()
        self.boot_times = draws[:, _BOOT_TIME].copy()
        self.tags = _measurement_tags(draws)
        self._epochs_emitted = 0

    def next_states(self, epochs: int) -> np.ndarray:
        """States of the next ``epochs`` epochs: shape (87, epochs*scale), epoch-major."""
        values = np.empty((DISTRIBUTION_COUNT, epochs * self.spec.scale), dtype=np.float64)
        _walk_epochs(self._rng.words, self._rng.cursor, self._states, _KINDS, _MEANS, _STDDEVS, _MINS, _MAXES,
                     self.memory_totals, self._epochs_emitted > 0, values)
        self._epochs_emitted += epochs
        return values


def _measurement_tags(draws: np.ndarray) -> MeasurementTags:
    """The per-host strings TSBS formats from the draws, once per host (never per row)."""
    column = {name: draws[:, index].tolist() for name, index in (
        ("a", _SERIAL_A), ("b", _SERIAL_B), ("c", _SERIAL_C), ("path", _PATH), ("interface", _INTERFACE),
        ("nginx_server", _NGINX_SERVER), ("nginx_port", _NGINX_PORT), ("redis_server", _REDIS_SERVER),
        ("redis_port", _REDIS_PORT))}
    strings = {
        ("diskio", "serial"): [f"{a:03d}-{b:03d}-{c:03d}" for a, b, c in zip(column["a"], column["b"], column["c"])],
        ("disk", "path"): [f"/dev/sda{n}" for n in column["path"]],
        ("disk", "fstype"): [FSTYPES[n] for n in draws[:, _FSTYPE].tolist()],
        ("net", "interface"): [f"eth{n}" for n in column["interface"]],
        ("nginx", "port"): [str(n) for n in column["nginx_port"]],
        ("nginx", "server"): [f"nginx_{n}" for n in column["nginx_server"]],
        ("redis", "port"): [str(n) for n in column["redis_port"]],
        ("redis", "server"): [f"redis_{n}" for n in column["redis_server"]],
    }
    codes, categories = {}, {}
    for key, values in strings.items():
        codes[key], categories[key] = _factorized(values)
    return MeasurementTags(codes, categories)


def _field_values(measurement: Measurement, states: np.ndarray, host: np.ndarray, epoch: np.ndarray,
                  simulator: DevopsSimulator, fields: str) -> dict[str, np.ndarray]:
    """A measurement's field columns from its distributions' states (one column per row of ``states``),
    computed as TSBS computes them, in float64 and int64 with Go's truncation toward zero."""
    table = measurement.table
    if table == "disk":
        free = states[0].astype(np.int64)
        total = np.int64(1 << 40)
        used = total - free
        rows = len(free)
        return {
            "total": np.full(rows, total), "free": free, "used": used,
            "used_percent": (100.0 * (used.astype(np.float64) / np.float64(total))).astype(np.int64),
            "inodes_total": np.full(rows, total // INODE_SIZE), "inodes_free": free // INODE_SIZE,
            "inodes_used": total // INODE_SIZE - free // INODE_SIZE,
        }
    if table == "mem":
        total = simulator.memory_totals[host]
        used, cached, buffered = (states[i].astype(np.int64) for i in range(3))
        available = total - used
        total_f = total.astype(np.float64)
        return {
            "total": total, "available": available, "used": used, "free": available, "cached": cached,
            "buffered": buffered,
            "used_percent": 100.0 * (used.astype(np.float64) / total_f),
            "available_percent": 100.0 * (available.astype(np.float64) / total_f),
            "buffered_percent": 100.0 * buffered.astype(np.float64) / total_f,
        }
    walk_values = states.astype(np.int64) if fields == FieldType.long else states
    columns = {}
    walks = iter(range(states.shape[0]))
    for name, kind in measurement.fields:
        if kind == WALK:
            columns[name] = walk_values[next(walks)]
        elif name == "boot_time":
            columns[name] = simulator.boot_times[host]
        elif name == "uptime_in_seconds":
            # Go: int64(time.Duration(epoch*interval).Seconds()), whole seconds toward zero.
            columns[name] = epoch * simulator.spec.interval_ns // 1_000_000_000
        else:
            raise AssertionError(f"no rule for {table}.{name}")
    return columns


def _frame(simulator: DevopsSimulator, measurement: Measurement, rows: np.ndarray, states: np.ndarray,
           fields: str, symbol_dtype: str) -> pd.DataFrame:
    """Rows ``rows`` of one measurement (its rows counted epoch-major) as a DataFrame."""
    spec = simulator.spec
    epoch, host = np.divmod(rows, spec.scale)
    columns = host_tag_columns(simulator.hosts, host, symbol_dtype)
    for tag in measurement.tags:
        key = (measurement.table, tag)
        columns[tag] = symbol_column(simulator.tags.codes[key][host], simulator.tags.categories[key], symbol_dtype)
    columns.update(_field_values(measurement, states, host, epoch, simulator, fields))
    columns[TIMESTAMP_COLUMN] = timestamp_column(spec, epoch)
    return pd.DataFrame(columns, copy=False)


def table_rows_before(spec: DatasetSpec, row: int) -> list[int]:
    """How many rows of each table come before the data set's row ``row`` (TSBS order)."""
    epochs, rest = divmod(row, spec.rows_per_epoch)
    return [epochs * spec.scale + min(max(rest - index * spec.scale, 0), spec.scale)
            for index in range(len(MEASUREMENTS))]


def group_table_rows(spec: DatasetSpec) -> list[int]:
    """Rows of each table in the spec's group: a table's rows lie at the same place in every epoch's lines."""
    return [groups.epoch_table_count(rows, index * spec.scale, spec.scale, spec.rows_per_epoch, spec.group,
                                     spec.groups)
            for index, rows in enumerate(table_rows_before(spec, spec.row_count))]


def chunks(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS, fields: str = "long",
           symbol_dtype: str = "category", first_chunk_rows: int | None = None
           ) -> Iterator[dict[str, pd.DataFrame]]:
    """Chunks of ``chunk_rows`` consecutive rows of the data set (the last may be shorter; the first of
    ``first_chunk_rows`` if given and smaller), each mapping every table with rows in it to them, tables in
    TSBS's measurement order."""
    total_rows = spec.row_count
    # A group's chunk is cut from groups x the rows, so that it holds about ``chunk_rows`` of the group's.
    chunk_rows, first_chunk_rows = chunk_rows * spec.groups, first_chunk_rows and first_chunk_rows * spec.groups
    chunk_rows = min(chunk_rows, total_rows)
    first_chunk_rows = min(first_chunk_rows or chunk_rows, chunk_rows)
    simulator = DevopsSimulator(spec)
    scale = spec.scale
    # States of measurement rows [held_from, held_from + held.shape[1]) (counted epoch-major, as every
    # table counts its rows); the tables of a chunk never lie more than an epoch apart.
    held = np.empty((DISTRIBUTION_COUNT, 0), dtype=np.float64)
    held_from = 0
    first_row = 0
    while first_row < total_rows:
        last_row = min(first_row + (chunk_rows if first_row else first_chunk_rows), total_rows)
        starts, ends = table_rows_before(spec, first_row), table_rows_before(spec, last_row)
        missing = max(ends) - (held_from + held.shape[1])
        if missing > 0:
            # The epochs this chunk still lacks, walked in one call (the walk does not care how it is cut).
            held = np.concatenate([held, simulator.next_states(-(-missing // scale))], axis=1)
        chunk = {}
        for index, (measurement, start, end) in enumerate(zip(MEASUREMENTS, starts, ends)):
            if end > start:
                offset = STATE_OFFSETS[measurement.table]
                states = held[offset:offset + len(_DISTRIBUTIONS[measurement.table]),
                              start - held_from:end - held_from]
                rows = np.arange(start, end, dtype=np.int64)
                if spec.grouped:  # the group's rows of the chunk, by their lines in the whole file (``groups``)
                    epoch, host = np.divmod(rows, scale)
                    keep = groups.in_group(epoch * spec.rows_per_epoch + index * scale + host, spec.group,
                                           spec.groups)
                    rows, states = rows[keep], states.compress(keep, axis=1)  # C order: the client reads rows
                if len(rows):
                    chunk[measurement.table] = _frame(simulator, measurement, rows, states, fields, symbol_dtype)
        drop = min(ends) - held_from
        drop -= drop % scale  # keep whole epochs
        if drop > 0:
            held, held_from = held[:, drop:], held_from + drop
        if chunk:
            yield chunk
        first_row = last_row


def frames(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS, fields: str = "long",
           symbol_dtype: str = "category") -> Iterator[dict[str, pd.DataFrame]]:
    return chunks(spec, chunk_rows, fields, symbol_dtype)


@dataclass(frozen=True)
class Devops(TsbsSource):
    """devops in the use-case registry (``harness.tsbs.use_cases``): nine measurement tables."""

    name: str = NAME
    measurements_per_host: int = len(MEASUREMENTS)
    default_chunk_rows: int = DEFAULT_CHUNK_ROWS
    renamable_table: bool = False
    row_api: bool = False
    unique_keys: bool = True
    known_schemas: bool = True
    in_time_order: bool = True
    # A host's 87 states, draws, tag codes and strings, and a chunk row's states, the widest table's columns
    # and pandas' copies, with margin.
    bytes_per_host: int = 2_000
    bytes_per_chunk_row: int = 1_500
    # A row held whole before the timed phases (the DataFrames measured at 80-125 bytes a row), with margin.
    bytes_per_held_row: int = 200

    query_types: tuple[str, ...] = QUERY_TYPES  # TSBS's devops queries read its cpu table, as cpu-only's do
    query_module: str = "harness.tsbs.devops.queries"
    dataframe_symbols: bool = True
    dataframe_at: str = TIMESTAMP_COLUMN

    def tables(self, table: str | None = None) -> tuple[str, ...]:
        return TABLES

    def schemas(self, fields: FieldType, table: str | None = None) -> list[TableSchema]:
        return schemas(fields)

    def chunks(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType, symbol_dtype: SymbolDtype,
               table: str | None = None, first_chunk_rows: int | None = None) -> Iterator[dict[str, pd.DataFrame]]:
        return chunks(spec, chunk_rows, fields, symbol_dtype, first_chunk_rows)

    def table_rows(self, spec: DatasetSpec, table: str | None = None) -> dict[str, int]:
        return dict(zip(TABLES, group_table_rows(spec)))

    def text_jobs(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType,
                  first_chunk_rows: int | None = None) -> None:
        return None  # devops's text goes through the client's serializer

    def go_floats(self, fields: FieldType) -> bool:
        return fields == FieldType.long  # TSBS prints mem's percentages in Go's float form


USE_CASE = Devops()
