"""The phases of a ``bench`` run, over its plan (``harness.run.plan.BenchPlan``): generate (every chunk in memory
first, as the original benchmark does), serialize, write the ILP to a file, send (closed loop, or on the open loop's
schedule: ``harness.open_loop``), validate. Each records itself in the run (``harness.run.session.Run``) and feeds
the run's metrics; with a barrier, as client i of a scale-out run meeting the others (``harness.scaleout.meeting``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from harness.errors import RunError, UsageError
from harness.frames.kinds import FrameKind
from harness.ingest.arrival import ArrivalTally, arrival_lines
from harness.ingest.ilp import write_ilp
from harness.ingest.ordered_write import default_workers
from harness.ingest.phase_loop import ChunkStream, PhaseFailed, deal_round_robin, run_phase
from harness.ingest.wire.interface import PrefixInDoubt
from harness.ingest.workers import SendWorker, SerializeWorker
from harness.open_loop.inputs import QueryServer, SendContext
from harness.open_loop.rates import open_loop_send
from harness.open_loop.thresholds import judge_thresholds
from harness.output_file import whole_file
from harness.run.session import checkpoints, recorded_if_interrupted
from harness.run.tables import connect, server_state, validate
from harness.scaleout.delivery import deliver
from harness.scaleout.meeting import PREPARED, READY, SENT, FolderPlace, Meeting, TablePlace
from harness.telemetry.phase import PhaseRecord
from harness.telemetry.progress import ProgressPrinter

if TYPE_CHECKING:
    from harness.ingest.send_schedule import SendSchedule
    from harness.questdb.http import QuestDBSql
    from harness.run.plan import BenchPlan
    from harness.run.session import Run
    from harness.tsbs.use_case import Chunk
    from harness.telemetry.metrics import RunMetrics


def bench_phases(plan: BenchPlan, run: Run) -> None:
    """Every phase the plan asks for, in order, measured in the run's metrics; with a barrier, as client i of a
    scale-out run."""
    meeting = None
    if plan.barrier is not None:
        if plan.barrier.folder is not None:
            place = FolderPlace(plan.barrier.folder)
        else:  # met at the server: the record goes there too, for whoever gathers the run's records
            place = TablePlace(plan.server.sql())
            run.written.append(functools.partial(deliver, place.questdb, plan.barrier.name, plan.spec.group))
        meeting = Meeting(place, plan.barrier.name, plan.spec.group, plan.spec.groups, plan.barrier.timeout)
    try:
        BenchPhases(plan, run, meeting).run_all()
    except BaseException as exc:
        if meeting is not None:
            meeting.failed(exc)
        raise


class BenchPhases:
    """One run's phases and what they share: the server's SQL and the rows its tables held, the chunks (made up
    front, or streamed to the one phase that runs) and the tally of how they arrived."""

    def __init__(self, plan: BenchPlan, run: Run, meeting: Meeting | None):
        self.plan, self.run, self.metrics, self.meeting = plan, run, run.metrics, meeting
        self.questdb: QuestDBSql | None = None
        self.rows_before: dict[str, int] = {}
        # Rows per table of what this run sends (the whole data set, or its group): what the progress counts
        # towards and validation expects (a use case whose draws drop rows, iot, counts them by running its
        # simulation).
        self.total_rows = sum(plan.table_rows.values())
        # Tallied where the chunks are made once: generated up front, or streamed to the one phase that runs.
        self.tally = ArrivalTally(plan.source.dataframe_at)
        run.record.arrival = self.tally.tables
        self.chunks: list[Chunk] | None = None

    def run_all(self) -> None:
        """Every phase the plan asks for, in order."""
        plan = self.plan
        if plan.send:
            self.prepare_tables()
        if not plan.streams:
            self.chunks = generate_phase(self.total_rows, self.run, self.metrics,
                                         self.tally.watch(plan.chunks()))
        if not (plan.streams and plan.send):
            if plan.wire.traits.encodes_apart:
                serialize_phase(plan, self.work(), self.run, self.metrics, self.total_rows)
            else:
                self.run.say(f"Serialized: no phase of its own ({plan.wire.traits.name} encodes only while it sends)")
        if plan.write_ilp:
            pandas_chunks = self.chunks if self.chunks is not None and plan.frame == FrameKind.pandas else None
            write_ilp_phase(plan, pandas_chunks or plan.chunks(FrameKind.pandas), self.run)
        if plan.send:
            self.send()
        if plan.open_loop is not None:
            judge_thresholds(plan.open_loop.thresholds, self.run)

    def work(self):
        """The chunks the phase's workers take: dealt round robin, or streamed as they are made."""
        if self.chunks is not None:
            return deal_round_robin(self.chunks, self.plan.threads, self.plan.first_chunk)
        return ChunkStream(self.tally.watch(self.plan.chunks()), self.plan.threads,
                           first_index=self.plan.first_chunk)

    def prepare_tables(self) -> None:
        """The server checked and the tables made ready before anything is sent; of a scale-out run, client 0
        makes them and the others, once it has, append after checking their schema."""
        plan, meeting = self.plan, self.meeting
        policy = plan.tables
        if meeting is not None and meeting.client:
            meeting.wait_for(PREPARED, range(1))
            policy = dataclasses.replace(policy, keep=True)
        self.questdb, self.rows_before = connect(plan.questdb(), plan.wire, self.run, list(plan.schemas), policy,
                                                 plan.source.known_schemas)
        if meeting is not None and not meeting.client:
            meeting.say(PREPARED)

    def send(self) -> None:
        """The send phase (every chunk as fast as it goes, or on the open loop's schedule), then the validation."""
        meeting = self.meeting
        if meeting is not None:
            meeting.say(READY)
            waited = meeting.wait_for(READY)
            self.run.say(f"All {meeting.clients} clients ready (waited {waited:.2f}s): sending")
        if self.plan.open_loop is not None:
            sent, last_flush = self.open_loop()
        else:
            record, last_flush = send_phase(self.plan, self.work(), self.run, self.metrics, self.total_rows,
                                            self.questdb)
            sent = record.rows_by_table(list(self.plan.table_rows))
        if late := arrival_lines(self.tally.tables):
            self.run.say("Arrived out of order (behind a row sent before them to the same table):\n" + "\n".join(late))
        if meeting is not None:
            meeting.say(SENT)
            if meeting.client:
                self.run.say(f"Validation: client 0 validates the whole data set once all {meeting.clients} have sent")
                return
            meeting.wait_for(SENT)
            # Time to visible counts from when the last client had sent (as seen here, a poll later at most).
            last_flush = time.perf_counter()
        if self.questdb is not None:
            self.metrics.set_phase("validate")
            validate(self.questdb, self.plan.tables.validation_timeout, self.expected(sent), last_flush, self.run,
                     self.plan.wire.unseen_losses())

    def expected(self, sent: dict[str, int]) -> dict[str, int]:
        """The rows each table must hold once what was sent is visible."""
        plan = self.plan
        if self.meeting is not None:  # the tables now hold every client's group: the whole data set
            whole = plan.source.table_rows(plan.spec.whole, plan.rename)
            return {table: before + whole[table] for table, before in self.rows_before.items()}
        if plan.first_chunk:  # resumed: chunks sent again replaced themselves; the whole set is there
            return dict(plan.table_rows)
        # What was sent (an open loop's --duration may end before the data set).
        return {table: before + sent.get(table, 0) for table, before in self.rows_before.items()}

    def open_loop(self) -> tuple[dict[str, int], float]:
        """The send on the open loop's schedule: every rate of its plan in turn."""
        plan, open_loop = self.plan, self.plan.open_loop

        def send(stream, rows, name, schedule):
            return send_phase(plan, stream, self.run, self.metrics, rows, self.questdb, schedule, name)

        server = plan.server
        query_server = None
        if open_loop.queries is not None:
            query_server = QueryServer(server.host, server.pg_port, server.pg, server.pg_tls) \
                if open_loop.queries.protocol == "pgwire" else \
                QueryServer(server.host, server.http_port, server.http, server.http_tls)
        context = SendContext(plan.chunk_rows, plan.threads, plan.first_chunk, self.total_rows,
                              tuple(plan.table_rows), dict(self.rows_before), plan.tables.validation_timeout,
                              plan.wire.traits.committed, query_server)
        return open_loop_send(open_loop, context, plan.chunks(), self.tally.watch, self.questdb, self.run,
                              self.metrics, send)


