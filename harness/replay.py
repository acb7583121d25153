"""The ``replay`` command: an ILP file (ours or ``tsbs_generate_data``'s, gzip'd or not) sent raw over TCP in
large writes, the loopback limit, then the counts validated and the run recorded. Which use case's tables
the file fills is read from its lines (``harness.tsbs.use_cases.ilp_file_use_case``).
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import re
import sys
import time
import zlib
from dataclasses import dataclass
from typing import TextIO

from harness.errors import RunError, UsageError
from harness.ingest import raw
from harness.option_groups import RecordOptions, ServerOptions
from harness.limits import check_workers
from harness.options import check_options, coerce_choices, option
from harness.phase import PhaseProgress
from harness.results import RunRecord
from harness.session import Run, sampled
from harness.tables import connect, validate
from harness.tsbs import use_cases
from harness.tsbs.choices import FieldType


@dataclass
class ReplayOptions(RecordOptions, ServerOptions):
    """An ILP file (ours or tsbs_generate_data's, gzip'd or not) sent raw over TCP."""

    path: str | None = option(None, "ILP file (ours or tsbs_generate_data's; .gz is unzipped).", argument=True)
    write_size: int = option(raw.DEFAULT_WRITE_SIZE, "Bytes per socket write (whole lines).", min=1)
    workers: int = option(1, "Workers: connections, one thread each; the file's pieces are dealt round-robin (as "
                             "TSBS's loader deals batches to its workers).", min=1)

    def __post_init__(self) -> None:
        coerce_choices(self)

    def check(self) -> None:
        check_options(self)
        check_workers("--workers", self.workers)
        if not self.path or not os.path.isfile(self.path) or not os.access(self.path, os.R_OK):
            raise UsageError(f"cannot read ILP file {self.path!r}")


def _read_ilp_file(path: str) -> bytes:
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as source:
            return source.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise UsageError(f"cannot read ILP file {path!r}: {exc}") from None


# One ILP line as TSBS writes it: measurement[,tag=value...] field=value[,field=value...] timestamp
_ILP_LINE = re.compile(rb"^[^ ,=]+(,[^ ,=]+=[^ ,]+)* [^ ,=]+=[^ ,]+(,[^ ,=]+=[^ ,]+)* \d+$")


def check_ilp(path: str, data: bytes) -> None:
    """Refuse, before any table is touched, a file that is empty or whose first or last line is not ILP."""
    if not data.strip():
        raise UsageError(f"ILP file {path!r} is empty")
    lines = data.rstrip(b"\n").split(b"\n", 1)
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    for name, line in (("first", lines[0]), ("last", last)):
        if not _ILP_LINE.match(line):
            raise UsageError(f"ILP file {path!r}: its {name} line is not ILP ({line[:80]!r})")
    if not data.endswith(b"\n"):
        raise UsageError(f"ILP file {path!r} does not end with a newline: truncated?")


def ilp_field_type(data: bytes) -> FieldType:
    """``long`` when the file's first line prints its first field as an integer (``usage_user=58i``, as
    TSBS does), else ``double``: the column type the replayed table needs."""
    first_field = data[: data.find(b"\n")].split(b" ")[1].split(b",")[0]
    return FieldType.long if first_field.endswith(b"i") else FieldType.double


def file_table_lines(data: bytes) -> dict[str, int]:
    """Lines per table of an ILP file, for every table a use case writes (TSBS's files and ours name each
    line's measurement first)."""
    return {table: data.count(b"\n" + table.encode() + b",") + data.startswith(table.encode() + b",")
            for table in use_cases.known_tables()}


def run_replay(options: ReplayOptions, out: TextIO | None = None) -> RunRecord:
    """Send an ILP file raw over TCP, like the original bench_raw_ilp, then validate the count and record."""
    out = out or sys.stdout
    options.check()
    data = _read_ilp_file(options.path)
    check_ilp(options.path, data)
    rows = data.count(b"\n")
    fields = ilp_field_type(data)
    table_lines = file_table_lines(data)
    use_case = use_cases.ilp_file_use_case(table_lines)
    if use_case is None:
        raise UsageError(f"ILP file {options.path!r} names measurements of no use case "
                         f"(known: {', '.join(use_cases.known_tables())})")
    if options.table is not None and not use_case.renamable_table:
        raise UsageError(f"--table: {options.path} is a {use_case.name} file: its lines name their tables")
    parameters = {**dataclasses.asdict(options), "fields": fields, "use_case": use_case.name}
    mode = "replay" if options.workers == 1 else f"replay-{options.workers}w"
    run = Run(RunRecord(kind="replay", mode=mode, parameters=parameters), options, out)
    run.say(f"Replaying {options.path}: {rows} rows, {len(data) / 2**20:.2f} MiB")
    with run:
        schemas = use_case.schemas(fields, options.table)
        questdb, rows_before = connect(options, None, run, schemas)
        progress = PhaseProgress("send", options.workers)
        with sampled(options, run, {"send": progress}):
            cpu_started = time.process_time()
            try:
                seconds = raw.send_raw(data, options.host, options.ilp_port, options.write_size, progress,
                                       options.workers)
            except raw.RawSendFailed as failure:
                raise RunError(f"{failure}; {failure.bytes_sent} bytes were written before the failure") from None
            last_write = time.perf_counter()
            run.phase("send", "Sent", progress.record(seconds, time.process_time() - cpu_started))
            if questdb is not None:
                new_rows = ({schema.table: rows for schema in schemas} if use_case.renamable_table
                            else {table: table_lines[table] for table in use_case.tables()})
                validate(questdb, options, {table: rows_before[table] + count for table, count in new_rows.items()},
                         last_write, run)
    return run.record
