"""The knee: the highest rate held (sustained, its freshness p99 under the SLO), named among a ramp's steps
(``knee``) or searched for by bisection (``search_knee``)."""

from __future__ import annotations

from collections.abc import Callable

from harness.records.run_record import RateStep


def held(step: RateStep, slo_seconds: float | None) -> bool:
    """Whether a rate was held: sustained, and its freshness p99 (where measured) under the SLO, every chunk
    sent seen (one the probe did not see within the grace is in no percentile, and was not fresh)."""
    return step.sustained and (step.freshness is None or slo_seconds is None
                               or (step.freshness.count > 0 and step.freshness.p99 < slo_seconds
                                   and step.unseen_chunks == 0))


def knee(steps: list[RateStep], slo_seconds: float | None) -> float | None:
    """The highest rate held: sustained, its freshness p99 (where measured) under the SLO."""
    return max((step.target_rows_per_second for step in steps if held(step, slo_seconds)), default=None)


def search_knee(probe: Callable[[float], RateStep | None], low: float, high: float, resolution: float,
                slo_seconds: float | None) -> float | None:
    """The highest rate held between ``low`` and ``high``, by bisection: ``low`` first (None when it is missed),
    then ``high`` (the knee when it is held), then the middle of the highest held and the lowest missed until
    they are within ``resolution`` of the rate held. ``probe`` holds a rate and returns its step (None: no
    data left, and the search ends with what it found)."""
    step = probe(low)
    if step is None or not held(step, slo_seconds):
        return None
    step = probe(high)
    if step is None:
        return low
    if held(step, slo_seconds):
        return high
    held_rate, missed_rate = low, high
    while missed_rate - held_rate > resolution * held_rate:
        middle = round((held_rate + missed_rate) / 2)
        step = probe(middle)
        if step is None:
            break
        if held(step, slo_seconds):
            held_rate = middle
        else:
            missed_rate = middle
    return held_rate
