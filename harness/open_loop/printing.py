"""What an open loop prints: each rate's figures when it is over (``say_step``), a ramp's or a search's table and
its knee (``say_ramp``), latencies in one line (``latency_line``)."""

from __future__ import annotations

from collections.abc import Callable

from harness.open_loop.knee import held
from harness.records.run_record import OpenLoopFigures, ProbeFigures, RateStep
from harness.telemetry.latency import LatencySummary


def say_step(say: Callable[[str], None], step: RateStep, probe: ProbeFigures | None) -> None:
    sustained = "sustained" if step.sustained else "NOT sustained"
    achieved = f"{step.achieved_rows_per_second:,.0f}" if step.achieved_rows_per_second is not None else "no"
    unsent = f"; {step.unsent_rows} rows never sent (the schedule ended)" if step.unsent_rows else ""
    say(f"Open loop at {step.target_rows_per_second:,.0f} rows/s: {achieved} rows/s achieved ({sustained}); "
        f"{step.late_chunks} of {step.chunks} chunks late; backlog at most {step.max_backlog_rows} rows{unsent}.")
    for name, summary in (("schedule delay", step.schedule_delay), ("acknowledged", step.acknowledged),
                          ("ack from send", step.acknowledged_from_send), ("freshness", step.freshness)):
        if summary is not None:
            say(f"  {name + ':':16}{latency_line(summary)}")
    if step.source_behind is not None and step.source_behind.count:
        say(f"  source behind:  {latency_line(step.source_behind)} came after their intended time from the "
            f"source (the client's making, not the server; their latencies count from when they came)")
    if probe is not None:
        unseen = f"; {step.unseen_chunks} chunks never seen" if step.unseen_chunks else ""
        failures = f"; {probe.failures} failed ({probe.last_error})" if probe.failures else ""
        say(f"  probe: {probe.queries} counts ({probe.queries_per_second:g}/s, {probe.tables} table(s) each)"
            f"{failures}{unseen}")


def latency_line(summary: LatencySummary) -> str:
    """``p50 12.3 ms  p90 ...  max ...  (N)`` from each chunk's intended time."""
    if not summary.count:
        return "no samples"
    figures = "  ".join(f"{name} {_ms(summary.figure(name))}" for name in ("p50", "p90", "p99", "p999", "max"))
    return f"{figures}  ({summary.count} chunks)"


def rate_text(rate: float | None) -> str:
    return f"{rate:,.0f} rows/s" if rate else "none"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


def say_ramp(say: Callable[[str], None], figures: OpenLoopFigures) -> None:
    """The ramp's table, rate by rate (a search's every probe, in the order held), and its knee beside the
    closed-loop rate; a search's median knee with its spread."""
    searched = bool(figures.searches)
    say(f"{'Search probes' if searched else 'Ramp'}:\n  {'search  ' if searched else ''}rows/s target   "
        f"achieved   held   freshness p50   p99   backlog max")
    for step in figures.steps:
        freshness = step.freshness
        p50, p99 = ((_ms(freshness.p50), _ms(freshness.p99)) if freshness is not None and freshness.count
                    else ("-", "-"))
        achieved = f"{step.achieved_rows_per_second:,.0f}" if step.achieved_rows_per_second else "-"
        search = f"{step.search or '-':>6}  " if searched else ""
        say(f"  {search}{step.target_rows_per_second:>13,.0f}  {achieved:>9}   "
            f"{'yes' if held(step, figures.slo_seconds) else 'no ':4} {p50:>14}  {p99:>9}  "
            f"{step.max_backlog_rows:>10}")
    say(_knee_line(figures))


def _knee_line(figures: OpenLoopFigures) -> str:
    """The knee beside the closed-loop rate (a search's: their medians, with the knees' spread)."""
    closed = figures.closed_loop_rows_per_second
    closed_text = f"{closed:,.0f} rows/s" if closed else "unknown"
    if closed and figures.closed_loop_visible_seconds is not None:
        closed_text += f" (its rows visible {figures.closed_loop_visible_seconds:.2f}s after its last flush)"
    held_by = f"freshness p99 under {figures.slo_seconds:g}s, sustained"
    if figures.searches:
        if figures.knee_spread() is None:
            return f"Knee: no rate was held ({held_by}) in {len(figures.searches)} search(es)"
        ratio = f"; knee over the closed loop {figures.ratio_text()}" if figures.ratio_spread() else ""
        return (f"Knee: {figures.knee_rows_per_second:,.0f} rows/s, the median of {len(figures.searches)} "
                f"search(es) to {figures.search_resolution:.0%} ({held_by}): {figures.knee_spread_text()}; "
                f"closed loop median {closed_text}{ratio}")
    if figures.knee_rows_per_second is None:
        return f"Knee: no rate was held ({held_by}); closed loop {closed_text}"
    ratio = f" ({figures.knee_rows_per_second / closed:.2f}x of it)" if closed else ""
    return f"Knee: {figures.knee_rows_per_second:,.0f} rows/s ({held_by}){ratio}; closed loop {closed_text}"
