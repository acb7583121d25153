"""The ``paths`` command: the same rows (the user's file, or a TSBS data set) into QuestDB by every path a Python
user takes (``harness.ingest_paths``), side by side: each path writes them into a scratch table of its own, alternated
over rounds (after a warm-up round); each is timed until its rows are visible, its client and server CPU
measured, its row count checked exact, and every value read back and compared with the source
(``read --check`` / ``--check-against``). One benchmark record; rows/s against ILP over HTTP with paired
intervals. Before the rounds, each path is probed (``harness.ingest_paths.probe``): a path that cannot take the
data is a row that says why, not timed; what a batch with one bad row leaves behind, and the table a path makes
itself, are measured. Each trial runs in a process of its own (spawned: the data read or generated there), so
that its peak RSS is the path's own. ``run_paths(PathsOptions(...))`` is what ``python -m harness paths`` calls.

A path's time is its writes' own and the wait until its rows are visible: the chunks are made between the
writes (the generator, the file's reader) and not counted, so every path is timed on the same rows alike. The
server-side paths (COPY, read_parquet) have the whole data set written into a file under the server's import
root first, untimed (the user's file), and are timed from the statement until the rows are visible; against a
server whose import root this machine cannot write, they are skipped with the reason. The scratch tables (``harness_paths_<run>_<path>``) are claimed as every run's tables are, made before each trial
exactly as ``bench`` makes a table (untimed), and dropped when the run ends, however it ends.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import multiprocessing
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.errors import RunError, UsageError, one_line
from harness.options.declare import CommandOptions, Spelling, command, option
from harness.options.groups import DataSetRowsOptions, OwnDataOptions, PgwireOptions, RecordOptions, ServerOptions
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.probe import MADE_SUFFIX, PROBE_ROWS, probe, type_changes
from harness.ingest_paths.registry import PATHS, open_writer, writer_class
from harness.ingest_paths.server_side import import_root
from harness.ingest_paths.target import PathTarget
from harness.questdb.features import detect
from harness.questdb.schema import create_table
from harness.questdb.wal import wait_for_count
from harness.read.connection import Endpoint
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.report.tables import plain_table
from harness.run.bench_options import BenchOptions
from harness.run.comparison import ComparisonRun
from harness.run.plan import BenchPlan
from harness.telemetry.peak_rss import PeakRss
from harness.questdb.process import LOCAL_HOSTS, listening_process

DEFAULT_ROUNDS = 3
DEFAULT_BATCH_ROWS = 10_000
SCRATCH_PREFIX = "harness_paths_"
# The path every other is measured against: QuestDB's recommended way in.
BASELINE = IngestPath.ilp_http
# The figures the HTML report (``harness report``) draws a bar chart of, each path's beside the baseline's.
CHARTED_FIGURES = ("rows_per_second", "client_cpu_seconds", "server_cpu_seconds", "visible_wait_seconds",
                   "peak_rss_bytes")
# How long a path's rows may take to become visible after its last write.
VISIBLE_TIMEOUT_SECONDS = 120.0


@dataclass
class PathsOptions(OwnDataOptions, DataSetRowsOptions, RecordOptions, PgwireOptions, ServerOptions, CommandOptions):
    """The data (--data, or a TSBS data set), the paths, the rounds and the batch."""

    paths: list[str] | None = option(None, "A path to measure (repeat the flag for several): "
                                           + ", ".join(path.value for path in IngestPath) + ". Default: all.",
                                     flags=("--path",))
    rounds: int = option(DEFAULT_ROUNDS, "Counted rounds (after a warm-up round), each running every path once, in "
                                         "a rotated order.", min=1)
    batch_rows: int = option(DEFAULT_BATCH_ROWS, "Rows per batch: one write of each path (an ILP flush, an "
                                                 "executemany, an upload).", min=1)

    def data_options(self) -> BenchOptions:
        """The data as a bench run reads it, in batches of ``batch_rows``."""
        return BenchOptions.shared_with(self, worker_chunk_row_count=self.batch_rows)

    def data_plan(self) -> BenchPlan:
        """The data as a bench run sends it: its source opened (a file read and audited), one table."""
        plan = self.data_options().plan()
        if len(plan.schemas) != 1:
            raise UsageError(f"{plan.source.name} writes {len(plan.schemas)} tables; paths compares one table's rows "
                             f"(cpu-only, or --data)")
        return plan

    def chosen_paths(self) -> list[IngestPath]:
        """--path's paths in the order given (all by default), the baseline first where it is among them."""
        names = self.paths or [path.value for path in IngestPath]
        unknown = [name for name in names if name not in {path.value for path in IngestPath}]
        if unknown:
            raise UsageError(f"--path {unknown[0]!r}: not a path; the paths are "
                             f"{', '.join(path.value for path in IngestPath)}")
        chosen = list(dict.fromkeys(IngestPath(name) for name in names))
        return sorted(chosen, key=lambda path: path != BASELINE)

    def check_values(self) -> None:
        super().check_values()
        self.refuse_table_flags("every path writes into a scratch table of its own")
        for path in self.chosen_paths():
            writer_class(path)  # its driver installed, or one line naming the package
        self.data_options().check_values()

    def rehearse(self) -> None:
        """A --dry-run also opens the data and checks it is one table's."""
        self.data_plan()


