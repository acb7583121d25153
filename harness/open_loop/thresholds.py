"""Pass/fail thresholds over an open-loop run's figures (``bench --threshold``), as k6 writes them:
``freshness_p99<1s``, ``ack_p99<=200ms``, ``query_p99<200ms``, ``max_backlog<10000``, ``rate_sustained``; judged on
the run's figures into its record (``judge_thresholds``), and those missed told in a line each
(``missed_thresholds``).

A threshold names one figure of the record (``FIGURES``) and, unless the figure is a yes/no one, compares it
with a value: a time for latencies (a Go duration: ``250ms``, ``1.5s``), a number otherwise. The run exits
0 only when every threshold holds, each that does not printed on a line of its own. A threshold over a run
of several rates (a ramp) holds when it holds at every rate.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import ParameterError, UsageError
from harness.records.run_record import RateStep, ThresholdOutcome
from harness.telemetry.latency import LatencySummary
from harness.tsbs.params import parse_go_duration_ns

if TYPE_CHECKING:
    from harness.open_loop.run_log import RunLog

LATENCIES = {"freshness": "freshness", "ack": "acknowledged", "schedule_delay": "schedule_delay"}
QUANTILES = ("p50", "p90", "p99", "p999", "max")


def _latency(attribute: str, quantile: str) -> Callable[[RateStep], float | None]:
    def figure(step: RateStep) -> float | None:
        summary = getattr(step, attribute)
        return summary.figure(quantile) if summary is not None and summary.count else None
    return figure


# Figure name -> (how to read it from a step, its kind: "time", "number" or "yes/no").
FIGURES: dict[str, tuple[Callable[[RateStep], float | bool | None], str]] = {
    **{f"{name}_{quantile}": (_latency(attribute, quantile), "time")
       for name, attribute in LATENCIES.items() for quantile in QUANTILES},
    "achieved_rate": (lambda step: step.achieved_rows_per_second, "number"),
    "max_backlog": (lambda step: step.max_backlog_rows, "number"),
    "late_chunks": (lambda step: step.late_chunks, "number"),
    "unsent_rows": (lambda step: step.unsent_rows, "number"),
    "rate_sustained": (lambda step: step.sustained, "yes/no"),
}
# The queries beside the ingest (--queries): over the whole run, not per rate.
QUERY_FIGURES = {f"query_{quantile}": quantile for quantile in QUANTILES}
OPERATORS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_EXPRESSION = re.compile(r"^\s*([a-z0-9_]+)\s*(?:(<=|>=|<|>)\s*(\S+))?\s*$")


@dataclass(frozen=True)
class Threshold:
    expression: str
    figure: str
    operator: str | None = None
    bound: float | None = None  # seconds for a time

    @classmethod
    def parse(cls, text: str) -> Threshold:
        """One ``--threshold``; a UsageError naming what is wrong."""
        match = _EXPRESSION.match(text)
        if match is None:
            raise UsageError(f"--threshold {text!r}: write FIGURE<VALUE (<, <=, >, >=), e.g. 'freshness_p99<1s', or "
                             f"a yes/no figure alone ('rate_sustained')")
        name, relation, value = match.groups()
        if name not in FIGURES and name not in QUERY_FIGURES:
            raise UsageError(f"--threshold {text!r}: unknown figure {name!r}; the figures: "
                             f"{', '.join([*FIGURES, *QUERY_FIGURES])}")
        kind = FIGURES[name][1] if name in FIGURES else "time"
        if kind == "yes/no":
            if relation is not None:
                raise UsageError(f"--threshold {text!r}: {name} is yes or no: write it alone")
            return cls(text.strip(), name)
        if relation is None:
            raise UsageError(f"--threshold {text!r}: {name} needs a comparison, e.g. '{name}<{_example(kind)}'")
        return cls(text.strip(), name, relation, _bound(text, name, kind, value))

    def judge(self, steps: list[RateStep], queries: LatencySummary | None = None) -> ThresholdOutcome:
        """Whether it holds at every step (a query figure: over the queries beside them); the value kept is
        the first failing step's."""
        if self.figure in QUERY_FIGURES:
            value = queries.figure(QUERY_FIGURES[self.figure]) if queries is not None and queries.count else None
            return ThresholdOutcome(self.expression, value, value is not None and self._holds(value))
        read, _ = FIGURES[self.figure]
        value = None
        for step in steps:
            value = read(step)
            if value is None or not self._holds(value):
                return ThresholdOutcome(self.expression, None if value is None else float(value), False)
        return ThresholdOutcome(self.expression, None if value is None else float(value), bool(steps))

    def _holds(self, value: float | bool) -> bool:
        if self.operator is None:
            return bool(value)
        return OPERATORS[self.operator](value, self.bound)


def _example(kind: str) -> str:
    return "1s" if kind == "time" else "1000"


def _bound(text: str, name: str, kind: str, value: str) -> float:
    if kind == "time":
        try:
            return parse_go_duration_ns(value, "threshold") / 1e9
        except ParameterError:
            raise UsageError(f"--threshold {text!r}: {name} is a time: write a duration such as 250ms or 1.5s, "
                             f"got {value!r}") from None
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--threshold {text!r}: {name} is a number, got {value!r}") from None


def failed_lines(outcomes: list[ThresholdOutcome]) -> list[str]:
    """One line per threshold that did not hold."""
    lines = []
    for outcome in outcomes:
        if outcome.passed:
            continue
        figure = _EXPRESSION.match(outcome.expression).group(1)
        kind = FIGURES[figure][1] if figure in FIGURES else "time"
        if outcome.value is None:
            seen = "the run has no such figure"
        elif kind == "time":
            seen = f"{figure} was {outcome.value:.3f}s"
        elif kind == "yes/no":
            seen = f"{figure} was {'yes' if outcome.value else 'no'}"
        else:
            seen = f"{figure} was {outcome.value:g}"
        lines.append(f"threshold failed: {outcome.expression} ({seen})")
    return lines


def judge_thresholds(thresholds: Iterable[Threshold], run: RunLog) -> None:
    """``thresholds`` judged on the run's open-loop figures, into its record, each said."""
    figures = run.record.open_loop
    if figures is None:
        return
    queries = figures.queries.latency if figures.queries is not None else None
    figures.thresholds = [threshold.judge(figures.steps, queries) for threshold in thresholds]
    for outcome in figures.thresholds:
        run.say(f"Threshold {outcome.expression}: {'passed' if outcome.passed else 'FAILED'}")


def missed_thresholds(run: RunLog) -> list[str]:
    """A line per threshold the run missed (none: every one held, or none was given)."""
    figures = run.record.open_loop
    return failed_lines(figures.thresholds) if figures is not None else []
