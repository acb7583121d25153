"""The HTML run report: one self-contained file from one or more results records.

Owns the presentation of a record: parameters and machine, each phase's figures, and charts of its time
series (rows/s and MiB/s per phase, in total and per worker; the client's busy cores; the server's WAL
written and applied rows/s and its apply lag), the latency of query runs per type, and with several records
the runs overlaid plus the ``compare`` table, and a profiled run's verdict, buckets and flame graphs. Charts are
matplotlib figures, flame graphs drawn SVG, inlined: the file opens from disk with no network and no script. A record without a time series (older, or sampled with
``--sample-interval 0``) still renders what it has and says what is missing.
"""

from __future__ import annotations

import html
import io
from collections.abc import Iterator
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from harness.errors import UsageError
from harness.output_file import whole_file
from harness.records.benchmark_record import BenchmarkRecord
from harness.records.run_record import OpenLoopFigures, RateStep, RunRecord
from harness.report.flamegraph import flame_graph
from harness.report.tables import MIB, benchmark_table, comparison_table
from harness.telemetry.stack_buckets import CLIENT_BUCKETS, SERVER_BUCKETS
from harness.telemetry.stacks import merged, read_collapsed
from harness.telemetry.timeseries import TimeSeries

# Query-run statistics drawn per type, when the record has them (milliseconds).
LATENCY_KEYS = (("median_ms", "median"), ("p90_ms", "p90"), ("p99_ms", "p99"))

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { padding: 2px 10px; text-align: left; }
tr:nth-child(even) { background: #f4f4f4; } pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
.chart { margin: 1em 0; } .missing { color: #a33; } .failed { color: #a33; font-weight: bold; }
"""


# How a comparison's chart shows a figure: (divisor, unit); any other figure as it is, under its own name.
_CHART_UNITS = {
    "rows_per_second": (1e6, "M rows/s"),
    "seconds": (1.0, "seconds"),
    "time_to_visible_seconds": (1.0, "seconds to visible"),
    "server_cpu_seconds_per_million_rows": (1.0, "server CPU s per million rows"),
    "server_peak_rss_bytes": (2**20, "server peak RSS MiB"),
    "client_cpu_seconds": (1.0, "client CPU seconds"),
    "server_cpu_seconds": (1.0, "server CPU seconds"),
    "visible_wait_seconds": (1.0, "seconds from the last write to visible"),
}


def write_report(records: list[RunRecord], output: str | Path,
                 benchmarks: list[BenchmarkRecord] = ()) -> Path:
    """Render ``records`` (the first is the baseline) and the ``benchmarks``' medians and ratios into the HTML
    file ``output``."""
    if not records and not benchmarks:
        raise UsageError("report: no results files given")
    target = Path(output)
    document = render(records, benchmarks)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {target}: {exc.strerror or exc}") from None
    with whole_file(target, "the report", "w") as out:
        out.write(document)
    return target


def render(records: list[RunRecord], benchmarks: list[BenchmarkRecord] = ()) -> str:
    charts = _Charts()
    names = [_name(record) for record in records] + [benchmark.benchmark for benchmark in benchmarks]
    parts = [f"<h1>Run report: {html.escape(', '.join(names))}</h1>"]
    if benchmarks:
        parts.append("<h2>Benchmarks (medians of alternated rounds, ratios to the baseline)</h2>")
        parts.append(f"<pre>{html.escape(benchmark_table(benchmarks))}</pre>")
        for benchmark in benchmarks:
            parts.extend(charts.comparison(benchmark, comparison, figure) for comparison in benchmark.comparisons
                         for figure in comparison.parameters.get("charted_figures", [None]))
    if len(records) > 1:
        parts.append("<h2>Comparison (ratios to the first)</h2>")
        parts.append(f"<pre>{html.escape(comparison_table(records))}</pre>")
        parts.extend(charts.overlay(records))
    for record in records:
        parts.append(f"<h2>{html.escape(_name(record))}</h2>")
        parts.append(_summary(record))
        parts.extend(charts.run(record))
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>Run report</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def _name(record: RunRecord) -> str:
    return record.path.name if record.path else record.run_id


def _table(rows: list[tuple[str, object]]) -> str:
    cells = "".join(f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(str(value))}</td></tr>"
                    for key, value in rows)
    return f"<table>{cells}</table>"


def _summary(record: RunRecord) -> str:
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
        phases.append(("read figures", f"{read.protocol}, {read.workers} worker(s), chunks of {read.chunk_rows} rows; "
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


def _profile(record: RunRecord) -> str:
    """``--profile``'s part: the verdict, each side's buckets (overall and per phase), top frames and flame graph
    (drawn from the collapsed stacks beside the record)."""
    figures = record.profile
    parts = ["<h3>Profile</h3>", f"<p><b>Verdict</b>: {html.escape(figures.verdict)}</p>"]
    if figures.server_not_profiled:
        parts.append(f"<p>QuestDB not profiled: {html.escape(figures.server_not_profiled)}</p>")
    folder = record.path.parent / figures.folder if record.path is not None and figures.folder else None
    for name, side, buckets in (("client", figures.client, CLIENT_BUCKETS), ("QuestDB", figures.server, SERVER_BUCKETS)):
        if side is None:
            continue
        phases = list(side.phases)
        header = "".join(f"<th>{html.escape(phase)}</th>" for phase in ["bucket", "all", *phases])
        rows = []
        for bucket, count in side.buckets.items():
            cells = [_share(count, side.samples)] + [_share(side.phases[phase].get(bucket, 0),
                                                            sum(side.phases[phase].values())) for phase in phases]
            rows.append(f"<tr><th>{html.escape(bucket)}</th>{''.join(f'<td>{cell}</td>' for cell in cells)}</tr>")
        cpus = f", {side.cpus:.2f} CPUs busy" if side.cpus is not None else ""
        cpus += f" (the profiler itself {side.profiler_cpus:.2f})" if side.profiler_cpus is not None else ""
        cpus += f", {side.samples / side.seconds:.0f} samples/s over {side.seconds:.1f} s" if side.seconds else ""
        parts.append(f"<h4>{name}: {html.escape(side.profiler)}, {html.escape(side.mode)}, {side.rate_hz} Hz, "
                     f"{side.samples} samples{cpus}</h4>")
        if side.missing:
            parts.append(f"<p class=\"missing\">Missing: {html.escape(side.missing)}</p>")
        parts.append(f"<table><tr>{header}</tr>{''.join(rows)}</table>")
        top = "".join(f"<tr><td>{html.escape(str(frame))}</td><td>{_share(count, side.samples)}</td></tr>"
                      for frame, count in side.top_frames[:10])
        parts.append(f"<details><summary>Top frames (samples of their own)</summary><table>{top}</table></details>")
        stacks = [folder / file for what, file in side.files.items() if what.startswith("collapsed ")] \
            if folder is not None else []
        present = [path for path in stacks if path.exists()]
        if stacks and len(present) == len(stacks):
            parts.append(flame_graph(merged(read_collapsed(path) for path in present), f"{name}, all phases",
                                     buckets))
        elif side.files:
            parts.append(f"<p class=\"missing\">The {name}'s stacks are not beside this record "
                         f"({html.escape(str(folder))}): no flame graph.</p>")
    return "\n".join(parts)


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "-"


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


def _one_after_another(steps: list[RateStep]) -> Iterator[tuple[float, RateStep]]:
    """Each rate's step with the seconds its series start at on one time axis: a ramp's rates one after
    another, each as long as its backlog's samples ran."""
    offset = 0.0
    for step in steps:
        yield offset, step
        offset += max((t for t, _ in step.backlog), default=0.0)


def _rates(series: TimeSeries, phase: str, counts: str) -> tuple[list[float], list[float], list[list[float]]]:
    """Times, the phase's total rate and each worker's rate between consecutive samples (``counts``: rows
    or bytes). A count that fell started again from zero (a ramp's next rate), as Prometheus reads a counter
    reset."""
    times, totals, per_worker = [], [], []
    previous = None
    for sample in series.samples:
        values = getattr(sample, counts).get(phase)
        if values is None:
            continue
        if previous is not None and sample.t > previous[0]:
            span = sample.t - previous[0]
            old = previous[1] + [0] * (len(values) - len(previous[1]))
            rates = [(new - before if new >= before else new) / span for new, before in zip(values, old)]
            times.append(sample.t)
            totals.append(sum(rates))
            per_worker.append(rates)
        previous = (sample.t, values)
    # The phase's own span: from the step before its first rows to the step after its last.
    active = [index for index, total in enumerate(totals) if total > 0]
    if not active:
        return [], [], []
    span = slice(max(active[0] - 1, 0), active[-1] + 2)
    return times[span], totals[span], per_worker[span]


def _grouped_bars(ax, names: list[str], bars: list[tuple[str, list[float]]]) -> None:
    """One group of bars per name (a query type), one bar per labelled series in each, a legend."""
    width = 0.8 / len(bars)
    for offset, (label, values) in enumerate(bars):
        ax.bar([index + offset * width for index in range(len(names))], values, width, label=label)
    ax.set_xticks([index + 0.4 - width / 2 for index in range(len(names))], names, rotation=45, ha="right")
    ax.legend(loc="upper left")


def _differences(series: TimeSeries, value) -> tuple[list[float], list[float]]:
    """Times and the per-second change of ``value(sample)`` (None where a sample lacks it)."""
    times, rates, previous = [], [], None
    for sample in series.samples:
        current = value(sample)
        if current is None:
            continue
        if previous is not None and sample.t > previous[0]:
            times.append(sample.t)
            rates.append((current - previous[1]) / (sample.t - previous[0]))
        previous = (sample.t, current)
    return times, rates


class _Charts:
    """Makes the figures, each a separate inline SVG (their element ids salted apart)."""

    def __init__(self):
        self.count = 0

    def _svg(self, figure: Figure, title: str) -> str:
        self.count += 1
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.hashsalt": f"chart-{self.count}", "svg.fonttype": "none"}):
            figure.savefig(buffer, format="svg", bbox_inches="tight")
        svg = buffer.getvalue()
        svg = svg[svg.index("<svg"):]
        return f"<div class=\"chart\" title=\"{html.escape(title)}\">{svg}</div>"

    @staticmethod
    def _figure(title: str, ylabel: str, rows: int = 1) -> tuple[Figure, list]:
        figure = Figure(figsize=(10, 3.2 * rows), layout="constrained")
        axes = figure.subplots(rows, 1, squeeze=False)[:, 0].tolist()
        axes[0].set_title(title)
        for ax in axes:
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
        axes[-1].set_xlabel("seconds since the run started")
        return figure, axes

    def run(self, record: RunRecord) -> list[str]:
        parts = []
        series = record.timeseries
        if record.clients:
            parts.append(self._clients(record))
        elif series is None or len(series.samples) < 2:
            parts.append("<p class=\"missing\">No time series in this record (recorded before schema 2's "
                         "sampling, or with --sample-interval 0): only its totals are shown.</p>")
        else:
            parts.extend(self._throughput(record, series))
            parts.append(self._cores(series))
            parts.append(self._server(series))
        if record.open_loop is not None and record.open_loop.steps:
            parts.extend(self._open_loop(record.open_loop))
        if record.profile is not None:
            parts.append(_profile(record))
        if record.kind == "queries":
            parts.append(self._latency(record))
            if record.queries is not None and record.queries.at_rest is not None:
                parts.append(self._under_load_vs_at_rest(record))
        return [part for part in parts if part]

    def _throughput(self, record: RunRecord, series: TimeSeries) -> list[str]:
        charts = []
        for counts, unit, scale in (("rows", "M rows/s", 1e6), ("bytes", "MiB/s", MIB)):
            figure, (ax,) = self._figure(f"{counts} per second, per phase (thin: per worker)", unit)
            drawn = False
            for phase in record.phases or {name for sample in series.samples for name in sample.rows}:
                times, totals, per_worker = _rates(series, phase, counts)
                if not times:
                    continue
                line, = ax.plot(times, [value / scale for value in totals], label=f"{phase} (total)", linewidth=2)
                workers = len(per_worker[-1])
                if workers > 1:
                    for worker in range(workers):
                        ax.plot(times, [rates[worker] / scale if worker < len(rates) else 0 for rates in per_worker],
                                color=line.get_color(), linewidth=0.7, alpha=0.6)
                drawn = True
            if drawn:
                ax.legend(loc="upper right")
                charts.append(self._svg(figure, f"{counts} per second"))
        return charts

    def _cores(self, series: TimeSeries) -> str:
        times, cores = _differences(series, lambda sample: sample.client_cpu_seconds)
        server_times, server_cores = _differences(series, lambda sample: sample.server_cpu_seconds)
        who = "client and server" if server_times else "client"
        figure, (ax,) = self._figure(f"{who}: busy cores (CPU-seconds per second)", "cores")
        ax.plot(times, cores, label="client process")
        if server_times:  # the side pinned at its cores is the bottleneck
            ax.plot(server_times, server_cores, label="QuestDB server process")
        ax.legend(loc="upper right")
        return self._svg(figure, f"{who} busy cores")

    def _clients(self, record: RunRecord) -> str:
        """A merged scale-out run: each client's send window on one time axis, and its rate. (Each client's
        own time series is in its own record.)"""
        clients = [client for client in record.clients if client.started_at is not None]
        if not clients:
            return "<p class=\"missing\">No client recorded a send window.</p>"
        origin = min(client.started_at for client in clients)
        figure, (windows, rates) = self._figure("clients: send windows and rates", "client", rows=2)
        for client in clients:
            windows.barh(client.client, client.ended_at - client.started_at, left=client.started_at - origin)
        windows.set_xlabel("seconds since the first client started sending")
        windows.set_yticks([client.client for client in clients])
        rates.bar([str(client.client) for client in clients],
                  [(client.rows_per_second or 0) / 1e6 for client in clients])
        rates.set_ylabel("M rows/s")
        rates.set_xlabel("client (its interleaved group)")
        return self._svg(figure, "clients")

    def _server(self, series: TimeSeries) -> str:
        def server(key):
            return lambda sample: (sample.server or {}).get(key)

        written = _differences(series, server("wal_written_rows"))
        applied = _differences(series, server("wal_applied_rows"))
        if not written[0]:
            reason = series.server_error or "the run sampled no server (the sink, or no --server-metrics-port)"
            return f"<p class=\"missing\">No server series: {html.escape(reason)}</p>"
        figure, (rates, lag) = self._figure("server: WAL rows written and applied per second", "M rows/s", rows=2)
        rates.plot(written[0], [value / 1e6 for value in written[1]], label="written to the WAL")
        rates.plot(applied[0], [value / 1e6 for value in applied[1]], label="applied to tables")
        rates.legend(loc="upper right")
        points = series.transactions_behind()
        lag.plot([t for t, _ in points], [value for _, value in points], color="tab:red")
        lag.set_ylabel("apply lag (txns)")
        lag.set_title("WAL apply lag: sequencer txn minus writer txn")
        return self._svg(figure, "server WAL")

    def _open_loop(self, figures: OpenLoopFigures) -> list[str]:
        """An open loop: each chunk's latency and the backlog over time (a ramp's rates one after another, on
        one time axis), and for a ramp its latency percentiles against the rate."""
        figure, (latency, backlog) = self._figure("open loop: each chunk's latency from its intended time",
                                                  "seconds", rows=2)
        for index, (offset, step) in enumerate(_one_after_another(figures.steps)):
            label = f" at {step.target_rows_per_second:,.0f} rows/s" if len(figures.steps) > 1 else ""
            for name, points, marker in (("freshness", step.freshness_series, "o"),
                                         ("acknowledged", step.acknowledged_series, "x")):
                if points:
                    latency.plot([offset + t for t, _ in points], [value for _, value in points], marker,
                                 markersize=3, linestyle="none", label=f"{name}{label}" if index == 0 or label else None,
                                 color="tab:blue" if name == "freshness" else "tab:orange", alpha=0.7)
            if step.backlog:
                backlog.plot([offset + t for t, _ in step.backlog], [rows for _, rows in step.backlog],
                             color="tab:red")
                if len(figures.steps) > 1:
                    backlog.axvline(offset, color="gray", linewidth=0.5)
        if figures.slo_seconds is not None:
            latency.axhline(figures.slo_seconds, color="gray", linestyle="--", label=f"SLO {figures.slo_seconds:g}s")
        latency.legend(loc="upper left")
        backlog.set_ylabel("backlog (rows)")
        backlog.set_title("rows due that have not gone out")
        charts = [self._svg(figure, "open loop latency and backlog")]
        if any(step.acknowledged_from_send_series for step in figures.steps):
            charts.append(self._coordinated_omission(figures))
        if len(figures.steps) > 1:
            figure, (ax,) = self._figure("latency against rate (the ramp)", "seconds")
            # A search's probes in rate order, as points (its repetitions probe the same rates more than once).
            steps = sorted(figures.steps, key=lambda step: step.target_rows_per_second) if figures.searches \
                else figures.steps
            rates = [step.target_rows_per_second for step in steps]
            for name in ("freshness", "acknowledged"):
                for quantile, style in (("p50", "-o"), ("p99", "--o")):
                    values = [getattr(step, name).figure(quantile) if getattr(step, name) is not None
                              and getattr(step, name).count else None for step in steps]
                    if any(value is not None for value in values):
                        ax.plot(rates, values, style[-1] if figures.searches else style, label=f"{name} {quantile}")
            if figures.knee_rows_per_second is not None:
                ax.axvline(figures.knee_rows_per_second, color="green", label="knee")
            if figures.slo_seconds is not None:
                ax.axhline(figures.slo_seconds, color="gray", linestyle="--", label="SLO")
            ax.set_xlabel("target rate (rows/s)")
            ax.legend(loc="upper left")
            charts.append(self._svg(figure, "latency against rate"))
        return charts

    def _coordinated_omission(self, figures: OpenLoopFigures) -> str:
        """Each chunk's acknowledgement latency twice on one axis: from its intended time (the open loop's) and
        from when its send began (a closed-loop tool's), so a stall shows in the chunks it delayed or hides."""
        figure, (ax,) = self._figure("what coordinated omission hides: acknowledgement latency, two ways", "seconds")
        for index, (offset, step) in enumerate(_one_after_another(figures.steps)):
            for points, label, color in ((step.acknowledged_series, "from the intended time (open loop)", "tab:orange"),
                                         (step.acknowledged_from_send_series,
                                          "from the send (what a closed-loop tool reports)", "tab:green")):
                if points:
                    ax.plot([offset + t for t, _ in points], [value for _, value in points], "o", markersize=3,
                            linestyle="none", color=color, alpha=0.7, label=label if index == 0 else None)
        ax.set_xlabel("intended time (s since the schedule's start)")
        ax.legend(loc="upper left")
        return self._svg(figure, "coordinated omission")

    def _latency(self, record: RunRecord) -> str:
        types = record.queries.statistics if record.queries is not None else {}
        if not types:
            return "<p class=\"missing\">No query statistics in this record.</p>"
        figure, (ax,) = self._figure("query latency per type", "ms")
        names = list(types)
        _grouped_bars(ax, names, [(label, [getattr(types[name], key) for name in names]) for key, label in LATENCY_KEYS])
        return self._svg(figure, "query latency")

    def _under_load_vs_at_rest(self, record: RunRecord) -> str:
        """Each type's median and p99 while the ingest ran beside the queries and in the baseline after it."""
        loaded, rest = record.queries.statistics, record.queries.at_rest.statistics
        names = [name for name in loaded if name in rest]
        figure, (ax,) = self._figure("query latency under ingest load and at rest (--queries-only-after)", "ms")
        _grouped_bars(ax, names, [(f"{label} {when}", [getattr(statistics[name], key) for name in names])
                                  for statistics, when in ((loaded, "under load"), (rest, "at rest"))
                                  for key, label in (("median_ms", "median"), ("p99_ms", "p99"))])
        return self._svg(figure, "query latency under load and at rest")

    def comparison(self, record: BenchmarkRecord, comparison, figure_name: str | None = None) -> str:
        """The variants of one comparison side by side in one figure (``figure_name``; default: rows/s, else
        seconds): each one's median over the counted rounds, and its paired interval against the baseline drawn
        on the baseline's median (a bar whose whiskers clear the baseline's line stands apart from it beyond the
        rounds' noise)."""
        if figure_name is None:
            figure_name = "rows_per_second" if any("rows_per_second" in figures
                                                   for figures in comparison.summary.values()) else "seconds"
        scale, unit = _CHART_UNITS.get(figure_name, (1.0, figure_name.replace("_", " ")))
        variants = [variant for variant in comparison.variants if figure_name in comparison.summary.get(variant, {})]
        if not variants:
            return ""
        base = comparison.summary.get(comparison.baseline, {}).get(figure_name)
        medians, lows, highs = [], [], []
        for variant in variants:
            summary = comparison.summary[variant][figure_name]
            medians.append(summary.median / scale)
            if base is not None and summary.paired_low is not None and variant != comparison.baseline:
                centre = summary.paired_ratio * base.median / scale
                lows.append(max(centre - summary.paired_low * base.median / scale, 0.0))
                highs.append(max(summary.paired_high * base.median / scale - centre, 0.0))
            else:
                lows.append(0.0)
                highs.append(0.0)
        figure = Figure(figsize=(10, 0.45 * len(variants) + 1.4), layout="constrained")
        ax = figure.subplots()
        positions = list(range(len(variants)))
        centres = [summary_ratio * base.median / scale if base is not None and summary_ratio is not None else median
                   for summary_ratio, median in ((comparison.summary[variant][figure_name].paired_ratio, median)
                                                 for variant, median in zip(variants, medians))]
        ax.barh(positions, medians, color=["#888" if variant == comparison.baseline else "#4878a8"
                                           for variant in variants])
        ax.errorbar(centres, positions, xerr=[lows, highs], fmt="none", ecolor="#222", capsize=4)
        if base is not None:
            ax.axvline(base.median / scale, color="#888", linestyle="--", linewidth=1)
        ax.set_yticks(positions, variants)
        ax.invert_yaxis()
        ax.set_xlabel(f"{unit}: median over {len(comparison.counted_rounds())} rounds; whiskers: the paired "
                      f"interval against {comparison.baseline}")
        ax.set_title(f"{record.benchmark}: {comparison.name or 'variants'}, {unit}")
        ax.grid(True, axis="x", alpha=0.3)
        return self._svg(figure, f"{record.benchmark} {comparison.name} {figure_name}")

    def overlay(self, records: list[RunRecord]) -> list[str]:
        with_series = [record for record in records if record.timeseries and len(record.timeseries.samples) > 1]
        if len(with_series) < 2:
            return []
        figure, (ax,) = self._figure("runs overlaid: rows per second of each run's send (else serialize) phase",
                                     "M rows/s")
        for record in with_series:
            phase = "send" if "send" in record.phases else next(iter(record.phases), None)
            if phase is None:
                continue
            times, totals, _ = _rates(record.timeseries, phase, "rows")
            ax.plot(times, [value / 1e6 for value in totals], label=f"{_name(record)} ({phase})")
        ax.legend(loc="upper right")
        return [self._svg(figure, "runs overlaid")]
