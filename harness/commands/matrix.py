"""The ``matrix`` command: the same bench run against several servers, each a cell of a QuestDB release and
``server.conf`` overrides (``harness.run.matrix``), run natively from the release's own jar on a fresh root and
ports of its own, alternated over rounds, the first cell the baseline; one benchmark record with paired
intervals per figure (rows/s, time to visible, the server's CPU per million rows and peak memory), and with
``--report`` its HTML report. ``run_matrix(MatrixOptions(...))`` is what ``python -m harness matrix`` calls.

Before the rounds, each cell's server is started on a fresh root and asked what it offers
(``harness.questdb.features``): a cell that lacks what the bench options need ends there, in one line, and the
others go on; each server's CPU at rest is measured then. The servers stay up, idle but for their turns: a
turn runs the bench (``run_bench``, in this process) and waits for its server to settle back to its rest level
(WAL applied, housekeeping done), so that work is the cell's, counted in its CPU, and does not run into the next
cell's turn. Whatever ends the matrix (Ctrl-C included), no server of it is left running.
"""

from __future__ import annotations

import dataclasses
import io
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.commands.bench import run_bench
from harness.errors import RunError, UsageError
from harness.ingest.choices import Target
from harness.options.declare import command, option
from harness.questdb.features import detect
from harness.questdb.schema import TableWal
from harness.records.alternation import alternate
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.records.store import default_results_path, write_benchmark_record
from harness.report.tables import plain_table
from harness.run.bench_options import BenchOptions
from harness.run.matrix import (
    DEFAULT_BASE_PORT,
    MATRIX_ROOT,
    Cell,
    CellServer,
    cell_ports,
    cells,
    check_ports,
    needed_features,
)

DEFAULT_ROUNDS = 5
# The figures charted per cell in the report, and printed in the table.
CHARTED_FIGURES = ("rows_per_second", "time_to_visible_seconds", "server_cpu_seconds_per_million_rows",
                   "server_peak_rss_bytes")
# Bench options the matrix sets itself for every cell (where it sends, how it runs), refused when given.
_SET_PER_CELL = ("host", "http_port", "ilp_port", "pg_port", "server_metrics_port", "conf")


@dataclass
class MatrixOptions(BenchOptions):
    """A bench run's options, and the cells it runs against."""

    send: bool = option(True, "Every cell's run sends.", cli=False)
    stream: bool = option(True, "Every cell's run makes its chunks while sending (bounded memory).", cli=False)
    versions: str = option("", "QuestDB releases, space- or comma-separated (e.g. '7.0.1 9.3.4'); the jar of each "
                               "is fetched through Maven once.")
    configs: str = option("", "server.conf overrides, one config per word, each key=value[,key=value] (short keys: "
                              "wal, shared-workers, ilp-io-workers, ilp-writer-workers); 'as-is' overrides "
                              "nothing. Default: as-is. Every release runs with every config.")
    rounds: int = option(DEFAULT_ROUNDS, "Counted rounds (after a warm-up round), each running every cell once, "
                                         "in a rotated order.", min=1)
    table_wal: TableWal = option(TableWal.server_default, "The tables each bench run makes: server-default (the "
                                                          "cell's cairo.wal.enabled.default decides), wal or bypass.")
    base_port: int = option(DEFAULT_BASE_PORT, "Cell i's servers listen on this port + 10*i (HTTP), +1 (ILP), +2 "
                                               "(PGWire), +3 (/metrics), on 127.0.0.1.", min=1, max=65535)
    roots: str = option(str(MATRIX_ROOT), "Folder of the cells' server roots (each emptied when the matrix starts "
                                          "and removed when it ends well).")

    def bench_options(self) -> BenchOptions:
        """The bench run every cell runs (its ports set per cell)."""
        names = {field.name for field in dataclasses.fields(BenchOptions)}
        values = {name: getattr(self, name) for name in names}
        values.update(send=True, stream=True, reporting_period=0.0, host="127.0.0.1", dry_run=False, report=False)
        return BenchOptions(**values)

    def cells(self) -> list[Cell]:
        return cells(self.versions, self.configs)

    def check_values(self) -> None:
        super().check_values()
        defaults = {field.name: field.default for field in dataclasses.fields(BenchOptions)}
        for name in _SET_PER_CELL:
            if getattr(self, name) != defaults[name]:
                raise UsageError(f"--{name.replace('_', '-')}: the matrix starts each cell's server on this machine "
                                 f"and sends to it (--base-port chooses the ports)")
        if self.client_conf() is not None:
            raise UsageError("QDB_CLIENT_CONF: the matrix sends to the servers it starts; unset it")
        refused = [(flag, given) for flag, given in (
            ("--target sink", self.target == Target.sink), ("--resume", self.resume is not None),
            ("--clients", self.clients > 1), ("--barrier", self.barrier is not None),
            ("--keep-table", self.keep_table), ("--metrics-port", self.metrics_port is not None)) if given]
        if refused:
            raise UsageError(f"{refused[0][0]}: a matrix runs one bench run per cell and turn into a fresh table "
                             f"of its own server; it takes no {refused[0][0]}")
        if not self.versions.strip():
            raise UsageError("--versions: name at least one QuestDB release (e.g. '7.0.1 9.3.4')")

    def rehearse(self) -> None:
        """A --dry-run also checks the cells (the releases fetched, their keys known) and the ports."""
        super().rehearse()
        check_ports(self.base_port, len(self.cells()))


