"""How a run's rows arrived in time: per table, the rows sent behind the newest timestamp already sent to
that table (what a time-ordered table cannot append, QuestDB's out-of-order path), and how far behind.

Tallied from the chunks in the order the run hands them to its workers (one producer, so in data-set order);
cpu-only and devops arrive in time order, TSBS's iot does not (``--sort`` orders it). Several workers send
chunks side by side, so the server may see more out-of-order rows than the data holds: the server's own
figure is its O3 commit count in the run's series (``harness.telemetry.timeseries``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from harness.records.run_record import TableArrival
from harness.tsbs.schema import TIMESTAMP_COLUMN
from harness.tsbs.use_case import Chunk


class ArrivalTally:
    """Counts late rows per table as chunks pass by (``watch``), by their designated timestamp ``at``."""

    def __init__(self, at: str = TIMESTAMP_COLUMN) -> None:
        self.at = at
        self.tables: dict[str, TableArrival] = {}
        self._newest: dict[str, int] = {}

    def add(self, chunk: Chunk) -> None:
        for table, frame in chunk.items():
            stamps = nanoseconds(frame[self.at])
            if not len(stamps):
                continue
            newest = np.maximum.accumulate(stamps)
            before = self._newest.get(table)
            if before is not None:
                newest = np.maximum(newest, before)
            # A row is late when something sent before it (in this chunk or an earlier one) is newer.
            ahead = np.concatenate(([before if before is not None else stamps[0]], newest[:-1]))
            behind = ahead - stamps
            arrival = self.tables.setdefault(table, TableArrival())
            arrival.rows += len(stamps)
            late = behind > 0
            if late.any():
                arrival.late_rows += int(late.sum())
                arrival.max_late_seconds = max(arrival.max_late_seconds, float(behind.max()) / 1e9)
            self._newest[table] = int(newest[-1])

    def watch(self, chunks: Iterable[Chunk]) -> Iterator[Chunk]:
        """The same chunks, tallied as they pass."""
        for chunk in chunks:
            self.add(chunk)
            yield chunk


def nanoseconds(column) -> np.ndarray:
    """Nanoseconds since the epoch of a timestamp column of any unit or time zone, of any kind of frame (TSBS's
    pandas column: no copy)."""
    if isinstance(column, pd.Series):
        if column.dtype == "datetime64[ns]":
            return column.array.asi8
        if not isinstance(column.dtype, pd.ArrowDtype):
            return pd.DatetimeIndex(column).as_unit("ns").asi8
        column = pa.array(column.array)
    if hasattr(column, "to_arrow"):  # a Polars series
        column = column.to_arrow()
    unit = column.type.unit
    scale = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[unit]
    return column.cast(pa.int64()).to_numpy() * scale


def arrival_lines(tables: dict[str, TableArrival]) -> list[str]:
    """The progress output's lines for tables that had late rows (none when everything came in order)."""
    return [f"  {table}: {arrival.late_rows} of {arrival.rows} rows ({arrival.late_share:.2%}) behind an earlier "
            f"row's timestamp, by up to {arrival.max_late_seconds:g}s"
            for table, arrival in tables.items() if arrival.late_rows]
