"""Charts of a benchmark record's comparisons: for each compared figure, every variant's median over the
counted rounds, with its paired interval against the baseline."""

from __future__ import annotations

from matplotlib.figure import Figure

from harness.records.benchmark_record import BenchmarkRecord
from harness.report.charts import Charts

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


def comparison_chart(charts: Charts, record: BenchmarkRecord, comparison, figure_name: str | None = None) -> str:
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
    return charts.svg(figure, f"{record.benchmark} {comparison.name} {figure_name}")
