"""Charts of a query run: the latency of each query type (median, p90, p99), and with ``--queries-only-after``
each type's latency under the ingest's load beside its latency at rest."""

from __future__ import annotations

from harness.records.run_record import RunRecord
from harness.report.charts import Charts, new_figure

# Query-run statistics drawn per type, when the record has them (milliseconds).
LATENCY_KEYS = (("median_ms", "median"), ("p90_ms", "p90"), ("p99_ms", "p99"))


def latency(charts: Charts, record: RunRecord) -> str:
    types = record.queries.statistics if record.queries is not None else {}
    if not types:
        return "<p class=\"missing\">No query statistics in this record.</p>"
    figure, (ax,) = new_figure("query latency per type", "ms")
    names = list(types)
    _grouped_bars(ax, names, [(label, [getattr(types[name], key) for name in names]) for key, label in LATENCY_KEYS])
    return charts.svg(figure, "query latency")


def under_load_vs_at_rest(charts: Charts, record: RunRecord) -> str:
    """Each type's median and p99 while the ingest ran beside the queries and in the baseline after it."""
    loaded, rest = record.queries.statistics, record.queries.at_rest.statistics
    names = [name for name in loaded if name in rest]
    figure, (ax,) = new_figure("query latency under ingest load and at rest (--queries-only-after)", "ms")
    _grouped_bars(ax, names, [(f"{label} {when}", [getattr(statistics[name], key) for name in names])
                              for statistics, when in ((loaded, "under load"), (rest, "at rest"))
                              for key, label in (("median_ms", "median"), ("p99_ms", "p99"))])
    return charts.svg(figure, "query latency under load and at rest")


def _grouped_bars(ax, names: list[str], bars: list[tuple[str, list[float]]]) -> None:
    """One group of bars per name (a query type), one bar per labelled series in each, a legend."""
    width = 0.8 / len(bars)
    for offset, (label, values) in enumerate(bars):
        ax.bar([index + offset * width for index in range(len(names))], values, width, label=label)
    ax.set_xticks([index + 0.4 - width / 2 for index in range(len(names))], names, rotation=45, ha="right")
    ax.legend(loc="upper left")
