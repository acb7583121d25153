"""A run's summary as HTML tables: its status, each phase's figures (and a validation's, late arrivals', an
open loop's rate by rate, a read's), the machine and server it ran on, and its parameters."""

from __future__ import annotations

import html

from harness.records.run_record import OpenLoopFigures, RunRecord
from harness.report.tables import MIB


def _table(rows: list[tuple[str, object]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(str(value))}</td></tr>"
                    for key, value in rows)
    return f"<table>{cells}</table>"


def run_summary(record: RunRecord) -> str:
    """The run's status line and its tables: phases, machine and server, parameters (folded)."""
    status = html.escape(record.status)
    status_line = (f"<p>Status: <span class=\"failed\">{status}</span>: {html.escape(record.error or '')}</p>"
                   if record.status != "ok" else f"<p>Status: {status}</p>")
    phases = [(name, f"{phase.rows} rows in {phase.seconds:.2f} s: {phase.rows_per_second / 1e6:.3f} M rows/s, "
                     f"{phase.mib_per_second:.1f} MiB/s"
                     + (f", client {phase.client_cpu_cores:.2f} cores busy" if phase.client_cpu_cores is not None
                        else ""))
              for name, phase in record.phases.items()]
    validation = record.validation
    if validation is not None:
        phases.append(("validation", f"{validation.visible_rows} of {validation.expected_rows} rows visible, "
                                     f"{validation.time_to_visible_seconds:.2f} s after the last write"))
        phases.extend((f"  table {table}", f"{count.visible} of {count.expected} rows visible")
                      for table, count in validation.tables.items())
    if record.shows_arrival:
        phases.extend((f"  arrived late in {table}", f"{figures.late_rows} of {figures.rows} rows "
                                                     f"({figures.late_share:.2%}), up to {figures.max_late_seconds:g} s")
                      for table, figures in (record.arrival or {}).items())
        series = record.timeseries
        o3 = series.server_increase("o3_commits") if series else None
        disk = series.disk_rows_per_applied_row() if series else None
        if o3 is not None:
            phases.append(("  server, out of order", f"{o3:.0f} O3 commits"
                           + (f", {disk:.2f} rows written to disk per row applied" if disk is not None else "")))
    if record.open_loop is not None:
        phases.extend(_open_loop_rows(record.open_loop))
    read = record.read
    if read is not None:
        phase = record.phases.get("read")
        cpu = phase.client_cpu_seconds if phase else None
        phases.append(("read figures", f"{read.path()}, {read.workers} worker(s), chunks of {read.chunk_rows} rows; "
                                       f"first rows after {read.first_rows_seconds or 0:.3f} s; peak RSS "
                                       f"{read.peak_rss_bytes / MIB:.0f} MiB"
                                       + (f"; client CPU {cpu / phase.rows * 1e6:.3f} s per million rows"
                                          if cpu is not None and phase.rows else "")))
        if read.checked_rows is not None:
            phases.append(("check", read.check_error or f"all {read.checked_rows} rows equal the data set"))
    system = record.system or {}
    machine = [(key, system[key]) for key in ("cpu_model", "cpu_count", "cpu_affinity", "memory_total_bytes",
                                              "kernel", "hostname", "date_utc") if key in system]
    server = list((record.server or {}).items())
    parameters = sorted((record.parameters or {}).items())
    return "\n".join([
        status_line,
        f"<p>{html.escape(record.kind)} run {html.escape(record.run_id)}, {html.escape(record.mode)}, started "
        f"{html.escape(record.started_at)}, harness {html.escape(record.harness_version)}, schema version "
        f"{record.schema_version}</p>",
        "<h3>Phases</h3>", _table(phases) if phases else "<p class=\"missing\">No phase finished.</p>",
        "<h3>Machine and server</h3>", _table(machine + server),
        "<details><summary>Parameters</summary>", _table(parameters), "</details>",
    ])


def _percentiles(summary) -> str:
    if summary is None or not summary.count:
        return "no samples"
    return ", ".join(f"{name} {summary.figure(name) * 1e3:.1f} ms" for name in ("p50", "p90", "p99", "p999", "max")
                     ) + f" ({summary.count})"


def _open_loop_rows(figures: OpenLoopFigures) -> list[tuple[str, str]]:
    """The open loop's figures, rate by rate, for the summary table."""
    rows = []
    for step in figures.steps:
        achieved = step.achieved_rows_per_second or 0
        rows.append((f"open loop at {step.target_rows_per_second:,.0f} rows/s",
                     f"{achieved:,.0f} rows/s achieved, {'sustained' if step.sustained else 'NOT sustained'}; "
                     f"{step.late_chunks} of {step.chunks} chunks late; backlog at most {step.max_backlog_rows} rows"
                     + (f"; {step.unsent_rows} rows never sent (the schedule ended)" if step.unsent_rows else "")))
        rows.extend((f"  {name}", _percentiles(summary)) for name, summary in (
            ("schedule delay", step.schedule_delay), ("acknowledged", step.acknowledged),
            ("acknowledged, from the send", step.acknowledged_from_send),
            ("freshness", step.freshness)) if summary is not None)
        if step.source_behind is not None and step.source_behind.count:
            rows.append(("  source behind (the client's making, not the server)", _percentiles(step.source_behind)))
    if figures.chunks_ahead is not None:
        rows.append(("  chunks", figures.chunks_ahead.text()))
    if figures.probe is not None:
        rows.append(("  freshness probe", f"every {figures.probe.interval_seconds * 1e3:g} ms: {figures.probe.queries} "
                                          f"counts ({figures.probe.queries_per_second:g}/s), {figures.probe.failures} "
                                          f"failed"))
    if figures.closed_loop_rows_per_second is not None:
        knee = figures.knee_rows_per_second
        if figures.searches and figures.knee_spread() is not None:
            rows.append((f"knee (median of {len(figures.searches)} searches to {figures.search_resolution:.0%})",
                         f"{knee:,.0f} rows/s; {figures.knee_spread_text()}"))
        else:
            rows.append(("knee", f"{knee:,.0f} rows/s" if knee is not None else "no rate held"))
        rows.append(("closed loop (same run)", f"{figures.closed_loop_rows_per_second:,.0f} rows/s"
                     + (" (median)" if figures.searches else "")))
        if figures.ratio_spread() is not None:
            rows.append(("knee over the closed loop", figures.ratio_text()))
    if figures.queries is not None:
        rows.append((f"queries beside ({figures.queries.rate:g}/s)", _percentiles(figures.queries.latency)))
    rows.extend((f"threshold {outcome.expression}", "passed" if outcome.passed else "FAILED")
                for outcome in figures.thresholds)
    return rows