@command
def run_matrix(options: MatrixOptions, out: TextIO | None = None) -> BenchmarkRecord:
    """Run the matrix; returns its benchmark record (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    all_cells = options.cells()
    check_ports(options.base_port, len(all_cells))
    bench = options.bench_options()
    used = bench.sender_settings().used()
    needed = needed_features(used["transport"], used["protocol_version"], bench.exactly_once)
    path = Path(options.results) if options.results else default_results_path("matrix", options.results_dir)
    runs = path.with_suffix("")  # each turn's own run record
    servers = {cell.name: CellServer(cell, cell_ports(options.base_port, index), Path(options.roots))
               for index, cell in enumerate(all_cells)}
    record = BenchmarkRecord(benchmark="matrix", parameters=_parameters(options, bench, all_cells, servers, needed))
    started = time.perf_counter()
    say(f"Matrix: {len(all_cells)} cells ({', '.join(servers)}), {options.rounds} rounds after a warm-up, one "
        f"turn at a time; each turn a bench run of {bench.source_rows(bench.dataset())} rows ({used['transport']}, "
        f"{bench.threads} worker(s)); records of the runs in {runs}/")
    try:
        running = _ready_cells(servers, needed, record, say)
        comparison = alternate({name: _turn(servers[name], bench, runs, say) for name in running}, options.rounds,
                               name="cells", warm_up=True, parameters={"charted_figures": list(CHARTED_FIGURES)})
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        record.extra.update(status="interrupted" if interrupted else "failed",
                            error="interrupted" if interrupted else str(exc),
                            seconds=round(time.perf_counter() - started, 1))
        say(f"Results: {write_benchmark_record(record, path)} (the cells' roots stay in {options.roots} for their "
            f"logs)")
        raise
    finally:
        for server in servers.values():
            server.stop()
    for server in servers.values():
        server.remove()
    record.comparisons.append(comparison)
    record.extra.update(status="ok", seconds=round(time.perf_counter() - started, 1))
    say(cells_table(comparison))
    written = write_benchmark_record(record, path)
    say(f"Results: {written}")
    if options.report:
        from harness.report.html import write_report  # matplotlib: only when the report is asked for

        say(f"Report: {write_report([], written.with_suffix('.html'), [record])}")
    return record


def _ready_cells(servers: dict[str, CellServer], needed: list[str], record: BenchmarkRecord, say) -> list[str]:
    """Start each cell's server once on a fresh root and ask what it offers; the cells that can run the bench.
    A cell that lacks a needed feature ends in one line; none left is a RunError."""
    running, cells_extra = [], record.extra.setdefault("cells", {})
    for name, server in servers.items():
        try:
            server.start_fresh()
            features = detect(server.sql())
        except RunError as exc:
            server.stop()
            cells_extra[name] = {"features": None, "ended": f"its server did not start: {exc}"}
            say(f"cell {name} ends: its server did not start: {exc}")
            continue
        if features.version != server.cell.release.version:
            raise RunError(f"cell {name}: the server on port {server.ports['http']} says it is QuestDB "
                           f"{features.version}, not {server.cell.release.version}")
        missing = features.missing(needed)
        cells_extra[name] = {"features": dataclasses.asdict(features), "ended": None}
        if missing:
            why = (f"QuestDB {server.cell.release.version} has no {' and no '.join(missing)}, which this bench run "
                   f"needs")
            cells_extra[name]["ended"] = why
            say(f"cell {name} ends: {why}; the other cells go on")
            server.stop()
            continue
        cells_extra[name]["rest_cpu_share"] = round(server.measure_rest(), 4)
        running.append(name)
    if not running:
        raise UsageError(f"no cell can run this bench: {'; '.join(extra['ended'] for extra in cells_extra.values())}")
    return running


def _turn(server: CellServer, bench: BenchOptions, runs: Path, say):
    """One cell's measurement of a round: the bench run against its server, the server settled, its cost."""
    def measure(round_number: int) -> Measurement:
        say(f"  round {round_number or 'warm-up'}: {server.cell.name}")
        results = runs / f"{round_number}-{server.cell.slug}.json"
        options = dataclasses.replace(bench, http_port=server.ports["http"], ilp_port=server.ports["ilp"],
                                      pg_port=server.ports["pg"], server_metrics_port=server.ports["min"],
                                      results=str(results))
        cpu_before = server.cpu_seconds()
        try:
            record = run_bench(options, io.StringIO())
        except (UsageError, RunError) as exc:
            raise RunError(f"cell {server.cell.name}, round {round_number}: {exc}") from None
        settle_seconds = server.settle()
        server_cpu = server.cpu_seconds() - cpu_before
        peak_rss = server.peak_rss()
        send = record.phases["send"]
        visible = record.validation.time_to_visible_seconds if record.validation is not None else 0.0
        rows = record.validation.visible_rows if record.validation is not None else send.rows
        extra = {"send_seconds": send.seconds, "time_to_visible_seconds": visible, "settle_seconds": settle_seconds,
                 "server_cpu_seconds": server_cpu, "server_cpu_seconds_per_million_rows": server_cpu / (rows / 1e6) if rows else 0.0}
        if peak_rss is not None:
            extra["server_peak_rss_bytes"] = peak_rss
        extra.update(_open_loop_figures(record))
        return Measurement(seconds=send.seconds + visible, rows=rows, client_cpu_seconds=send.client_cpu_seconds,
                           extra=extra, run_record=str(results))
    return measure


