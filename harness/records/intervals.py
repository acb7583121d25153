"""How sure a comparison is: the counted rounds' medians, the ratios to the baseline (of the medians, and
paired round by round), the sign test's interval of each paired ratio (``median_interval``: distribution
free, no random draws), and the tally of where each figure stands against its baseline."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence

from harness.records.benchmark_record import Comparison, FigureSummary

# What ``median_interval`` aims at: the interval of the median paired ratio that covers the true median with
# at least this probability, where the rounds allow one.
INTERVAL_CONFIDENCE = 0.95


def standings(figures: Iterable[tuple[FigureSummary, bool]]) -> str:
    """One line over ``figures`` (each with whether more of it is better): how many medians are at least as
    good as their baselines' (ratio 1 or better), and how many stand ahead of, level with and behind their
    baselines by their paired intervals, with the least coverage among those intervals."""
    figures = list(figures)
    as_good = sum(figure.ratio is not None and (figure.ratio >= 1 if higher else figure.ratio <= 1)
                  for figure, higher in figures)
    said = f"medians at least the baseline's in {as_good} of {len(figures)}"
    counted = Counter(figure.standing(higher) for figure, higher in figures)
    coverages = [figure.paired_confidence for figure, _ in figures if figure.paired_confidence is not None]
    if not coverages:
        return f"{said}; no paired intervals (fewer than 2 rounds)"
    return (f"{said}; paired intervals (coverage {min(coverages):.1%} or more): {counted['ahead']} ahead, "
            f"{counted['level']} level, {counted['behind']} behind")




def round_ratios(comparison: Comparison, variant: str, figure: str) -> list[float]:
    """The variant's ``figure`` over the baseline's in the same round, for every counted round where both
    have it (and the baseline's is not zero)."""
    ratios = []
    for one in comparison.counted_rounds():
        mine, base = one.measurements.get(variant), one.measurements.get(comparison.baseline)
        if mine is None or base is None:
            continue
        value, base_value = mine.figures().get(figure), base.figures().get(figure)
        if value is not None and base_value:
            ratios.append(value / base_value)
    return ratios


def median_interval(values: Sequence[float], confidence: float = INTERVAL_CONFIDENCE
                    ) -> tuple[float, float, float] | None:
    """A distribution-free interval for the median of ``values`` (the sign test's): sorted, the k-th smallest
    and the k-th largest value, with k the largest rank whose interval still covers the true median with
    probability ``confidence`` (each value falls on either side of it with probability one half, so the
    interval misses it only where fewer than k values fall on one side). Returns (low, high, the coverage
    achieved). Too few values for ``confidence`` (fewer than 6 for 0.95) give the whole range and its
    lower coverage (5 values: 0.9375); fewer than 2 give None."""
    ordered = sorted(values)
    count = len(ordered)
    if count < 2:
        return None

    def coverage(rank: int) -> float:  # 1 - 2 P(Binomial(count, 1/2) < rank)
        return 1 - 2 * sum(math.comb(count, below) for below in range(rank)) / 2 ** count

    rank = 1
    while rank < (count + 1) // 2 and coverage(rank + 1) >= confidence:
        rank += 1
    return ordered[rank - 1], ordered[count - rank], coverage(rank)


def summarize(comparison: Comparison) -> dict[str, dict[str, FigureSummary]]:
    """Per variant and figure, over the counted rounds: median, min, max, and the ratios to the baseline.
    A median of an even number of rounds is the mean of the middle two (``statistics.median``)."""
    values: dict[str, dict[str, list[float]]] = {variant: {} for variant in comparison.variants}
    for one in comparison.counted_rounds():
        for variant, measurement in one.measurements.items():
            for name, value in measurement.figures().items():
                values.setdefault(variant, {}).setdefault(name, []).append(value)
    medians = {variant: {name: statistics.median(series) for name, series in figures.items()}
               for variant, figures in values.items()}
    base_medians = medians.get(comparison.baseline, {})
    summary: dict[str, dict[str, FigureSummary]] = {}
    for variant, figures in values.items():
        summary[variant] = {}
        for name, series in figures.items():
            base = base_medians.get(name)
            paired = round_ratios(comparison, variant, name)
            # The baseline against itself has no interval: every round's ratio is 1.
            interval = median_interval(paired) if variant != comparison.baseline else None
            low, high, confidence = interval or (None, None, None)
            summary[variant][name] = FigureSummary(
                median=medians[variant][name], min=min(series), max=max(series),
                ratio=medians[variant][name] / base if base else None,
                paired_ratio=statistics.median(paired) if paired else None,
                paired_low=low, paired_high=high, paired_confidence=confidence)
    return summary
