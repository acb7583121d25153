"""A bench run resolved (``BenchPlan``): what ``bench`` and every command that runs one (``tune``'s trials,
``paths``' data, ``matrix``'s turns, the notebook's ``measure``) hands below the command, made once from the flags
(``harness.run.bench_options.BenchOptions.plan``) and never from them again. Below the command, functions take the
plan and what the run holds (its record, metrics, the server's SQL), never the options.

The plan holds the source opened (the user's data read and audited once), the data set, the tables and their rows,
the chunks and workers, the wire and its settings, where it sends (QuestDB, the no-op sink, a sink of its own), what
it does to the tables, the open loop's schedule, how it meets its fellow clients, and what it records and measures.
It is written into the run's record (``described``): a record says exactly what ran.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.frames.kinds import PANDAS_KINDS, FrameKind
from harness.ingest.choices import Op, Target
from harness.ingest.wire.interface import Wire
from harness.questdb.schema import TablePolicy
from harness.read.connection import Endpoint
from harness.records.run_record import RunRecord
from harness.records.store import Recording
from harness.scaleout.meeting import Barrier
from harness.telemetry.metrics import RunMetrics
from harness.source import Source
from harness.tsbs.use_case import Chunk
from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.params import DatasetSpec
from harness.tsbs.schema import TableSchema

from harness.run.session import Lifecycle

if TYPE_CHECKING:
    from harness.open_loop.inputs import OpenLoopPlan
    from harness.profiling.run_profile import Profiling


@dataclass(frozen=True)
class Metrics:
    """The run's own Prometheus endpoint: its port (None: none), how long it lingers after the run, its address."""

    port: int | None = None
    linger_seconds: float = 0.0
    host: str | None = None