def _open_loop_figures(record) -> dict[str, float]:
    """An open-loop run's (``--rate``) figures of its last rate: the rate achieved, freshness p50 and p99."""
    steps = record.open_loop.steps if record.open_loop is not None else []
    if not steps:
        return {}
    step = steps[-1]
    figures = {"achieved_rows_per_second": step.achieved_rows_per_second}
    if step.freshness is not None:
        figures.update(freshness_p50_seconds=step.freshness.p50, freshness_p99_seconds=step.freshness.p99)
    return {name: value for name, value in figures.items() if value is not None}


def _parameters(options: MatrixOptions, bench: BenchOptions, all_cells: list[Cell],
                servers: dict[str, CellServer], needed: list[str]) -> dict:
    return {
        "versions": options.versions.split(), "configs": options.configs.split() or ["as-is"],
        "rounds": options.rounds, "base_port": options.base_port, "needed_features": needed,
        "use_case": bench.use_case, "row_count": bench.row_count, "workers": bench.threads,
        "transport": str(bench.transport), "protocol_version": str(bench.protocol_version),
        "worker_chunk_row_count": bench.worker_chunk_row_count, "exactly_once": bench.exactly_once,
        "cells": [{"name": cell.name, "release": cell.release.version, "config": cell.config,
                   "overrides": dict(cell.overrides), "ports": servers[cell.name].ports,
                   "left_out_of_server_conf": servers[cell.name].left_out} for cell in all_cells],
    }


def cells_table(comparison) -> str:
    """Each cell's medians and its paired ratio of rows/s to the baseline cell."""
    def median(figures: dict, figure: str, scale: float = 1.0, digits: int = 2) -> str:
        return f"{figures[figure].median / scale:.{digits}f}" if figure in figures else "-"

    rows = []
    for name in comparison.variants:
        figures = comparison.summary.get(name, {})
        rate = figures.get("rows_per_second")
        rows.append((name, median(figures, "rows_per_second", 1e6, 3), median(figures, "time_to_visible_seconds"),
                     median(figures, "server_cpu_seconds_per_million_rows"),
                     median(figures, "server_peak_rss_bytes", 2**20, 0),
                     "baseline" if name == comparison.baseline else (rate.paired_text() if rate else "-")))
    return (f"Cells ({len(comparison.counted_rounds())} rounds; medians; paired ratio of rows/s to "
            f"{comparison.baseline}, its interval and standing):\n"
            + plain_table(("cell", "Mrows/s", "visible s", "server CPU s/Mrow", "server peak RSS MiB",
                           "vs baseline"), rows))
