"""The ``inspect`` command: the dtype audit of the user's data, before anything is sent. Per column: the dtype
pandas gives it, how ILP's ``Sender.dataframe()`` takes it, the QuestDB type it becomes, whether worker threads run
in parallel on it, and the conversion that makes it faster or accepted; beside it, the QuestDB type QWP's
``QuestDB.dataframe()`` makes of the column of the frame it is handed (--frame), or why it refuses it and the fix. A
column the way in of --transport (ILP over tcp or http, or qwp) would refuse ends the command in one line naming it,
its dtype and the fix (exit 2). With --cross-check, DuckDB reads the whole file too and its reading is held against
the run's (``harness.own_data.cross_check``): a disagreement, each named, ends the command with exit 1. Last, a
file's reading as the flags that pin it, to paste into ``bench --data`` (``harness.own_data.pinned``).
``run_inspect(InspectOptions(...))`` is what ``python -m harness inspect`` and
``harness.inspect()`` call.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from harness.errors import RunError, UsageError, named
from harness.options.declare import CommandOptions, command, option
from harness.frames.kinds import FrameKind
from harness.options.groups import OwnDataOptions, WayInOptions
from harness.own_data.files import DataFile
from harness.own_data.pinned import flags_lines, pinned
from harness.own_data.source import DataSource, data_source


@dataclass
class InspectOptions(WayInOptions, OwnDataOptions, CommandOptions):
    """The data to audit (--data) and its designated timestamp and symbols as a run would choose them; the way in
    that judges it (--transport, --protocol-version) and the kind of frame QWP is handed (--frame); whether DuckDB
    reads the whole file as a check of the reading (--cross-check)."""

    cross_check: bool = option(False, "Also read the whole file with DuckDB (its own CSV sniffer, JSON and Parquet "
                                      "readers) and compare: rows, the designated timestamp's first, last and "
                                      "distinct instants, each column's type family and nulls; a disagreement "
                                      "exits 1, each named.", flags=("--cross-check",))

    def check_values(self) -> None:
        super().check_values()
        if self.convert_dtypes and self.frame != FrameKind.pandas:
            raise UsageError(f"--convert-dtypes makes pandas' conversions: it takes --frame pandas, not --frame "
                             f"{self.frame}")

    def source(self) -> DataSource:
        """The data as a run would send it, its refusal kept rather than raised."""
        if self.data is None:
            raise UsageError("inspect audits the user's data: --data PATH")
        return data_source(self.data, at=self.at, symbols=self.symbol_choice(), convert_dtypes=self.convert_dtypes,
                           strict=False, object_strings=self.object_strings, path=self.send_path(),
                           reading=self.reading(), partition_by=self.partition_by, limit=self.map_limit())

    def rehearse(self) -> None:
        """A --dry-run also reads the data as a run would."""
        self.source()


@command
def run_inspect(options: InspectOptions, out: TextIO | None = None, source: DataSource | None = None) -> DataSource:
    """Print the audit of ``source`` (default: --data's, read as the flags say; the notebook API hands its
    DataFrames' in); return the source (its ``audits``, QWP's beside ILP's). Raises UsageError when the way in of
    --transport would refuse a column."""
    out = out or sys.stdout
    source = source or options.source()
    lines = list(source.describe())
    if isinstance(source.data, DataFile):  # the reading's decisions as flags that pin them, to paste into bench
        lines += flags_lines(pinned(source.data, source.at), source.data, source.partitioning.by)
    for line in lines:
        print(options.spelling().text(line), file=out, flush=True)
    if source.refusal is not None:
        raise UsageError(source.refusal)
    if options.cross_check:
        _cross_check(source, out, options.spelling().text)
    return source


def _cross_check(source: DataSource, out: TextIO, said) -> None:
    """The whole file read by DuckDB, its reading held against the run's, said; a disagreement raises RunError."""
    from harness.own_data.cross_check import cross_check

    if not source.data.is_file():
        raise UsageError(f"{named('cross_check')} reads a file with DuckDB: DataFrames in memory have no file to read")
    check = cross_check(source.data, source.at)
    for line in check.lines():
        print(said(line), file=out, flush=True)
    if check.differences:
        raise RunError(check.refusal(source.data.name))