@command
def run_paths(options: PathsOptions, out: TextIO | None = None) -> BenchmarkRecord:
    """Measure every path; returns the benchmark record (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout
    data = options.data_plan()
    (schema,) = data.schemas
    rows = data.rows
    questdb = options.questdb_sql()
    questdb.ping()
    version = questdb.server_version()
    say = functools.partial(print, file=out, flush=True)
    paths, skipped = _runnable_paths(options, questdb, say)
    server = listening_process(options.http_port) if options.host in LOCAL_HOSTS else None
    say(f"Paths: {', '.join(paths)}; {rows} rows of {options.data or data.source.name} in batches of "
        f"{options.batch_rows}, into QuestDB {version} at {options.host}; {options.rounds} rounds after a warm-up")
    partitioning = data.source.partitioning_record()  # one for every path's table
    say(options.spelling().text(f"Every path's table {partitioning['why']}"))
    parameters = {"paths": [str(one) for one in paths], "rows": rows, "batch_rows": options.batch_rows,
                  "rounds": options.rounds, "source": data.source.name, "data": options.data,
                  "questdb_version": version, "server_cpu": server is not None, "skipped": skipped,
                  "probe_rows": PROBE_ROWS, "partitioning": options.spelling().values(partitioning)}
    with ComparisonRun("paths", options.recording(), parameters, out, options.spelling()) as comparison:
        record = comparison.record
        scratch = {path: schema.renamed(f"{SCRATCH_PREFIX}{comparison.run_id}_{path.name}") for path in paths}
        made = [table.table + MADE_SUFFIX for table in scratch.values()]  # the probes' tables each path makes itself
        comparison.claim(questdb, [table.table for table in scratch.values()] + made)
        endpoint = Endpoint(options.host, options.http_port, options.pg_port, options.pg_login(),
                            options.http_login(), options.pg_tls(), options.http_tls())
        targets = {path: PathTarget(endpoint, scratch[path], options.ilp_port) for path in paths}
        first = _first_frame(data.chunks(), schema.table)
        probes = _probe_paths(targets, first, schema, questdb, say)
        record.extra.update(probes=probes, checks={},
                            paths={str(ingest): {"batch": PATHS[ingest].batch, "package": PATHS[ingest].package}
                                   for ingest in paths})
        measured = [ingest for ingest in paths if not probes[str(ingest)]["refused"]]
        if not measured:
            raise RunError(f"no path takes the data: {paths[0]}: {probes[str(paths[0])]['refused']}")
        record.parameters["baseline"] = str(BASELINE) if BASELINE in measured else str(measured[0])
        # The trials' processes make the same data: a TSBS data set's seed, once drawn, is theirs too.
        trial_options = dataclasses.replace(options, seed=data.source.seed(data.spec))
        trials = {str(ingest): _trial(trial_options, ingest, targets[ingest], rows, questdb, server,
                                      record.extra["checks"], say) for ingest in measured}
        comparison.alternate(trials, options.rounds, name="paths", baseline=record.parameters["baseline"],
                             parameters={"charted_figures": list(CHARTED_FIGURES)})
    return comparison.finish(paths_table(record), made_tables_table(record))


def _runnable_paths(options: PathsOptions, questdb, say) -> tuple[list[IngestPath], dict[str, str]]:
    """--path's paths that can run against this server, and why each that cannot is skipped: the server-side paths
    need its import root written from this machine, a path that needs a feature of the server (QWP) a server that
    has it."""
    paths = options.chosen_paths()
    skipped = {}
    if any(PATHS[ingest].server_side for ingest in paths):
        root, why = import_root(questdb, options.host, options.http_port)
        if root is None:
            skipped.update({str(ingest): why for ingest in paths if PATHS[ingest].server_side})
    if any(PATHS[ingest].needs for ingest in paths):
        features = detect(questdb)
        for ingest in paths:
            if lacking := features.lacking(PATHS[ingest].needs, f"{options.host}:{options.http_port}"):
                skipped[str(ingest)] = lacking
    for name, why in skipped.items():
        say(f"Skipped {name}: {why}")
    paths = [ingest for ingest in paths if str(ingest) not in skipped]
    if not paths:
        raise UsageError(f"no path left to run: {'; '.join(dict.fromkeys(skipped.values()))}")
    return paths, skipped


def _probe_paths(targets: dict[IngestPath, PathTarget], first, schema, questdb, say) -> dict[str, dict]:
    """Each path probed on the data's first rows (``harness.ingest_paths.probe``): whether it takes them, what a
    batch with a bad row leaves, the table it makes itself and how that differs from the run's."""
    probes = {}
    for ingest, target in targets.items():
        found = probe(ingest, target, first, questdb)
        probes[str(ingest)] = found.as_record()
        if found.made is not None:
            probes[str(ingest)]["made_table"]["changes"] = [list(change) for change in type_changes(
                schema, {name: str(dtype) for name, dtype in first.dtypes.items()}, found.made)]
        say(f"Refused {ingest}: {found.refused}" if found.refused else
            f"Probe {ingest}: takes the data; a batch of {found.rows} rows with one bad (a timestamp before "
            f"1970): {found.outcome}{f' ({one_line(found.error)})' if found.error else ', no error'}")
    return probes


