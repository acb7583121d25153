"""Benchmark records: the one JSON shape every script of ``benchmarks/`` writes, and its summary.

A script compares variants (ours and Go's loader, metrics on and off ...) measured alternately over
rounds. Its ``BenchmarkRecord`` names the schema and its version, the benchmark, when and on what machine
it ran and with which parameters, and holds one ``Comparison`` per group of variants measured together:
every round's raw ``Measurement`` per variant, and the summary (per variant and figure: median, range, the
ratios to the baseline variant, and how sure the paired ratio is: ``median_interval``) that ``summarize``
computes from the counted rounds. This module owns that shape, its statistics, writing and reading it,
and its plain-text table; it imports neither pandas, numba, matplotlib nor questdb, so reading records
stays light.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness import __version__
from harness.errors import UsageError
from harness.records.run_record import write_json_whole
from harness.records.system_info import system_info

BENCHMARK_SCHEMA = "tsbs-pandas-questdb/benchmark-record"
BENCHMARK_SCHEMA_VERSION = 2
# Version 1 had no paired intervals (``FigureSummary.paired_low`` ...): reading one computes them from its rounds.
READ_SCHEMA_VERSIONS = (1, 2)
# What ``median_interval`` aims at: the interval of the median paired ratio that covers the true median with
# at least this probability, where the rounds allow one.
INTERVAL_CONFIDENCE = 0.95

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


@dataclass
class Comparison:
    """Variants measured alternately in the same rounds, and their summary against ``baseline``."""

    name: str
    baseline: str
    variants: list[str]
    rounds: list[Round] = field(default_factory=list)
    parameters: dict = field(default_factory=dict)
    summary: dict[str, dict[str, FigureSummary]] = field(default_factory=dict)  # variant -> figure -> summary

    def counted_rounds(self) -> list[Round]:
        return [one for one in self.rounds if not one.is_warm_up]


@dataclass
class BenchmarkRecord:
    """Everything one benchmark script leaves behind. ``extra`` holds what was measured or checked outside
    the rounds (e.g. whether two tools printed the same bytes, a cost timed in isolation)."""

    benchmark: str
    parameters: dict
    comparisons: list[Comparison] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    schema: str = BENCHMARK_SCHEMA
    schema_version: int = BENCHMARK_SCHEMA_VERSION
    harness_version: str = __version__
    started_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    system: dict = field(default_factory=system_info)
    path: Path | None = field(default=None, compare=False)  # where it was read from or written to

    def to_dict(self) -> dict:
        values = dataclasses.asdict(self)
        del values["path"]
        # What the document is comes first, for a reader opening the file.
        first = ("schema", "schema_version", "benchmark", "harness_version", "started_at")
        return {**{key: values.pop(key) for key in first}, **values}

    @classmethod
    def from_dict(cls, values: dict) -> BenchmarkRecord:
        values = dict(values)
        comparisons = [_comparison_from_dict(one) for one in values.pop("comparisons")]
        return cls(**values, comparisons=comparisons)


def _comparison_from_dict(values: dict) -> Comparison:
    values = dict(values)
    rounds = [Round(number=one["number"], order=list(one["order"]),
                    measurements={name: Measurement(**figures) for name, figures in one["measurements"].items()})
              for one in values.pop("rounds")]
    summary = {variant: {name: FigureSummary(**figure) for name, figure in figures.items()}
               for variant, figures in values.pop("summary").items()}
    return Comparison(**values, rounds=rounds, summary=summary)


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


def write_benchmark_record(record: BenchmarkRecord, path: str | Path) -> Path:
    """Write the record as indented JSON (creating the folder); returns the path. The file appears whole or
    not at all: written beside its place, then renamed."""
    record.path = write_json_whole(record.to_dict(), Path(path))
    return record.path


def is_benchmark_record(path: str | Path) -> bool:
    """Whether the file is a JSON document that names this schema (of any version): how ``compare`` can
    tell a benchmark record from a run record before loading it."""
    try:
        values = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(values, dict) and values.get("schema") == BENCHMARK_SCHEMA


def load_benchmark_record(path: str | Path) -> BenchmarkRecord:
    """Read a benchmark record of a schema version this harness reads (``READ_SCHEMA_VERSIONS``); UsageError,
    in one line naming the file, for a file that cannot be read, is not a benchmark record, or has another
    schema version (named)."""
    try:
        values = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise UsageError(f"cannot read benchmark record {path}: {reason}") from None
    if not isinstance(values, dict) or values.get("schema") != BENCHMARK_SCHEMA:
        raise UsageError(f"{path} is not a benchmark record (no \"schema\": \"{BENCHMARK_SCHEMA}\")")
    version = values.get("schema_version")
    if version not in READ_SCHEMA_VERSIONS:
        newer = isinstance(version, int) and version > BENCHMARK_SCHEMA_VERSION
        raise UsageError(f"{path} is a benchmark record of {'a newer ' if newer else ''}schema version {version!r}; "
                         f"this harness reads versions {', '.join(map(str, READ_SCHEMA_VERSIONS))}")
    try:
        record = BenchmarkRecord.from_dict(values)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"{path} is not a well-formed benchmark record "
                         f"(schema version {version}): {reason}") from None
    if version == 1:
        # Its summaries lack the paired intervals; the rounds it holds give them.
        for comparison in record.comparisons:
            comparison.summary = summarize(comparison)
    record.path = Path(path)
    return record


def _number(value: float | None, scale: float = 1.0, digits: int = 3) -> str:
    return "-" if value is None else f"{value / scale:.{digits}f}"


def _median(figures: dict[str, FigureSummary], name: str) -> float | None:
    return figures[name].median if name in figures else None


def _versus_baseline(comparison: Comparison, variant: str, figures: dict[str, FigureSummary]) -> str:
    """The variant's main ratio: rows/s where its rounds counted rows, else seconds; then its paired ratio,
    interval and standing."""
    if variant == comparison.baseline:
        return "baseline"
    main, label = ("rows_per_second", "rows/s") if "rows_per_second" in figures else ("seconds", "s")
    if main not in figures or figures[main].ratio is None:
        return "-"
    figure = figures[main]
    return f"{label} {figure.ratio:.2f}x (paired {figure.paired_text(higher_is_better=main == 'rows_per_second')})"


def _other_figures(comparison: Comparison, variant: str, figures: dict[str, FigureSummary]) -> str:
    """The medians of the figures beyond the core ones, each with its ratio to the baseline's."""
    cells = []
    for name, figure in figures.items():
        if name in CORE_FIGURES:
            continue
        ratio = f" ({figure.ratio:.2f}x)" if figure.ratio is not None and variant != comparison.baseline else ""
        cells.append(f"{name} {figure.median:.4g}{ratio}")
    return " ".join(cells) or "-"


