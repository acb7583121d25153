"""The ``matrix`` command: the same bench run against several servers, each a cell of a QuestDB server (a release,
the pinned QWP server, a server jar) and ``server.conf`` overrides (``harness.run.matrix``), run natively from its own
jar on a fresh root and ports of its own, alternated over rounds, the first cell the baseline; one benchmark record with paired
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
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.commands.bench import run_plan
from harness.errors import RunError, UsageError
from harness.ingest.choices import Target
from harness.open_loop.figures import last_rate_figures
from harness.options.declare import command, option
from harness.questdb.features import DEDUP, SINCE, detect
from harness.questdb.schema import TableWal
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.report.tables import plain_table
from harness.run.bench_options import BenchOptions
from harness.run.comparison import ComparisonRun
from harness.run.matrix import (
    DEFAULT_BASE_PORT,
    MATRIX_ROOT,
    Cell,
    CellServer,
    cell_ports,
    cells,
    check_ports,
)
from harness.run.plan import BenchPlan

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
    versions: str = option("", "QuestDB servers, space- or comma-separated (e.g. '7.0.1 9.3.4' or '9.3.4,qwp'): "
                               "releases, whose jars are fetched through Maven once; qwp, the pinned QWP server "
                               "(.env's QUESTDB_QWP); or server jars' paths.")
    configs: str = option("", "server.conf overrides, one config per word, each key=value[,key=value] (short keys: "
                              "wal, shared-workers, ilp-io-workers, ilp-writer-workers); 'as-is' overrides "
                              "nothing. Default: as-is. Every server runs with every config.")
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
            raise UsageError("--versions: name at least one QuestDB release (e.g. '7.0.1 9.3.4'), or qwp")

    def rehearse(self) -> None:
        """A --dry-run also checks the cells (the servers' jars fetched or found, their Java here, their keys known) and
        the ports."""
        super().rehearse()
        check_ports(self.base_port, len(self.cells()))


@command
def run_matrix(options: MatrixOptions, out: TextIO | None = None) -> BenchmarkRecord:
    """Run the matrix; returns its benchmark record (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout
    all_cells = options.cells()
    check_ports(options.base_port, len(all_cells))
    bench = options.bench_options()
    wire = bench.wire()
    needed = wire.needed_features() + ([DEDUP] if bench.exactly_once else [])
    servers = {cell.name: CellServer(cell, cell_ports(options.base_port, index), Path(options.roots))
               for index, cell in enumerate(all_cells)}
    source = bench.source()  # opened once, for every cell
    plans = {name: dataclasses.replace(bench, http_port=server.ports["http"], ilp_port=server.ports["ilp"],
                                       pg_port=server.ports["pg"], server_metrics_port=server.ports["min"]).plan(source)
             for name, server in servers.items()}
    parameters = _parameters(options, bench, all_cells, servers, needed)
    comparison = ComparisonRun("matrix", options.recording(), parameters, out, options.spelling(),
                               kept_note=f" (the cells' roots stay in {options.roots} for their logs)")
    runs = comparison.path.with_suffix("")  # each turn's own run record
    plan = next(iter(plans.values()))
    comparison.say(f"Matrix: {len(all_cells)} cells ({', '.join(servers)}), {options.rounds} rounds after a warm-up, "
                   f"one turn at a time; each turn a bench run of {plan.rows} rows ({wire.traits.name}, "
                   f"{plan.threads} worker(s)); records of the runs in {runs}/")
    with comparison:
        for server in servers.values():
            comparison.hold(server)
        running = _ready_cells(servers, needed, comparison.record, comparison.say)
        compared = comparison.alternate({name: _turn(servers[name], plans[name], runs, comparison.say)
                                         for name in running}, options.rounds, name="cells",
                                        parameters={"charted_figures": list(CHARTED_FIGURES)})
    for server in servers.values():
        server.remove()
    return comparison.finish(cells_table(compared))


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
        build = server.cell.build
        # A release must be the one asked for; another server's version is what it says.
        if build.is_release and features.version != build.version:
            raise RunError(f"cell {name}: the server on port {server.ports['http']} says it is QuestDB "
                           f"{features.version}, not {build.version}")
        missing = features.missing(needed)
        cells_extra[name] = {"features": dataclasses.asdict(features), "ended": None}
        if missing:
            since = "; ".join(f"{feature} needs {SINCE[feature]}" for feature in missing if feature in SINCE)
            why = (f"QuestDB {build.label} has no {' and no '.join(missing)}, which this bench run needs"
                   + (f" ({since})" if since else ""))
            cells_extra[name]["ended"] = why
            say(f"cell {name} ends: {why}; the other cells go on")
            server.stop()
            continue
        cells_extra[name]["rest_cpu_share"] = round(server.measure_rest(), 4)
        running.append(name)
    if not running:
        raise UsageError(f"no cell can run this bench: {'; '.join(extra['ended'] for extra in cells_extra.values())}")
    return running


def _turn(server: CellServer, plan: BenchPlan, runs: Path, say):
    """One cell's measurement of a round: the bench run against its server, the server settled, its cost."""
    def measure(round_number: int) -> Measurement:
        say(f"  round {round_number or 'warm-up'}: {server.cell.name}")
        results = runs / f"{round_number}-{server.cell.slug}.json"
        cpu_before = server.cpu_seconds()
        try:
            record = run_plan(plan.recorded_at(results), io.StringIO())
        except (UsageError, RunError) as exc:
            raise RunError(f"cell {server.cell.name}, round {round_number}: {exc}") from None
        settle_seconds = server.settle()
        server_cpu = server.cpu_seconds() - cpu_before
        peak_rss = server.peak_rss()
        send = record.phases["send"]
        visible = record.validation.time_to_visible_seconds if record.validation is not None else 0.0
        rows = record.validation.visible_rows if record.validation is not None else send.rows
        extra = {"send_seconds": send.seconds, "time_to_visible_seconds": visible, "settle_seconds": settle_seconds,
                 "server_cpu_seconds": server_cpu,
                 "server_cpu_seconds_per_million_rows": server_cpu / (rows / 1e6) if rows else 0.0}
        if peak_rss is not None:
            extra["server_peak_rss_bytes"] = peak_rss
        extra.update(last_rate_figures(record))
        return Measurement(seconds=send.seconds + visible, rows=rows, client_cpu_seconds=send.client_cpu_seconds,
                           extra=extra, run_record=str(results))
    return measure


def _parameters(options: MatrixOptions, bench: BenchOptions, all_cells: list[Cell],
                servers: dict[str, CellServer], needed: list[str]) -> dict:
    return {
        "versions": options.versions.split(), "configs": options.configs.split() or ["as-is"],
        "rounds": options.rounds, "base_port": options.base_port, "needed_features": needed,
        "use_case": bench.use_case, "row_count": bench.row_count, "workers": bench.threads,
        "transport": str(bench.transport), "protocol_version": str(bench.protocol_version),
        "worker_chunk_row_count": bench.worker_chunk_row_count, "exactly_once": bench.exactly_once,
        "cells": [{"name": cell.name, "server": cell.build.label, "version": cell.build.version,
                   "jar": str(cell.build.jar), "config": cell.config,
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