def _trial(options: PathsOptions, ingest: IngestPath, target: PathTarget, rows: int, questdb, server,
           checks: dict[str, str], say):
    """A round's measurement of ``ingest``: its scratch table made as bench makes it (untimed), the rows written in a
    process of its own, and the first time (the warm-up) every value read back and compared."""
    def measure(round_number: int) -> Measurement:
        questdb.drop_table(target.table)
        create_table(questdb, target.schema)
        figures = trial_in_process(options, ingest, target, rows, server.pid if server else None)
        if ingest not in checks:  # the first time (the warm-up): every value read back and compared
            checks[ingest] = _check(options, target.table, target.schema.partition_by)
        say(f"  round {round_number or 'warm-up'}: {ingest:<12} {rows / figures.seconds:>12,.0f} rows/s")
        return figures
    return measure


def trial_in_process(options: PathsOptions, ingest: IngestPath, target: PathTarget, rows: int,
                     server_pid: int | None) -> Measurement:
    """One trial of ``ingest`` in a process of its own (spawned: a fresh interpreter, the data read or generated
    there), so that its peak RSS is the path's own; its figures, or its error as the same one line."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    # The child reads or generates the data itself.
    child = context.Process(target=_trial_child, args=(send, options, ingest, target, rows,
                                                       server_pid), name=f"paths-{ingest}", daemon=True)
    child.start()
    send.close()
    try:
        while not receive.poll(0.2):
            if not child.is_alive() and not receive.poll(0):
                raise RunError(f"{ingest}: its trial's process ended (exit {child.exitcode}) without its figures")
        outcome, value = receive.recv()
    finally:
        if child.is_alive():
            child.terminate()
        child.join(10)
        receive.close()
    if outcome == "usage":
        raise UsageError(value)
    if outcome == "error":
        raise RunError(value)
    return value


def _trial_child(send, options: PathsOptions, ingest: IngestPath, target: PathTarget, rows: int,
                 server_pid: int | None) -> None:
    """The spawned trial: the data made here, every chunk written, its figures (with this process's peak RSS) or
    its error sent back. Ctrl-C is the parent's to handle: it ends this process."""
    import signal

    import psutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        data = options.data_plan()
        server = psutil.Process(server_pid) if server_pid else None
        # Sampled, not ru_maxrss: a spawned process's ru_maxrss keeps the peak of the parent's copy it was forked
        # as before its exec.
        with PeakRss() as peak:
            figures = _write_all(ingest, target, data.chunks(), rows, options.questdb_sql(), server)
        figures.peak_rss_bytes = peak.peak
        send.send(("ok", figures))
    except UsageError as exc:
        send.send(("usage", str(exc)))
    except Exception as exc:  # a RunError's line, or anything else said in one
        send.send(("error", str(exc) if isinstance(exc, RunError) else f"{ingest}: {type(exc).__name__}: {exc}"))
    finally:
        send.close()


def _write_all(ingest: IngestPath, target: PathTarget, frames, rows: int, questdb, server) -> Measurement:
    """Every chunk written by ``ingest`` (a server-side path: the whole file staged first, untimed, then loaded),
    then waited for until visible: the writes' own time and CPU (the chunks made between them are not counted) and
    the wait; the server's CPU over all of it."""
    busy = cpu = 0.0
    writer = open_writer(ingest, target)
    tables = (chunk[target.table] if target.table in chunk else next(iter(chunk.values())) for chunk in frames)
    try:
        if PATHS[ingest].server_side:
            writer.stage(tables)  # the user's file under the import root: made before, not timed
            tables = [None]
        server_before = _cpu(server)
        for frame in tables:
            began, cpu_began = time.perf_counter(), time.process_time()
            if frame is None:
                writer.load()
            else:
                writer.write(frame)
            busy += time.perf_counter() - began
            cpu += time.process_time() - cpu_began
    finally:
        writer.close()
    try:
        waited = wait_for_count(questdb, target.table, rows, VISIBLE_TIMEOUT_SECONDS)
    except RunError as exc:
        raise RunError(f"{ingest}: {exc}") from None
    server_after = _cpu(server)
    extra = {"visible_wait_seconds": waited}
    if server_before is not None and server_after is not None:
        extra["server_cpu_seconds"] = server_after - server_before
    return Measurement(seconds=busy + waited, rows=rows, client_cpu_seconds=cpu, extra=extra)


def _first_frame(chunks, table: str):
    """The data set's first chunk of ``table`` (the probes' rows)."""
    for chunk in chunks:
        frame = chunk[table] if table in chunk else next(iter(chunk.values()))
        if len(frame):
            return frame
    raise UsageError("the data set has no rows")


def _cpu(process) -> float | None:
    if process is None:
        return None
    try:
        times = process.cpu_times()
        return times.user + times.system
    except Exception:  # the server's process went away, or another user's: no figure, not a guess
        return None


def _check(options: PathsOptions, table: str, partition_by: str) -> str:
    """Every value of ``table`` read back (PGWire, asyncpg) and compared with the source (the user's file, or the
    TSBS data set its flags and seed name; a file's table partitioned by ``partition_by``, as every path's is made):
    ``exact``, or the one line that says where it differs."""
    from harness.commands.read import ReadOptions, run_read

    with tempfile.TemporaryDirectory(prefix="harness-paths-") as folder:
        values = dict(host=options.host, http_port=options.http_port, pg_port=options.pg_port, table=table,
                      results=str(Path(folder) / "read.json"), reporting_period=0.0, sample_interval=0.0)
        if options.data is not None:
            # The table partitioned as every path's is made, or the check says it differs.
            values.update(check_against=options.data, partition_by=partition_by)
        else:
            values.update({field.name: getattr(options, field.name) for field in dataclasses.fields(DataSetRowsOptions)},
                          check=True)
        try:
            run_read(ReadOptions(**values), out=io.StringIO())
        except (RunError, UsageError) as exc:
            return f"differs: {Spelling(ReadOptions).error(exc)}"
    return "exact"


def paths_table(record: BenchmarkRecord) -> str:
    """A row per path: its rows/s until visible (median), against the baseline with its paired interval, its CPU
    and peak RSS, whether its values came back exact, and what a batch with a bad row left (the probe); a path
    that could not take the data says so, its reason below the table."""
    (comparison,) = record.comparisons
    checks, probes = record.extra.get("checks", {}), record.extra.get("probes", {})
    rows, refused = [], []
    for name in comparison.variants:
        figures = comparison.summary[name]
        rate = figures["rows_per_second"]
        against = "baseline" if name == comparison.baseline else rate.paired_text()
        server, peak = figures.get("server_cpu_seconds"), figures.get("peak_rss_bytes")
        bad = probes.get(name, {}).get("bad_batch", {}).get("outcome", "-")
        rows.append((name, f"{rate.median:,.0f}", against, f"{figures['client_cpu_seconds'].median:.2f}",
                     f"{server.median:.2f}" if server is not None else "-",
                     f"{peak.median / 2**20:,.0f}" if peak is not None else "-", checks.get(name, "-"), bad))
    for name, found in probes.items():
        if found.get("refused"):
            rows.append((name, "refused", "-", "-", "-", "-", "-", "-"))
            refused.append(f"{name}: {found['refused']}")
    table = plain_table(("path", "rows/s until visible", f"vs {comparison.baseline}", "client CPU-s", "server CPU-s",
                         "peak RSS MiB", "values", "batch with a bad row"), rows)
    return "\n".join([table, *refused])


def made_tables_table(record: BenchmarkRecord) -> str:
    """What each path made of the source's columns where it made the table itself (the probe's), set against the
    run's table: a row per column that differs; a path that cannot make a table, why (below the table)."""
    rows, reasons = [], []
    for name, found in record.extra.get("probes", {}).items():
        made = found.get("made_table", {})
        if found.get("refused"):
            continue
        if made.get("columns") is None:
            rows.append((name, "-", "-", "-", "makes none (below)"))
            reasons.append(f"{name}: {one_line(made.get('error') or '')}")
            continue
        if made.get("error"):  # made, but not with every row
            reasons.append(f"{name}: {made['error']}")
        if not made.get("changes"):
            rows.append((name, "(all)", "-", "-", "the same as the run's"))
        else:
            rows.extend((name, *change) for change in made["changes"])
    title = "When a path makes the table itself (the run makes every path's table as bench does):"
    return "\n".join([title, plain_table(("path", "column", "dtype", "the run's table", "the path made"), rows),
                      *reasons])