def benchmark_table(records: Sequence[BenchmarkRecord]) -> str:
    """A plain-text table, one line per variant of each comparison of each record: medians over the counted
    rounds (seconds, million rows/s, client CPU seconds, peak RSS in MiB), the ratio to the comparison's
    baseline (rows/s where the rounds counted rows, else seconds) with its paired ratio, interval and
    standing, and the other figures' medians with their ratios."""
    header = ("file", "date", "benchmark", "comparison", "variant", "rounds", "median s", "Mrows/s", "CPU s",
              "RSS MiB", "vs baseline", "other medians (vs baseline)")
    rows = []
    for record in records:
        for comparison in record.comparisons:
            counted = comparison.counted_rounds()
            for variant in comparison.variants:
                figures = comparison.summary.get(variant, {})
                rows.append((
                    record.path.name if record.path else "-", record.started_at[:19], record.benchmark,
                    comparison.name or "-", variant, str(sum(variant in one.measurements for one in counted)),
                    _number(_median(figures, "seconds")), _number(_median(figures, "rows_per_second"), 1e6),
                    _number(_median(figures, "client_cpu_seconds"), digits=2),
                    _number(_median(figures, "peak_rss_bytes"), 2**20, digits=0),
                    _versus_baseline(comparison, variant, figures), _other_figures(comparison, variant, figures),
                ))
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
