"""Charts of an open-loop run: each chunk's latency from its intended time and the backlog over time (a ramp's
rates one after another on one time axis), the acknowledgement latency measured two ways (what coordinated
omission hides), and for a ramp its latency percentiles against the rate."""

from __future__ import annotations

from collections.abc import Iterator

from harness.records.run_record import OpenLoopFigures, RateStep
from harness.report.charts import Charts, new_figure


def open_loop(charts: Charts, figures: OpenLoopFigures) -> list[str]:
    """An open loop: each chunk's latency and the backlog over time (a ramp's rates one after another, on
    one time axis), and for a ramp its latency percentiles against the rate."""
    figure, (latency, backlog) = new_figure("open loop: each chunk's latency from its intended time", "seconds",
                                            rows=2)
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
    result = [charts.svg(figure, "open loop latency and backlog")]
    if any(step.acknowledged_from_send_series for step in figures.steps):
        result.append(_coordinated_omission(charts, figures))
    if len(figures.steps) > 1:
        result.append(_latency_against_rate(charts, figures))
    return result


def _coordinated_omission(charts: Charts, figures: OpenLoopFigures) -> str:
    """Each chunk's acknowledgement latency twice on one axis: from its intended time (the open loop's) and
    from when its send began (a closed-loop tool's), so a stall shows in the chunks it delayed or hides."""
    figure, (ax,) = new_figure("what coordinated omission hides: acknowledgement latency, two ways", "seconds")
    for index, (offset, step) in enumerate(_one_after_another(figures.steps)):
        for points, label, color in ((step.acknowledged_series, "from the intended time (open loop)", "tab:orange"),
                                     (step.acknowledged_from_send_series,
                                      "from the send (what a closed-loop tool reports)", "tab:green")):
            if points:
                ax.plot([offset + t for t, _ in points], [value for _, value in points], "o", markersize=3,
                        linestyle="none", color=color, alpha=0.7, label=label if index == 0 else None)
    ax.set_xlabel("intended time (s since the schedule's start)")
    ax.legend(loc="upper left")
    return charts.svg(figure, "coordinated omission")


def _latency_against_rate(charts: Charts, figures: OpenLoopFigures) -> str:
    """A ramp's (or a knee search's) freshness and acknowledgement percentiles at each target rate, with the
    knee and the SLO."""
    figure, (ax,) = new_figure("latency against rate (the ramp)", "seconds")
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
    return charts.svg(figure, "latency against rate")


def _one_after_another(steps: list[RateStep]) -> Iterator[tuple[float, RateStep]]:
    """Each rate's step with the seconds its series start at on one time axis: a ramp's rates one after
    another, each as long as its backlog's samples ran."""
    offset = 0.0
    for step in steps:
        yield offset, step
        offset += max((t for t, _ in step.backlog), default=0.0)