def generate_phase(rows: int, run: Run, metrics: RunMetrics, made: Iterable[Chunk]) -> list[Chunk]:
    """Every chunk (``rows`` rows in all) in memory before the timed phases, as the original benchmark does."""
    metrics.set_phase("generate")
    cpu_started, started = time.process_time(), time.perf_counter()
    chunks = list(made)
    seconds = time.perf_counter() - started
    run.phase("generate", None, PhaseRecord(rows, 0, seconds, time.process_time() - cpu_started, ended_at=time.time()))
    run.say(f"Generated:\n  {rows} rows in {seconds:.2f}s: {rows / seconds / 1e6:.2f} mil rows/sec.")
    return chunks


def serialize_phase(plan: BenchPlan, work, run: Run, metrics: RunMetrics, total_rows: int) -> None:
    metrics.set_phase("serialize")
    progress = metrics.new_phase("serialize", plan.threads)
    protocol_version = plan.wire.settings.offline_protocol_version()
    workers = [SerializeWorker(plan.op, protocol_version, plan.frame_columns) for _ in range(plan.threads)]
    with ProgressPrinter(progress, total_rows, plan.progress_seconds, run.out), recorded_if_interrupted(run, progress):
        record = run_phase(progress, workers, work)
    run.phase("serialize", "Serialized", record)


