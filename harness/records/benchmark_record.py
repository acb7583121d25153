"""Benchmark records: the one JSON shape every script of ``benchmarks/`` writes, and its summary.

A script compares variants (ours and Go's loader, metrics on and off ...) measured alternately over
rounds. Its ``BenchmarkRecord`` names the schema and its version, the benchmark, when and on what machine
it ran and with which parameters, and holds one ``Comparison`` per group of variants measured together:
every round's raw ``Measurement`` per variant, and the summary (per variant and figure: median, range, the
ratios to the baseline variant, and how sure the paired ratio is: ``median_interval``) that ``summarize``
computes from the counted rounds (``harness.records.intervals``). This module owns that shape; the store
(``harness.records.store``) writes and reads it, ``harness.report.tables`` prints it. It imports neither
pandas, numba, matplotlib nor questdb, so reading records stays light.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness.records.codec import always_stored, not_stored, to_dict
from harness.records.system_info import system_info
from harness.versions import HARNESS_VERSION

BENCHMARK_SCHEMA = "tsbs-pandas-questdb/benchmark-record"
# Version 1 had no paired intervals (``FigureSummary.paired_low`` ...): the store computes them from its rounds.
BENCHMARK_SCHEMA_VERSION = 2

# The figures every measurement may have; ``Measurement.extra`` adds others under names of their own.
CORE_FIGURES = ("seconds", "rows", "rows_per_second", "client_cpu_seconds", "peak_rss_bytes")


@dataclass
class Measurement:
    """What one variant measured in one round. ``seconds`` is wall time on the variant's own clock (a
    phase, a command, a tool's own printed time: the script says which); the rest where measured.
    ``extra`` holds any other numeric figure of the round (queries/s, MiB/s, scrapes served ...)."""

    seconds: float
    rows: int | None = None
    client_cpu_seconds: float | None = None
    peak_rss_bytes: int | None = None
    extra: dict[str, float] = field(default_factory=dict)
    run_record: str | None = None  # the run's own results file, where the round wrote one

    def __post_init__(self) -> None:
        clashes = set(self.extra) & set(CORE_FIGURES)
        if clashes:
            raise ValueError(f"extra figures may not reuse the names of core figures: {sorted(clashes)}")

    def figures(self) -> dict[str, float]:
        """Every figure by name; ``rows_per_second`` is derived here, never stored."""
        values: dict[str, float] = {"seconds": self.seconds}
        if self.rows is not None:
            values["rows"] = self.rows
            if self.seconds > 0:
                values["rows_per_second"] = self.rows / self.seconds
        if self.client_cpu_seconds is not None:
            values["client_cpu_seconds"] = self.client_cpu_seconds
        if self.peak_rss_bytes is not None:
            values["peak_rss_bytes"] = self.peak_rss_bytes
        values.update(self.extra)
        return values


@dataclass
class Round:
    """One pass over the variants, in ``order``. Round 0 is the warm-up: recorded, never counted."""

    number: int
    order: list[str]
    measurements: dict[str, Measurement]

    @property
    def is_warm_up(self) -> bool:
        return self.number == 0


@dataclass
class FigureSummary:
    """One figure of one variant over the counted rounds. ``ratio``: this median over the baseline's;
    ``paired_ratio``: the median of the per-round ratios (this round's value over the baseline's in the same
    round), steadier when the machine's speed drifts between rounds. Above 1 means more of the figure:
    more seconds, or more rows per second. ``paired_low``-``paired_high``: the interval around
    ``paired_ratio`` that holds the true median of the rounds' ratios with probability
    ``paired_confidence`` (``median_interval``): one that leaves 1 out says the variant differs from the
    baseline in this figure, beyond the rounds' noise; one that holds 1 says the rounds cannot tell them
    apart."""

    median: float
    min: float
    max: float
    ratio: float | None = None
    paired_ratio: float | None = None
    paired_low: float | None = None
    paired_high: float | None = None
    paired_confidence: float | None = None

    def standing(self, higher_is_better: bool = True) -> str | None:
        """``ahead``, ``behind`` or ``level`` against the baseline by the paired interval (``ahead``: the whole
        interval on the better side of 1: above it where more of the figure is better, below it where less
        is); None without an interval."""
        if self.paired_low is None or self.paired_high is None:
            return None
        if self.paired_low > 1 or self.paired_high < 1:
            return "ahead" if (self.paired_low > 1) == higher_is_better else "behind"
        return "level"

    def paired_text(self, higher_is_better: bool = True, invert: bool = False) -> str:
        """The paired ratio with its interval and standing, ``1.03x [0.97-1.10] level``; ``invert`` shows the
        baseline over the variant instead (for seconds: above 1, faster than the baseline)."""
        def shown(value: float) -> float:
            return 1 / value if invert else value

        if self.paired_ratio is None:
            return "-"
        if self.paired_low is None or self.paired_high is None:
            return f"{shown(self.paired_ratio):.2f}x"
        low, high = sorted((shown(self.paired_low), shown(self.paired_high)))
        return f"{shown(self.paired_ratio):.2f}x [{low:.2f}-{high:.2f}] {self.standing(higher_is_better)}"


@dataclass
class Comparison:
    """Variants measured alternately in the same rounds, and their summary against ``baseline``."""

    name: str
    baseline: str
    variants: list[str]
    rounds: list[Round] = always_stored(list)
    parameters: dict = field(default_factory=dict)
    summary: dict[str, dict[str, FigureSummary]] = always_stored(dict)  # variant -> figure -> summary

    def counted_rounds(self) -> list[Round]:
        return [one for one in self.rounds if not one.is_warm_up]


@dataclass
class BenchmarkRecord:
    """Everything one benchmark script leaves behind. ``extra`` holds what was measured or checked outside
    the rounds (e.g. whether two tools printed the same bytes, a cost timed in isolation)."""

    benchmark: str
    parameters: dict
    comparisons: list[Comparison] = always_stored(list)
    extra: dict = field(default_factory=dict)
    schema: str = BENCHMARK_SCHEMA
    schema_version: int = BENCHMARK_SCHEMA_VERSION
    harness_version: str = HARNESS_VERSION
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    system: dict = field(default_factory=system_info)
    path: Path | None = not_stored()  # where it was read from or written to

    def ended_early(self, cause: BaseException, seconds: float) -> None:
        """Say in ``extra`` how a benchmark that stopped before its end ended (a trial failed, Ctrl-C), and after
        how long: its record is written all the same."""
        interrupted = isinstance(cause, KeyboardInterrupt)
        self.extra.update(status="interrupted" if interrupted else "failed",
                          error="interrupted" if interrupted else str(cause), seconds=round(seconds, 1))

    def to_dict(self) -> dict:
        values = to_dict(self)
        # What the document is comes first, for a reader opening the file.
        first = ("schema", "schema_version", "benchmark", "harness_version", "started_at")
        return {**{key: values.pop(key) for key in first}, **values}

    def to_frame(self):
        """The summaries as a pandas DataFrame, a row per comparison, variant and figure: median, range, the
        paired ratio to the baseline with its interval, coverage and standing."""
        import pandas as pd  # only for a caller that asks: reading records stays light

        rows = [{"comparison": comparison.name, "variant": variant, "figure": figure, "median": summary.median,
                 "min": summary.min, "max": summary.max, "paired_ratio": summary.paired_ratio,
                 "paired_low": summary.paired_low, "paired_high": summary.paired_high,
                 "paired_confidence": summary.paired_confidence,
                 # More is better but for times and sizes (seconds, CPU seconds, bytes).
                 "standing": summary.standing(not figure.endswith(("seconds", "bytes")))}
                for comparison in self.comparisons for variant, figures in comparison.summary.items()
                for figure, summary in figures.items()]
        return pd.DataFrame(rows)
