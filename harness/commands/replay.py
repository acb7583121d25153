"""The ``replay`` command: an ILP file (ours or ``tsbs_generate_data``'s, gzip'd or not) sent raw over TCP in
large writes as it is read, in bounded memory (``harness.ingest.ilp_file``), the loopback limit, then the
counts validated and the run recorded. Which use case's tables the file fills is told from the lines of its
first piece (``harness.tsbs.use_cases.ilp_file_use_case``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from harness.errors import RunError, UsageError
from harness.ingest import file_send
from harness.ingest.wire.registry import wire_for
from harness.ingest.wire.settings import SenderSettings
from harness.ingest.ilp_file import IlpFile
from harness.options.declare import CommandOptions, command, option
from harness.options.groups import ProfileOptions, RecordOptions, ServerOptions
from harness.questdb.http import QuestDBSql
from harness.questdb.wal import wait_for_count
from harness.records.run_record import RunRecord
from harness.run.limits import check_workers
from harness.profiling.profiled import profiled
from harness.run.session import Run
from harness.telemetry.timeseries import sampled
from harness.run.tables import connect, prepare_tables, server_state, validate
from harness.telemetry.phase import PhaseProgress
from harness.tsbs import use_cases
from harness.tsbs.choices import FieldType
from harness.tsbs.schema import TableSchema


@dataclass
class ReplayOptions(RecordOptions, ServerOptions, ProfileOptions, CommandOptions):
    """An ILP file (ours or tsbs_generate_data's, gzip'd or not) sent raw over TCP."""

    path: str | None = option(None, "ILP file (ours or tsbs_generate_data's; .gz is unzipped as it is read).",
                               argument=True)
    write_size: int = option(file_send.DEFAULT_WRITE_SIZE, "Bytes per piece read from the file and written to a socket "
                                                     "(whole lines); memory holds a few pieces per worker.", min=1)
    workers: int = option(1, "Workers: connections, one thread each; each piece goes to the first that is free (as "
                             "TSBS's loader's workers share its batches).", min=1)

    def check_values(self) -> None:
        super().check_values()
        check_workers("--workers", self.workers)
        if not self.path or not os.path.isfile(self.path) or not os.access(self.path, os.R_OK):
            raise UsageError(f"cannot read ILP file {self.path!r}")


def ilp_field_type(first_line: bytes) -> FieldType:
    """``long`` when the file's first line prints its first field as an integer (``usage_user=58i``, as
    TSBS does), else ``double``: the column type the replayed table needs."""
    first_field = first_line.split(b" ")[1].split(b",")[0]
    return FieldType.long if first_field.endswith(b"i") else FieldType.double


@command
def run_replay(options: ReplayOptions, out: TextIO | None = None) -> RunRecord:
    """Send an ILP file raw over TCP as it is read, like the original bench_raw_ilp, then validate the counts
    and record."""
    out = out or sys.stdout
    with IlpFile(options.path, options.write_size, file_send.buffers_needed(options.workers)) as ilp:
        return _replay(options, ilp, out)


def _replay(options: ReplayOptions, ilp: IlpFile, out: TextIO) -> RunRecord:
    fields = ilp_field_type(ilp.first_piece())
    use_case = use_cases.ilp_file_use_case(ilp.first_table_lines())
    if use_case is None:
        raise UsageError(f"ILP file {options.path!r} names measurements of no use case "
                         f"(known: {', '.join(use_cases.known_tables())})")
    if options.table is not None and not use_case.renamable_table:
        raise UsageError(f"--table: {options.path} is a {use_case.name} file: its lines name their tables")
    ilp.use_case, ilp.tables = use_case.name, use_case.tables()
    if options.table is not None:
        # The lines name the use case's one table (TSBS's: cpu); they go out naming --table instead.
        ilp.rename(use_case.tables()[0], options.table)
    parameters = {**dataclasses.asdict(options), "fields": fields, "use_case": use_case.name}
    mode = "replay" if options.workers == 1 else f"replay-{options.workers}w"
    record = RunRecord(kind="replay", mode=mode, parameters=parameters)
    run = Run(record, options.recording(), out, options.spelling())
    run.say(f"Replaying {options.path} ({os.path.getsize(options.path) / 2**20:.2f} MiB"
            f"{' gzip' if ilp.gzipped else ''}): a {use_case.name} file")
    progress = PhaseProgress("send", options.workers)
    with run, sampled(options.sampling(), {"send": progress}, record, overlap=True) as baseline, \
            profiled(options.profiling(), run):
        schemas = use_case.schemas(fields, options.table)
        questdb, rows_before = connect(options.server_sql(), None, run, schemas, options.table_policy())

        def widen(table: str) -> tuple[str, ...]:
            """A later piece names ``table``: the use case that holds it and every table before, its new
            tables made ready before the piece goes out (cpu-only's cpu is devops's)."""
            wider = use_cases.ilp_file_use_case({**dict.fromkeys(ilp.tables, 1), table: 1})
            if wider is None or options.table is not None:
                raise UsageError(f"ILP file {options.path!r} names table {table!r} after its first piece, which "
                                 f"told a {ilp.use_case} file" + (" (--table renames its one table)" if wider else ""))
            if questdb is not None:
                rows_before.update(prepare_tables(questdb, options.table_policy(), run, [
                    schema for schema in wider.schemas(fields) if schema.table not in rows_before]))
            schemas[:] = wider.schemas(fields)
            run.record.parameters["use_case"] = ilp.use_case = wider.name
            run.say(f"  {options.path} names {table}: a {wider.name} file")
            return wider.tables()

        ilp.widen = widen
        baseline()  # the time series' first sample, taken while the tables were made ready, before the send
        cpu_started = time.process_time()
        try:
            wire = wire_for(SenderSettings(host=options.host, ilp_port=options.ilp_port), "raw")
            seconds = file_send.send_pieces(ilp, wire, progress, options.workers)
        except file_send.RawSendFailed as failure:
            run.phase("send", None, progress.record(time.perf_counter() - progress.started,
                                                    time.process_time() - cpu_started))
            said = sent_before_failure(questdb, options, progress, schemas, rows_before, failure.delivered)
            raise RunError(f"{failure}; {said}") from None
        last_write = time.perf_counter()
        run.phase("send", "Sent", progress.record(seconds, time.process_time() - cpu_started))
        if questdb is not None:
            validate(questdb, options.validation_query_timeout, expected_rows(progress, schemas, rows_before),
                     last_write, run)
    return run.record


def expected_rows(progress: PhaseProgress, schemas: list[TableSchema], rows_before: dict[str, int]) -> dict[str, int]:
    """Rows each table holds once what was sent is visible: those it had, and the lines sent that name it
    (all of them where the file has one table, which ``--table`` may rename)."""
    if len(schemas) == 1:
        return {schemas[0].table: rows_before.get(schemas[0].table, 0) + progress.rows}
    return {schema.table: rows_before.get(schema.table, 0) + progress.table_rows.get(schema.table, 0)
            for schema in schemas}


def sent_before_failure(questdb: QuestDBSql | None, options: ReplayOptions, progress: PhaseProgress,
                        schemas: list[TableSchema], rows_before: dict[str, int], delivered: bool) -> str:
    """What had gone out when a send failed: the rows and bytes written, and, from QuestDB, the rows each
    table holds; where every connection was closed in order (``delivered``), once those rows had time to
    arrive (a reset connection loses what the kernel still held: its counts are the server's at once)."""
    said = f"{progress.rows} rows ({progress.bytes} bytes) were written before the failure"
    if questdb is None:
        return said
    for table, rows in expected_rows(progress, schemas, rows_before).items() if delivered else ():
        try:
            wait_for_count(questdb, table, rows, options.validation_query_timeout)
        except RunError:
            break  # the server's own counts below say what arrived
    return f"{said}; {server_state(questdb, schemas)}"