def send_phase(plan: BenchPlan, work, run: Run, metrics: RunMetrics, total_rows: int,
               questdb: QuestDBSql | None = None, schedule: SendSchedule | None = None,
               name: str = "send") -> tuple[PhaseRecord, float]:
    """Send every chunk, one connection per worker (on an open loop's ``schedule``: each at its intended
    time); returns the phase and when its last flush ended."""
    # A ramp's every rate is the metrics' send phase (its counters start again at each); the record names each.
    metrics.set_phase("send")
    first_chunk = work.first_index if isinstance(work, ChunkStream) else plan.first_chunk
    progress = metrics.new_phase("send", plan.threads, first_chunk)
    senders = _send_workers(plan, progress)
    try:
        with ProgressPrinter(progress, total_rows, plan.progress_seconds, run.out), \
                recorded_if_interrupted(run, progress), checkpoints(run, progress):
            record = run_phase(progress, senders, work, plan.flush_timeout, schedule)
    except PhaseFailed as failure:
        run.phase(name, None, failure.record)
        raise _send_failed(plan, failure, total_rows, questdb) from None
    last_flush = time.perf_counter()
    run.phase(name, "Sent" if name == "send" else f"Sent ({name})", record)
    if plan.resend_for is not None:
        run.say(f"  Re-sent: {record.resent_chunks} chunks after failed flushes; "
                f"{record.outage_seconds:.1f}s spent waiting for the server.")
    return record, last_flush


def _send_workers(plan: BenchPlan, progress) -> list[SendWorker]:
    """A worker per thread, each with its own connection; every one opened closed again if one cannot open."""
    senders: list[SendWorker] = []
    try:
        for index in range(plan.threads):
            senders.append(SendWorker(plan.op, plan.wire, progress, index, plan.resend_for, plan.frame_columns))
    except BaseException:
        for sender in senders:
            sender.close()
        raise
    return senders


def _send_failed(plan: BenchPlan, failure: PhaseFailed, total_rows: int, questdb: QuestDBSql | None) -> Exception:
    """The one line of a send that failed: what was sent before it, and what the server says it holds."""
    traits = plan.wire.traits
    # A written delivery has no acknowledgements: what was flushed is an upper bound of what the server received.
    bound = "" if traits.committed else f" (over {traits.name}: an upper bound of what arrived)"
    server = f"; {server_state(questdb, list(plan.schemas))}" if questdb is not None else ""
    unsent = total_rows - failure.record.rows
    # A call that failed midway may have committed a prefix of its rows: neither sent nor unsent.
    doubt = f"; up to {failure.cause.rows} rows of the call that failed may have landed (in doubt)" \
        if isinstance(failure.cause, PrefixInDoubt) else ""
    # Without dedup a second attempt cannot fill the gap without doubling what arrived: say both sides.
    gap = "" if plan.tables.dedup or questdb is None else (
        f"; {unsent} of the {total_rows} rows were never sent: the table is incomplete, and sending the "
        f"data set again would double the rows that arrived (--exactly-once makes a re-send safe)")
    # A value of the user's file met while sending is bad input (exit 2), what landed said all the same.
    error = UsageError if isinstance(failure.cause, UsageError) else RunError
    return error(f"{failure}; {failure.record.rows} rows were sent (flushed) before the failure{bound}{doubt}{gap}"
                 f"{server}")


def write_ilp_phase(plan: BenchPlan, chunks, run: Run) -> None:
    """Write the serialized ILP to a file, outside every timed phase."""
    with whole_file(plan.write_ilp, "--write-ilp") as out:
        rows, nbytes = write_ilp(chunks, out, plan.wire.settings.offline_protocol_version(), default_workers())
    run.say(f"Wrote ILP:\n  {rows} rows, {nbytes / 2**20:.2f} MiB to {plan.write_ilp}")