@dataclass(frozen=True)
class BenchPlan:
    """One bench run, resolved. ``spec`` is the TSBS data set the flags name (a source not drawn from one takes no
    notice of it); ``rename`` is ``--table``'s name for a renamable table."""

    source: Source
    spec: DatasetSpec
    rename: str | None
    fields: FieldType
    symbol_dtype: SymbolDtype
    frame: FrameKind  # the kind of frame handed to the client
    # How it sends: chunks of ``chunk_rows`` (the first ``first_chunk`` already in the table: --resume), dealt to
    # ``threads`` workers, by ``op``; made while sending (``streams``) or all before the timed phases.
    chunk_rows: int
    first_chunk: int
    workers: int | None  # --workers; None: the single-threaded run
    op: Op
    streams: bool
    send: bool
    write_ilp: str | None
    wire: Wire
    # Where: QuestDB (``server``) or the no-op sink (``server`` None), a sink of its own (``private_sink``: its kind).
    target: Target
    server: Endpoint
    private_sink: str | None
    tables: TablePolicy
    resend_for: float | None  # exactly-once: seconds a chunk may keep failing before the run fails
    flush_timeout: float
    open_loop: OpenLoopPlan | None
    barrier: Barrier | None
    progress_seconds: float
    lifecycle: Lifecycle  # how the run records and measures itself: its record, time series, profile
    metrics: Metrics
    verbose: bool
    seed_said: str | None  # the run's seed as it says it before it starts, where it was drawn, not given
    parameters: dict  # the record's: the flags as they ran
    # A file's sample read by DuckDB and held against the run's reading before sending (None: no file is sent):
    # ``harness.own_data.cross_check.CrossCheck``.
    cross_check: object | None = None

    @functools.cached_property
    def schemas(self) -> tuple[TableSchema, ...]:
        return tuple(self.source.schemas(self.fields, self.rename))

    @functools.cached_property
    def table_rows(self) -> Mapping[str, int]:
        """Rows per table of what this run sends: the whole data set, or its group."""
        return self.source.table_rows(self.spec, self.rename)

    @property
    def threads(self) -> int:
        """Worker threads the phases run: ``workers``, or the one of the single-threaded run."""
        return self.workers or 1

    @property
    def rows(self) -> int:
        """Rows of the whole of what the run sends."""
        return self.source.rows(self.spec)

    @property
    def mode(self) -> str:
        """What the run does, in a few words; it also names the default results file."""
        kind = ("sink" if self.target == Target.sink else "send") if self.send else "serialize"
        return self.source.mode(self.spec, kind, f"{self.workers}w" if self.workers else "1t", self.op, self.fields)

    def run_metrics(self, run_id: str) -> RunMetrics:
        """The run's metrics, its info labels from what the record says was used."""
        parameters = self.parameters
        labels = {key: str(parameters.get(key, "")) for key in ("transport", "fields", "scale", "seed", "op", "target")}
        labels |= {"workers": str(parameters["workers"] or 1), "protocol": str(parameters["protocol_version"])}
        return RunMetrics(run_id, labels, self.metrics.port, self.metrics.linger_seconds, workers=self.threads,
                          host=self.metrics.host)

    @property
    def frame_columns(self) -> tuple:
        """What the run's frames pass ``dataframe()``: its source's symbols and designated timestamp."""
        return self.source.dataframe_symbols, self.source.dataframe_at

    def chunks(self, frame: FrameKind | None = None) -> Iterator[Chunk]:
        """The data set in chunks of ``chunk_rows`` rows from ``first_chunk`` on, each mapping its table to its
        rows as frames of the run's kind (or of ``frame``'s: ``--write-ilp`` writes pandas frames' ILP)."""
        chunks = self.source.chunks_as(frame or self.frame, self.spec, self.chunk_rows, self.fields,
                                       self.symbol_dtype, self.rename)
        # The chunks before first_chunk are made all the same: later ones depend on the PRNG's state.
        return itertools.islice(chunks, self.first_chunk, None)

    @property
    def frame_to_client(self) -> str:
        """What the client is handed: the run's frames as they are, or (ILP) converted to pandas first."""
        if self.wire.traits.frames_as_they_are or self.frame in PANDAS_KINDS:
            return f"{self.frame} frames as they are"
        return f"{self.frame} frames converted to pandas (to_pandas(), timed): ILP's Sender.dataframe() takes pandas only"

    def questdb(self):
        """The server's SQL (None into the sink, which has none)."""
        return None if self.target == Target.sink else self.server.sql()

    def recorded_at(self, results: str | Path, **lifecycle: Profiling | None) -> BenchPlan:
        """This plan, its record written at ``results`` (a sweep's trial, a matrix's turn), its lifecycle otherwise
        as it is or as ``lifecycle`` changes it (``profiling=``)."""
        changed = dataclasses.replace(self.lifecycle, recording=Recording(str(results)), **lifecycle)
        return dataclasses.replace(self, lifecycle=changed)

    def record(self) -> RunRecord:
        """The run's record, its parameters and its plan as resolved; the clients of a scale-out run share its name
        as their run id (one run in the metrics and the records)."""
        shared = {"run_id": self.barrier.name} if self.barrier is not None else {}
        return RunRecord(kind="bench", mode=self.mode, parameters=self.parameters, seed=self.source.seed(self.spec),
                         plan=self.described(), **shared)

    def described(self) -> dict:
        """The plan as the record keeps it: what ran, resolved."""
        traits = self.wire.traits
        return {
            "source": self.source.name, "rows": self.rows, "tables": dict(self.table_rows),
            "chunk_rows": self.chunk_rows, "first_chunk": self.first_chunk, "threads": self.threads,
            "op": str(self.op), "made": "while sending" if self.streams else "before the timed phases",
            "frame": str(self.frame), "frame_to_client": self.frame_to_client,
            "send": self.send, "target": str(self.target), "private_sink": self.private_sink,
            "wire": {"name": traits.name, "delivery": str(traits.delivery), "prefix_in_doubt": traits.prefix_in_doubt,
                     **self.wire.settings.used()},
            "tables_policy": {"keep": self.tables.keep, "replace": self.tables.replace, "wal": str(self.tables.wal),
                              "dedup": self.tables.dedup},
            "partitioning": self.lifecycle.spelling.values(self.source.partitioning_record()),
            "resend_for_seconds": self.resend_for, "open_loop": self.open_loop is not None,
            "barrier": self.barrier.name if self.barrier is not None else None,
            "cross_check": None if self.cross_check is None else
            self.lifecycle.spelling.values(self.cross_check.stored()),
        }
