"""The HTML run report: one self-contained file from one or more results records.

Owns the page: its parts in order (the benchmarks' table and charts, with several records their comparison
and their runs overlaid, then each record's summary and charts) and which charts a record gets. The parts are
drawn by ``summary`` (a run's tables), ``series_charts``, ``open_loop_charts``, ``query_charts``,
``comparison_charts`` and ``profile_section`` (a profiled run's verdict, buckets and flame graphs). Charts are
matplotlib figures, flame graphs drawn SVG, inlined: the file opens from disk with no network and no script. A
record without a time series (older, or sampled with ``--sample-interval 0``) still renders what it has and says
what is missing.
"""

from __future__ import annotations

import html
from pathlib import Path

from harness.errors import UsageError
from harness.output_file import whole_file
from harness.records.benchmark_record import BenchmarkRecord
from harness.records.run_record import RunRecord
from harness.report import query_charts, series_charts
from harness.report.charts import Charts
from harness.report.comparison_charts import comparison_chart
from harness.report.open_loop_charts import open_loop
from harness.report.profile_section import profile_section
from harness.report.summary import run_summary
from harness.report.tables import benchmark_table, comparison_table, record_name

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { padding: 2px 10px; text-align: left; }
tr:nth-child(even) { background: #f4f4f4; } pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
.chart { margin: 1em 0; } .missing { color: #a33; } .failed { color: #a33; font-weight: bold; }
"""


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
    charts = Charts()
    names = [record_name(record) for record in records] + [benchmark.benchmark for benchmark in benchmarks]
    parts = [f"<h1>Run report: {html.escape(', '.join(names))}</h1>"]
    if benchmarks:
        parts.append("<h2>Benchmarks (medians of alternated rounds, ratios to the baseline)</h2>")
        parts.append(f"<pre>{html.escape(benchmark_table(benchmarks))}</pre>")
        for benchmark in benchmarks:
            parts.extend(comparison_chart(charts, benchmark, comparison, figure)
                         for comparison in benchmark.comparisons
                         for figure in comparison.parameters.get("charted_figures", [None]))
    if len(records) > 1:
        parts.append("<h2>Comparison (ratios to the first)</h2>")
        parts.append(f"<pre>{html.escape(comparison_table(records))}</pre>")
        parts.extend(series_charts.overlay(charts, records))
    for record in records:
        parts.append(f"<h2>{html.escape(record_name(record))}</h2>")
        parts.append(run_summary(record))
        parts.extend(_record_charts(charts, record))
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>Run report</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def _record_charts(charts: Charts, record: RunRecord) -> list[str]:
    """A record's charts, in order, and what it lacks said where a chart would be."""
    parts = []
    series = record.timeseries
    if record.clients:
        parts.append(series_charts.client_windows(charts, record))
    elif series is None or len(series.samples) < 2:
        parts.append("<p class=\"missing\">No time series in this record (recorded before schema 2's "
                     "sampling, or with --sample-interval 0): only its totals are shown.</p>")
    else:
        parts.extend(series_charts.throughput(charts, record, series))
        parts.append(series_charts.busy_cores(charts, series))
        parts.append(series_charts.server_wal(charts, series))
    if record.open_loop is not None and record.open_loop.steps:
        parts.extend(open_loop(charts, record.open_loop))
    if record.profile is not None:
        parts.append(profile_section(record))
    if record.kind == "queries":
        parts.append(query_charts.latency(charts, record))
        if record.queries is not None and record.queries.at_rest is not None:
            parts.append(query_charts.under_load_vs_at_rest(charts, record))
    return [part for part in parts if part]
