"""An open loop's figures in the record: one rate's, from its schedule and its probe (``rate_step``), the probe's
(``probe_figures``), and the last rate's as a matrix cell keeps them (``last_rate_figures``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.records.run_record import ProbeFigures, RateStep, RunRecord

if TYPE_CHECKING:
    from harness.open_loop.freshness import FreshnessProbe
    from harness.open_loop.schedule import RateSchedule

# A rate counts as sustained when the rows went out at no less than this share of it.
SUSTAINED_SHARE = 0.99


def rate_step(schedule: RateSchedule, probe: FreshnessProbe | None) -> RateStep:
    """The record's figures of one rate."""
    achieved = schedule.achieved_rate()
    return RateStep(
        target_rows_per_second=schedule.rate,
        achieved_rows_per_second=None if achieved is None else round(achieved, 1),
        # Every row out, and at the rate or never a whole chunk behind: the achieved rate ends at the last chunk's
        # start, so a single stall of that one chunk (on a short run) would otherwise decide alone.
        sustained=achieved is not None and schedule.sent_rows == schedule.total_rows
        and (achieved >= SUSTAINED_SHARE * schedule.rate or schedule.late_chunks == 0),
        rows=schedule.sent_rows, chunks=schedule.sent_chunks, late_chunks=schedule.late_chunks,
        unsent_rows=schedule.unsent_rows,
        max_backlog_rows=max((rows for _, rows in schedule.backlog), default=0),
        schedule_delay=schedule.schedule_delay.summary(),
        acknowledged=schedule.ack_latency.summary() if schedule.acknowledged else None,
        acknowledged_from_send=schedule.ack_from_send.summary() if schedule.acknowledged else None,
        freshness=probe.freshness.summary() if probe is not None else None,
        source_behind=schedule.source_behind.summary(),
        unseen_chunks=probe.unresolved if probe is not None else 0,
        backlog=[[seconds, rows] for seconds, rows in schedule.backlog],
        acknowledged_series=schedule.ack_series.points if schedule.acknowledged else [],
        acknowledged_from_send_series=schedule.ack_from_send_series.points if schedule.acknowledged else [],
        freshness_series=probe.series.points if probe is not None else [])


def probe_figures(probe: FreshnessProbe | None) -> ProbeFigures | None:
    """What the probe asked of the server (None: there was none)."""
    if probe is None:
        return None
    return ProbeFigures(probe.interval, probe.queries, round(probe.queries / probe.seconds, 1) if probe.seconds else 0.0,
                        len(probe.tables), probe.failures, probe.last_error)


def last_rate_figures(record: RunRecord) -> dict[str, float]:
    """An open-loop run's (``--rate``) figures of its last rate: the rate achieved, freshness p50 and p99 (none for
    a closed-loop run)."""
    steps = record.open_loop.steps if record.open_loop is not None else []
    if not steps:
        return {}
    step = steps[-1]
    figures = {"achieved_rows_per_second": step.achieved_rows_per_second}
    if step.freshness is not None:
        figures.update(freshness_p50_seconds=step.freshness.p50, freshness_p99_seconds=step.freshness.p99)
    return {name: value for name, value in figures.items() if value is not None}
