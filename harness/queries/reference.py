"""The reference answers of TSBS's cpu-only queries, computed with NumPy from the generator's own DataFrames
(never by asking a server), for the ``--check`` of the query benchmark.

The data set is held as one (field, epoch, host) array: TSBS writes every host once per epoch, time-major,
so each host's rows are one column of an epoch x host matrix and every host shares the epoch timestamps.
The build checks that the frames really have that shape. A query is then a slice of epochs (the WHERE
time range, found by binary search), a selection of host columns, and ``reduceat`` over the runs of
epochs that fall in one SAMPLE BY bucket.

The pinned QuestDB's semantics reproduced here (checked on the real server):

- SAMPLE BY defaults to ALIGN TO CALENDAR (UTC, offset 00:00): a bucket starts at the row's timestamp
  floored to a whole multiple of the step since the epoch (``1h`` buckets start on the hour whatever the
  WHERE range's start), so a range that does not start on a bucket boundary yields a partial first (and
  last) bucket. Buckets without rows are omitted (no FILL).
- TSBS's queries do not select the bucket's timestamp, so the answer has only the selected columns
  (an unaliased aggregate is named by its text, ``max(usage_user)``); unkeyed buckets come in time order,
  keyed ones (``SELECT hostname, avg(...)``) in time order with the keys of one bucket in no promised order.
- ``max`` keeps the column's type (LONG stays LONG); ``avg`` is DOUBLE.
- ``SELECT *`` returns the table's columns in table order: the 10 tags, the 10 fields, ``timestamp``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from harness.errors import RunError, UsageError
from harness.queries.answer import Answer
from harness.queries.wire_sql import QueryShape, shape_of
from harness.tsbs.choices import FieldType, choice
from harness.tsbs.cpu_only.generator import (
    COLUMNS,
    DEFAULT_CHUNK_ROWS,
    FIELD_COLUMNS,
    TABLE_NAME,
    TAG_COLUMNS,
    TIMESTAMP_COLUMN,
    frames,
)
from harness.tsbs.params import DatasetSpec

_FIELD_INDEX = {name: index for index, name in enumerate(FIELD_COLUMNS)}


class ReferenceData:
    """The whole data set in memory (8 bytes per field value) and the answers to queries over it."""

    def __init__(self, spec: DatasetSpec, fields: str, host_tags: list[tuple[str, ...]], epoch_micros: np.ndarray,
                 values: np.ndarray, rows: int):
        self.spec = spec
        self.fields = fields
        self.host_tags = host_tags  # per host index: its 10 tag values, hostname first
        self._host_index = {tags[0]: index for index, tags in enumerate(host_tags)}
        # Per tag, an array of each host's value: rows are built column by column, without a Python loop.
        self._host_tag_columns = [np.array([tags[position] for tags in host_tags], dtype=object)
                                  for position in range(len(TAG_COLUMNS))]
        self._host_names = self._host_tag_columns[0]
        self.epoch_micros = epoch_micros
        # (field, epoch, host), float64 for both field types: LONG values are small integers, exact in a
        # double, and a NaN marks the hosts missing from a final epoch cut short by a row limit.
        self.values = values
        self.rows = rows
        self._hosts_in_last_epoch = rows - (len(epoch_micros) - 1) * spec.scale

    @classmethod
    def generate(cls, spec: DatasetSpec, fields: str = "double", chunk_rows: int = DEFAULT_CHUNK_ROWS) -> ReferenceData:
        """Generate the data set's DataFrames and build the reference from them."""
        return cls.from_frames(spec, fields, frames(spec, chunk_rows, fields))

    @classmethod
    def from_frames(cls, spec: DatasetSpec, fields: str, data: Iterable[pd.DataFrame]) -> ReferenceData:
        """Build from the generator's DataFrames of ``spec`` in order (e.g. the very frames being sent)."""
        fields = choice(FieldType, fields, "fields")
        scale, rows = spec.scale, spec.row_count
        epochs = -(-rows // scale)
        values = np.full((len(FIELD_COLUMNS), epochs * scale), np.nan)
        tag_codes = np.full((len(TAG_COLUMNS), scale), -1, dtype=np.int64)
        tag_categories: list[np.ndarray | None] = [None] * len(TAG_COLUMNS)
        start_micros, interval_ns = spec.start_ns // 1000, spec.interval_ns
        host_numbers = None
        first_row = 0
        for frame in data:
            count = len(frame)
            if first_row + count > rows:
                raise RunError(f"the frames hold more than the data set's {rows} rows")
            row_index = np.arange(first_row, first_row + count, dtype=np.int64)
            epoch, host = np.divmod(row_index, scale)
            timestamps_ns = frame[TIMESTAMP_COLUMN].to_numpy(dtype="datetime64[ns]").view(np.int64)
            if not np.array_equal(timestamps_ns, spec.start_ns + epoch * interval_ns):
                raise RunError(f"frame rows {first_row}..{first_row + count - 1}: timestamps are not TSBS's epochs")
            for tag_position, tag in enumerate(TAG_COLUMNS):
                codes, categories = _codes(frame[tag], tag_categories[tag_position], tag)
                tag_categories[tag_position] = categories
                known = tag_codes[tag_position]
                unset = known[host] < 0
                known[host[unset]] = codes[unset]
                if tag_position == 0:
                    if host_numbers is None:  # later frames are coded into the first frame's categories
                        host_numbers = _host_numbers(categories)
                    if not np.array_equal(host_numbers[codes], host):
                        raise RunError(f"frame rows {first_row}..: hosts are not in TSBS's order (host_0 .. host_"
                                       f"{scale - 1} each epoch)")
                elif not np.array_equal(known[host], codes):
                    raise RunError(f"frame rows {first_row}..: tag {tag} of a host changes between rows")
            for field_position, field in enumerate(FIELD_COLUMNS):
                values[field_position, first_row:first_row + count] = frame[field].to_numpy()
            first_row += count
        if first_row != rows:
            raise RunError(f"the frames hold {first_row} rows, the data set {rows}")
        host_tags = [
            tuple(str(tag_categories[position][tag_codes[position, host]]) for position in range(len(TAG_COLUMNS)))
            for host in range(scale)
        ]
        epoch_micros = start_micros + np.arange(epochs, dtype=np.int64) * (interval_ns // 1000)
        return cls(spec, fields, host_tags, epoch_micros, values.reshape(len(FIELD_COLUMNS), epochs, scale), rows)

    # -- answering ------------------------------------------------------------------------------------

    def table_rows(self) -> dict[str, int]:
        """Rows per table of the data set (what the loaded table should hold)."""
        return {TABLE_NAME: self.rows}

    def order_rule(self, query) -> str:
        """The row order the server promises for ``query`` (``harness.queries.check``)."""
        from harness.queries.check import order_rule

        return order_rule(shape_of(query))

    def expected(self, query) -> Answer:
        """The answer QuestDB must give to ``query`` (golden JSON object or generator ``Query``)."""
        shape = shape_of(query)
        if shape.latest_by is not None:
            return self._latest_by_host()
        hosts = self._hosts(shape.hosts)
        first = 0 if shape.time_from is None else int(np.searchsorted(self.epoch_micros, shape.time_from, "left"))
        end = len(self.epoch_micros) if shape.time_to is None else int(
            np.searchsorted(self.epoch_micros, shape.time_to, "left"))
        end = max(first, end)
        if shape.sample_by_micros is None:
            if not shape.select_all:
                raise UsageError(f"query type {query.query_type}: the reference answers only "
                                 f"SELECT * without SAMPLE BY")
            return self._filtered_rows(shape, hosts, first, end)
        return self._sampled(shape, hosts, first, end)

    def _hosts(self, names: tuple[str, ...] | None) -> np.ndarray:
        if names is None:
            return np.arange(self.spec.scale)
        # Hosts the data set does not have simply match no rows, as on the server.
        return np.array(sorted({self._host_index[name] for name in names if name in self._host_index}), dtype=np.int64)

    def _field_block(self, field: str, first: int, end: int, hosts: np.ndarray) -> np.ndarray:
        """(epoch, host) values of one field: a view when every host is selected."""
        block = self.values[_FIELD_INDEX[field], first:end]
        return block if len(hosts) == self.spec.scale else block[:, hosts]

    def _present(self, first: int, end: int, hosts: np.ndarray) -> np.ndarray | None:
        """Which (epoch, host) cells hold a row; None when all do (only a row limit leaves gaps)."""
        if self._hosts_in_last_epoch == self.spec.scale or end < len(self.epoch_micros):
            return None
        return ~np.isnan(self._field_block(FIELD_COLUMNS[0], first, end, hosts))

    def _sampled(self, shape: QueryShape, hosts: np.ndarray, first: int, end: int) -> Answer:
        step = shape.sample_by_micros
        if end == first or len(hosts) == 0:
            return Answer(shape.columns, [])
        # Calendar alignment in UTC: floor to a multiple of the step since the epoch.
        buckets = self.epoch_micros[first:end] // step * step
        starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
        keyed = bool(shape.key_columns)
        present = self._present(first, end, hosts)
        if present is None:
            counts = np.diff(np.r_[starts, end - first])[:, None] * np.ones((1, len(hosts)), dtype=np.int64)
        else:
            counts = np.add.reduceat(present.astype(np.int64), starts, axis=0)
        columns_out = []
        for aggregate in shape.aggregates:
            block = self._field_block(aggregate.field, first, end, hosts)
            if aggregate.function == "max":
                # fmax skips the NaN of absent rows; a bucket without rows stays NaN and is dropped below.
                per_host = np.fmax.reduceat(block, starts, axis=0)
                if not keyed:
                    per_host = np.fmax.reduce(per_host, axis=1)
                columns_out.append((per_host, self.fields == "long"))
            else:
                sums = np.add.reduceat(block if present is None else np.where(present, block, 0.0), starts, axis=0)
                if keyed:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        columns_out.append((sums / counts, False))
                else:
                    with np.errstate(invalid="ignore", divide="ignore"):
                        columns_out.append((sums.sum(axis=1) / counts.sum(axis=1), False))
        # Cells with rows, bucket-major (time order), hosts ascending within a bucket; no FILL.
        occupied = counts > 0 if keyed else counts.sum(axis=1) > 0
        if shape.order_by_timestamp == "DESC":
            occupied, columns_out = occupied[::-1], [(values[::-1], is_long) for values, is_long in columns_out]
        buckets_at, *hosts_at = np.nonzero(occupied)
        if shape.limit is not None:
            buckets_at = buckets_at[:shape.limit]
            hosts_at = [positions[:shape.limit] for positions in hosts_at]
        cells = (buckets_at, *hosts_at)
        output = [self._host_names[hosts[hosts_at[0]]].tolist()] if keyed else []
        for values, is_long in columns_out:
            selected = values[cells]
            output.append(selected.astype(np.int64).tolist() if is_long else selected.tolist())
        return Answer(shape.columns, list(zip(*output)))

    def _filtered_rows(self, shape: QueryShape, hosts: np.ndarray, first: int, end: int) -> Answer:
        columns = list(COLUMNS)
        if end == first or len(hosts) == 0:
            return Answer(columns, [])
        present = self._present(first, end, hosts)
        mask = np.ones((end - first, len(hosts)), dtype=bool) if present is None else present
        for field, threshold in shape.thresholds:
            if field not in _FIELD_INDEX:
                raise UsageError(f"the reference cannot filter on {field!r}")
            mask &= self._field_block(field, first, end, hosts) > threshold
        # Row-major nonzero: time order, then host order within one timestamp (the table's own order).
        epoch_positions, host_positions = np.nonzero(mask)
        if shape.order_by_timestamp == "DESC":
            epoch_positions, host_positions = epoch_positions[::-1], host_positions[::-1]
        if shape.limit is not None:
            epoch_positions, host_positions = epoch_positions[:shape.limit], host_positions[:shape.limit]
        return Answer(columns, self._rows(first + epoch_positions, hosts[host_positions]))

    def _latest_by_host(self) -> Answer:
        last = len(self.epoch_micros) - 1
        hosts = np.arange(self.spec.scale)
        epochs = np.where(hosts < self._hosts_in_last_epoch, last, last - 1)
        keep = epochs >= 0
        return Answer(list(COLUMNS), self._rows(epochs[keep], hosts[keep]))

    def _rows(self, epochs: np.ndarray, hosts: np.ndarray) -> list[tuple]:
        """Whole table rows (tags, fields, timestamp) at these (epoch, host) cells."""
        fields = self.values[:, epochs, hosts]
        if self.fields == "long":
            field_lists = [column.astype(np.int64).tolist() for column in fields]
        else:
            field_lists = [column.tolist() for column in fields]
        tag_lists = [self._host_tag_columns[position][hosts].tolist() for position in range(len(TAG_COLUMNS))]
        return list(zip(*tag_lists, *field_lists, self.epoch_micros[epochs].tolist()))

def _host_numbers(names: np.ndarray) -> np.ndarray:
    """N of each ``host_N`` hostname (-1 for any other name)."""
    return np.array([int(name[5:]) if re.fullmatch(r"host_\d+", str(name)) else -1 for name in names],
                    dtype=np.int64)


def _codes(column: pd.Series, categories: np.ndarray | None, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a tag column into ``categories`` (fixed by the first frame)."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype("category" if categories is None else pd.CategoricalDtype(categories))
    elif categories is not None and not np.array_equal(np.asarray(column.cat.categories, dtype=object), categories):
        column = column.astype(pd.CategoricalDtype(categories))
    codes = column.cat.codes.to_numpy().astype(np.int64)
    if (codes < 0).any():
        raise RunError(f"tag {tag}: a value appears that the first frame did not have")
    return codes, np.asarray(column.cat.categories, dtype=object)
