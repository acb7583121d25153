"""Before a path is timed, three small writes (untimed): whether it takes the data at all, what a batch with one
bad row leaves behind, and what table the path makes itself where none exists.

- **Takes the data**: the data set's first ``PROBE_ROWS`` rows written as one batch and counted back. A path that
  cannot (a dtype its driver cannot bind, a statement the server refuses, such as ``COPY ... FROM STDIN``) is not
  timed; its one line is what the run reports for it.
- **A bad row**: the same rows, with the designated timestamp of row ``BAD_ROW`` set before 1970, which QuestDB
  refuses on every path. Then, once the table's WAL has settled, how many of the batch's rows landed: none (the
  batch refused whole: atomic, measured), some (the rows around the bad one), or all but the bad one. A client
  that checks the value itself refuses the batch before sending it (the questdb client's serializer does): the
  error line says whose refusal it was.
- **The table it makes**: the same rows into a table that does not exist yet, as a user's first write would be.
  ILP, ``/imp`` and ``COPY`` make one, each with its own types (ILP stores a float32 as DOUBLE and names the
  designated timestamp ``timestamp``; ``COPY`` infers them from the CSV text); the ``INSERT`` paths and
  ``read_parquet()`` need it made first, and pandas' ``to_sql`` makes DDL QuestDB refuses. ``type_changes`` sets
  the made table's columns against the run's (made as ``bench`` makes every table, the same for every path).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import pandas as pd

from harness.errors import RunError
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.registry import open_writer
from harness.ingest_paths.target import PathTarget
from harness.questdb.http import QuestDBSql
from harness.questdb.schema import create_table
from harness.questdb.wal import settled_count, wait_for_count
from harness.tsbs.schema import TableSchema

PROBE_ROWS = 10
BAD_ROW = 5
# Before 1970: QuestDB refuses it as a designated timestamp.
BAD_TIMESTAMP = pd.Timestamp("1960-01-01")
PROBE_TIMEOUT_SECONDS = 60.0
# The made table's name: the path's scratch table's and this.
MADE_SUFFIX = "_made"


@dataclass
class ProbeResult:
    """What the two writes found: ``refused`` (why the path cannot take the data, or None) and, where it can, the
    bad batch's ``landed`` rows of ``rows`` and the ``error`` the write raised (None: it raised none)."""

    refused: str | None = None
    rows: int = 0
    landed: int | None = None
    error: str | None = None
    made: list[tuple[str, str]] | None = None  # the columns of the table the path made itself, in order
    made_error: str | None = None  # why it made none, or what the table it made lacks

    @property
    def outcome(self) -> str:
        """The bad batch in words: ``none landed``, ``k of n landed``, or ``n of n landed``."""
        if self.refused is not None or self.landed is None:
            return "-"
        if self.landed == 0:
            return "none landed"
        return f"{self.landed} of {self.rows} landed"

    def as_record(self) -> dict:
        return {"refused": self.refused, "bad_batch": {"rows": self.rows, "bad_row": BAD_ROW, "landed": self.landed,
                                                      "error": self.error, "outcome": self.outcome},
                "made_table": {"columns": self.made, "error": self.made_error}}


def bad_batch(frame: pd.DataFrame, timestamp: str) -> pd.DataFrame:
    """``frame`` with row ``BAD_ROW``'s designated timestamp (``timestamp``) before 1970, in the column's zone."""
    bad = frame.reset_index(drop=True).copy()
    column = bad[timestamp]
    stamp = BAD_TIMESTAMP.tz_localize(column.dt.tz) if getattr(column.dt, "tz", None) is not None else BAD_TIMESTAMP
    bad.loc[BAD_ROW, timestamp] = stamp
    return bad


def probe(path: IngestPath, target: PathTarget, frame: pd.DataFrame, questdb: QuestDBSql) -> ProbeResult:
    """The three writes of ``path``, ``frame``'s first ``PROBE_ROWS`` rows: into ``target``'s table (made anew for
    each of the first two), then into one of its own that does not exist (``MADE_SUFFIX``, dropped after). The
    table is left made and empty."""
    sample = frame.head(PROBE_ROWS)
    try:
        _write(path, target, sample, questdb)
        wait_for_count(questdb, target.table, len(sample), PROBE_TIMEOUT_SECONDS)
    except RunError as exc:
        return ProbeResult(refused=str(exc))
    result = ProbeResult(rows=len(sample))
    if len(sample) > BAD_ROW:
        try:
            _write(path, target, bad_batch(sample, target.schema.timestamp), questdb)
        except RunError as exc:
            result.error = str(exc)
        result.landed = settled_count(questdb, target.table, PROBE_TIMEOUT_SECONDS)
    made = target.schema.renamed(target.table + MADE_SUFFIX)
    result.made, result.made_error = made_table(path, dataclasses.replace(target, schema=made), sample, questdb)
    questdb.drop_table(target.table)
    create_table(questdb, target.schema)
    return result


def made_table(path: IngestPath, target: PathTarget, frame: pd.DataFrame,
               questdb: QuestDBSql) -> tuple[list[tuple[str, str]] | None, str | None]:
    """``frame`` written by ``path`` into ``target``'s table, which does not exist (dropped first): the columns the
    path made and None (or, where the table it made holds fewer rows than written, how many), or None and why it
    made none. The table is dropped again."""
    questdb.drop_table(target.table)
    try:
        writer = open_writer(path, target)
        try:
            writer.write(frame)
        finally:
            writer.close()
        deadline = time.monotonic() + PROBE_TIMEOUT_SECONDS
        # Over ILP/TCP the table appears when the server has read the stream.
        while (columns := questdb.table_columns(target.table)) is None:
            if time.monotonic() > deadline:
                raise RunError(f"{path}: no table {target.table} after {PROBE_TIMEOUT_SECONDS:.0f}s")
            time.sleep(0.05)
        landed = settled_count(questdb, target.table, PROBE_TIMEOUT_SECONDS)
        return columns, (None if landed == len(frame) else f"the table it made holds {landed} of the {len(frame)} "
                                                           f"rows written")
    except RunError as exc:
        return None, str(exc)
    finally:
        questdb.drop_table(target.table)


def type_changes(schema: TableSchema, dtypes: dict[str, str], made: list[tuple[str, str]]) -> list[tuple[str, ...]]:
    """Where the table a path made differs from the run's (``schema``): (column, its dtype in the source, the run's
    type, what the path made: a type, ``named NAME`` for a designated timestamp the path named otherwise, or
    ``missing``), and the path's extra columns."""
    made_types = dict(made)
    run_columns = schema.columns
    changes = []
    for name, run_type in run_columns:
        stored = made_types.pop(name, None)
        if stored is None and name == schema.timestamp:
            renamed = [other for other, kind in made_types.items() if kind.startswith("TIMESTAMP")
                       and other not in dict(run_columns)]
            if renamed:
                kind = made_types.pop(renamed[0])
                stored = f"named {renamed[0]}" + (f", {kind}" if kind != run_type else "")
        if stored != run_type:
            changes.append((name, dtypes.get(name, "-"), run_type, stored or "missing"))
    changes.extend((name, "-", "-", f"extra {kind}") for name, kind in made_types.items())
    return changes


def _write(path: IngestPath, target: PathTarget, frame: pd.DataFrame, questdb: QuestDBSql) -> None:
    questdb.drop_table(target.table)
    create_table(questdb, target.schema)
    writer = open_writer(path, target)
    try:
        writer.write(frame)
    finally:
        writer.close()
