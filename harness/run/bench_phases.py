"""The phases of a ``bench`` run, one small function each: generate (every chunk in memory first, as the
original benchmark does), serialize, write the ILP to a file, send, validate. Each records itself in the
run (``harness.run.session.Run``) and feeds the run's metrics.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from harness.errors import RunError, UsageError
from harness.ingest.arrival import ArrivalTally, arrival_lines
from harness.ingest.ilp import write_ilp
from harness.ingest.ordered_write import default_workers
from harness.ingest.phase_loop import (
    ChunkStream,
    PhaseFailed,
    SendWorker,
    SerializeWorker,
    deal_round_robin,
    run_phase,
)
from harness.output_file import whole_file
from harness.questdb.http import QuestDBSql
from harness.run.open_loop import judge_thresholds, open_loop_send
from harness.run.session import checkpoints, recorded_if_interrupted
from harness.run.tables import connect, server_state, validate
from harness.scaleout.delivery import deliver
from harness.scaleout.meeting import PREPARED, READY, SENT, FolderPlace, Meeting, TablePlace
from harness.telemetry.phase import PhaseRecord
from harness.telemetry.progress import ProgressPrinter

if TYPE_CHECKING:
    from harness.ingest.open_loop import OpenLoop
    from harness.ingest.senders import SenderSettings
    from harness.run.bench_options import BenchOptions
    from harness.run.session import Run
    from harness.telemetry.metrics import RunMetrics
    from harness.tsbs.params import DatasetSpec
    from harness.tsbs.use_case import Chunk


def bench_phases(options: BenchOptions, spec: DatasetSpec, target: SenderSettings, run: Run,
                 metrics: RunMetrics) -> None:
    """Every phase the options ask for, in order; with ``--barrier``, as client i of a scale-out run."""
    meeting = None
    if options.barrier is not None:
        if options.barrier_folder is not None:
            place = FolderPlace(options.barrier_folder)
        else:  # met at the server: the record goes there too, for whoever gathers the run's records
            place = TablePlace(options.questdb_sql())
            run.written.append(functools.partial(deliver, place.questdb, options.barrier, spec.group))
        meeting = Meeting(place, options.barrier, spec.group, spec.groups, options.barrier_timeout)
    try:
        _phases(options, spec, target, run, metrics, meeting)
    except BaseException as exc:
        if meeting is not None:
            meeting.failed(exc)
        raise


def _phases(options: BenchOptions, spec: DatasetSpec, target: SenderSettings, run: Run, metrics: RunMetrics,
            meeting: Meeting | None) -> None:
    questdb, rows_before = None, {}
    if options.send:
        if meeting is not None and meeting.client:
            # Client 0 makes the tables; the others wait for it, then append after checking their schema.
            meeting.wait_for(PREPARED, range(1))
            options = dataclasses.replace(options, keep_table=True)
        questdb, rows_before = connect(options, target, run, options.schemas(), options.exactly_once,
                                       options.use_case_entry.known_schemas)
        if meeting is not None and not meeting.client:
            meeting.say(PREPARED)
    threads = options.threads
    # Rows per table of what this run sends (the whole data set, or its group): what the progress counts
    # towards and validation expects (a use case whose draws drop rows, iot, counts them by running its
    # simulation).
    run_rows = options.table_rows(spec)
    total_rows = sum(run_rows.values())
    # Tallied where the chunks are made once: generated up front, or streamed to the one phase that runs.
    tally = ArrivalTally(options.use_case_entry.dataframe_at)
    run.record.arrival = tally.tables
    chunks = None if options.streams else generate_phase(options, total_rows, run, metrics,
                                                        tally.watch(options.chunks(spec)))

    def work():
        if chunks is not None:
            return deal_round_robin(chunks, threads, options.first_chunk)
        return ChunkStream(tally.watch(options.chunks(spec)), threads, first_index=options.first_chunk)

    protocol_version = target.offline_protocol_version()
    if not (options.streams and options.send):
        serialize_phase(options, protocol_version, work(), run, metrics, total_rows)
    if options.write_ilp:
        write_ilp_phase(options, chunks if chunks is not None else options.chunks(spec), protocol_version, run)
    if options.send:
        if meeting is not None:
            meeting.say(READY)
            waited = meeting.wait_for(READY)
            run.say(f"All {meeting.clients} clients ready (waited {waited:.2f}s): sending")
        tables = list(run_rows)
        if options.open_loop:
            def send(stream, rows, name, schedule):
                return send_phase(options, target, stream, run, metrics, rows, questdb, schedule, name)

            sent, last_flush = open_loop_send(options, target, options.chunks(spec), tally.watch, total_rows,
                                              questdb, rows_before, run, metrics, send)
        else:
            record, last_flush = send_phase(options, target, work(), run, metrics, total_rows, questdb)
            sent = record.rows_by_table(tables)
        if late := arrival_lines(tally.tables):
            run.say("Arrived out of order (behind a row sent before them to the same table):\n" + "\n".join(late))
        if meeting is not None:
            meeting.say(SENT)
            if meeting.client:
                run.say(f"Validation: client 0 validates the whole data set once all {meeting.clients} have sent")
                return
            meeting.wait_for(SENT)
            # Time to visible counts from when the last client had sent (as seen here, a poll later at most).
            last_flush = time.perf_counter()
        if questdb is not None:
            metrics.set_phase("validate")
            if meeting is not None:  # the tables now hold every client's group: the whole data set
                whole = options.table_rows(spec.whole)
                expected = {table: before + whole[table] for table, before in rows_before.items()}
            elif options.first_chunk:  # resumed: chunks sent again replaced themselves; the whole set is there
                expected = run_rows
            else:  # what was sent (an open loop's --duration may end before the data set)
                expected = {table: before + sent.get(table, 0) for table, before in rows_before.items()}
            validate(questdb, options, expected, last_flush, run, options.sender_settings().unseen_losses())
    if options.open_loop:
        judge_thresholds(options, run)


def generate_phase(options: BenchOptions, rows: int, run: Run, metrics: RunMetrics, made: Iterable[Chunk]) -> list[Chunk]:
    """Every chunk (``rows`` rows in all) in memory before the timed phases, as the original benchmark does."""
    metrics.set_phase("generate")
    cpu_started, started = time.process_time(), time.perf_counter()
    chunks = list(made)
    seconds = time.perf_counter() - started
    run.phase("generate", None, PhaseRecord(rows, 0, seconds, time.process_time() - cpu_started, ended_at=time.time()))
    run.say(f"Generated:\n  {rows} rows in {seconds:.2f}s: {rows / seconds / 1e6:.2f} mil rows/sec.")
    return chunks


def serialize_phase(options: BenchOptions, protocol_version: int, work, run: Run, metrics: RunMetrics,
                    total_rows: int) -> None:
    metrics.set_phase("serialize")
    threads = options.threads
    progress = metrics.new_phase("serialize", threads)
    workers = [SerializeWorker(options.op, protocol_version, frame_columns(options)) for _ in range(threads)]
    with ProgressPrinter(progress, total_rows, options.reporting_period, run.out), \
            recorded_if_interrupted(run, progress):
        record = run_phase(progress, workers, work)
    run.phase("serialize", "Serialized", record)


def send_phase(options: BenchOptions, target: SenderSettings, work, run: Run, metrics: RunMetrics,
               total_rows: int, questdb: QuestDBSql | None = None, schedule: OpenLoop | None = None,
               name: str = "send") -> tuple[PhaseRecord, float]:
    """Send every chunk, one connection per worker (on an open loop's ``schedule``: each at its intended
    time); returns the phase and when its last flush ended."""
    # A ramp's every rate is the metrics' send phase (its counters start again at each); the record names each.
    metrics.set_phase("send")
    threads = options.threads
    first_chunk = work.first_index if isinstance(work, ChunkStream) else options.first_chunk
    progress = metrics.new_phase("send", threads, first_chunk)
    senders: list[SendWorker] = []
    try:
        for index in range(threads):
            senders.append(SendWorker(options.op, target, progress, index,
                                      options.retry_timeout if options.exactly_once else None, frame_columns(options)))
    except BaseException:
        for sender in senders:
            sender.close()
        raise
    try:
        with ProgressPrinter(progress, total_rows, options.reporting_period, run.out), \
                recorded_if_interrupted(run, progress), checkpoints(run, progress):
            record = run_phase(progress, senders, work, options.flush_timeout, schedule)
    except PhaseFailed as failure:
        run.phase(name, None, failure.record)
        # TCP has no acknowledgements: what was flushed is an upper bound of what the server received.
        bound = " (over TCP: an upper bound of what arrived)" if target.scheme.startswith("tcp") else ""
        server = f"; {server_state(questdb, options.schemas())}" if questdb is not None else ""
        unsent = total_rows - failure.record.rows
        # Without dedup a second attempt cannot fill the gap without doubling what arrived: say both sides.
        gap = "" if options.exactly_once or questdb is None else (
            f"; {unsent} of the {total_rows} rows were never sent: the table is incomplete, and sending the "
            f"data set again would double the rows that arrived (--exactly-once makes a re-send safe)")
        # A value of the user's file met while sending is bad input (exit 2), what landed said all the same.
        error = UsageError if isinstance(failure.cause, UsageError) else RunError
        raise error(f"{failure}; {failure.record.rows} rows were sent (flushed) before the failure{bound}"
                    f"{gap}{server}") from None
    last_flush = time.perf_counter()
    run.phase(name, "Sent" if name == "send" else f"Sent ({name})", record)
    if options.exactly_once:
        run.say(f"  Re-sent: {record.resent_chunks} chunks after failed flushes; "
                f"{record.outage_seconds:.1f}s spent waiting for the server.")
    return record, last_flush


def frame_columns(options: BenchOptions) -> tuple:
    """What the run's frames pass ``dataframe()``: its source's symbols and designated timestamp."""
    return options.use_case_entry.dataframe_symbols, options.use_case_entry.dataframe_at


def write_ilp_phase(options: BenchOptions, chunks, protocol_version: int, run: Run) -> None:
    """Write the serialized ILP to a file, outside every timed phase."""
    with whole_file(options.write_ilp, "--write-ilp") as out:
        rows, nbytes = write_ilp(chunks, out, protocol_version, default_workers())
    run.say(f"Wrote ILP:\n  {rows} rows, {nbytes / 2**20:.2f} MiB to {options.write_ilp}")
