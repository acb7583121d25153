"""Variants alternated over rounds: the one way the harness measures side by side (the scripts of
``benchmarks/`` and the tuning sweep, ``harness.run.tune``).

A shared machine's speed drifts, so variants are never measured one after the other in blocks: each round
runs every variant once (A, B, A, B ...), optionally after a warm-up round that is recorded but not
counted, and the figures are medians over the rounds (``harness.records.intervals.summarize``). With
``rotate`` the order shifts by one each round (A B C, B C A, C A B; for two: A B, B A), so no variant always
runs first or right after the same other one. The result is a ``Comparison`` of a benchmark record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from harness.records.benchmark_record import Comparison, Measurement, Round
from harness.records.intervals import summarize

# A variant is called once a round with the round's number (0: the warm-up, then 1, 2 ...) and returns
# what it measured.
Variant = Callable[[int], Measurement]


def round_order(variants: Sequence[str], round_number: int, rotate: bool = True) -> list[str]:
    """The order of the variants in counted round ``round_number`` (1, 2 ...); the warm-up (0) and, without
    ``rotate``, every round run them in the order given."""
    shift = (round_number - 1) % len(variants) if rotate and round_number > 0 else 0
    return [*variants[shift:], *variants[:shift]]


def alternate_groups(groups: Mapping[str, Mapping[str, Variant]], rounds: int, *, baseline: str | None = None,
                     warm_up: bool = False, rotate: bool = True, parameters: Mapping[str, dict] | None = None,
                     stop_before: Callable[[int], bool] | None = None) -> list[Comparison]:
    """Run several groups of variants in the same rounds: each round runs every group in turn, each group's
    variants in the round's order. One ``Comparison`` per group (its name is the group's key), summarized
    against ``baseline`` (a variant name every group has; default: each group's first variant) with
    ``parameters[group]`` as its parameters. ``stop_before(n)``, asked before every counted round after the
    first, ends the rounds there when it says True (a time budget)."""
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    comparisons = {}
    for name, variants in groups.items():
        if not variants:
            raise ValueError(f"group {name!r} has no variants")
        group_baseline = baseline if baseline is not None else next(iter(variants))
        if group_baseline not in variants:
            raise ValueError(f"baseline {group_baseline!r} is not a variant of group {name!r}")
        comparisons[name] = Comparison(name=name, baseline=group_baseline, variants=list(variants),
                                       parameters=dict((parameters or {}).get(name, {})))
    for round_number in range(0 if warm_up else 1, rounds + 1):
        if round_number > 1 and stop_before is not None and stop_before(round_number):
            break
        for name, variants in groups.items():
            order = round_order(list(variants), round_number, rotate)
            measurements = {variant: variants[variant](round_number) for variant in order}
            comparisons[name].rounds.append(Round(number=round_number, order=order, measurements=measurements))
    for comparison in comparisons.values():
        comparison.summary = summarize(comparison)
    return list(comparisons.values())


def alternate(variants: Mapping[str, Variant], rounds: int, *, name: str = "", baseline: str | None = None,
              warm_up: bool = False, rotate: bool = True, parameters: dict | None = None,
              stop_before: Callable[[int], bool] | None = None) -> Comparison:
    """Run ``variants`` alternated over ``rounds`` counted rounds (after one warm-up round with
    ``warm_up``); the ``Comparison`` of their measurements, summarized against ``baseline`` (default: the
    first variant)."""
    (comparison,) = alternate_groups({name: variants}, rounds, baseline=baseline, warm_up=warm_up, rotate=rotate,
                                     parameters={name: parameters or {}}, stop_before=stop_before)
    return comparison
