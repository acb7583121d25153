"""What a tuning sweep tries and what it concludes: the settings of a send (``Setting``: workers, chunk rows,
protocol version, transport, the dtype audit's conversions), the default grid around the user's own setting
(``grid``), the recommendation a sweep's comparison supports (``recommend``: ahead of the user's setting by
its paired interval, or none), and the code that applies it (``setting_code``). The sweep itself (trials
alternated in rounds within a budget) is the ``tune`` command's (``harness.commands.tune``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from harness.ingest.choices import Target
from harness.ingest.wire.registry import wire_for
from harness.records.benchmark_record import Comparison, FigureSummary
from harness.run.bench_options import BenchOptions
from harness.run.plan import BenchPlan
from harness.source import Source

# The figure a sweep ranks by: rows per second of the send (into QuestDB: until the rows are visible).
RANKED_FIGURE = "rows_per_second"
AS_IS = "as is"


@dataclass(frozen=True)
class Setting:
    """One way to send: ``changes`` to the user's bench options (``BenchOptions`` fields), named by what
    they change."""

    name: str
    changes: dict

    def applied(self, options: BenchOptions) -> BenchOptions:
        return dataclasses.replace(options, **self.changes)


def grid(options: BenchOptions, source: Source, cpus: int | None = None) -> list[Setting]:
    """The default sweep around the user's setting (``options``), which comes first as the baseline: more
    workers (2, and every CPU where there are more), chunks 5x smaller and 5x larger, what the wire may vary
    (ILP: the binary protocol where text is sent, the other transport into QuestDB), the source's dtype
    conversions (where its audit proposes any), and those changes together."""
    cpus = cpus or os.cpu_count() or 1
    workers = options.workers or 1
    rows = options.worker_chunk_row_count
    settings = [Setting(AS_IS, {})]

    def add(name: str, **changes) -> None:
        if any(getattr(options, key) != value for key, value in changes.items()) and \
                all(setting.changes != changes for setting in settings):
            settings.append(Setting(name, changes))

    for count in sorted({2, cpus} - {workers}):
        if count > 1:
            add(f"{count} workers", workers=count)
    add(f"chunks of {max(rows // 5, 1):,} rows", worker_chunk_row_count=max(rows // 5, 1))
    add(f"chunks of {rows * 5:,} rows", worker_chunk_row_count=rows * 5)
    variants = [variant for variant in options.wire().variants(options.target == Target.sink, workers)
                if any(getattr(options, key) != value for key, value in variant.changes.items())]
    for variant in variants:
        add(variant.name, **variant.changes)
    if source.conversions:
        add("dtypes converted", convert_dtypes=True)
    # Those that combine, together: the conversions, more workers, the wire's own (ILP: the binary protocol).
    together = [*([("dtypes converted", {"convert_dtypes": True})] if source.conversions else []),
                *([(f"{max(2, min(cpus, 4))} workers", {"workers": max(2, min(cpus, 4))})] if workers < 2 else []),
                *((variant.short, variant.changes) for variant in variants if variant.short is not None)]
    if len(together) > 1:
        add("all of: " + ", ".join(name for name, _ in together),
            **{key: value for _, changes in together for key, value in changes.items()})
    return settings


@dataclass(frozen=True)
class Recommendation:
    """What a sweep supports: ``setting`` (None: keep the user's own), its gain in the ranked figure
    (``summary``: the paired ratio and its interval against the user's setting), and why in one line."""

    setting: Setting | None
    summary: FigureSummary | None
    text: str


def recommend(comparison: Comparison, settings: list[Setting]) -> Recommendation:
    """The setting whose paired interval of rows/s lies wholly above the user's setting's (``ahead``) with the
    largest paired ratio; else none, naming the best one and why it is level (within the rounds' noise) or
    behind."""
    by_name = {setting.name: setting for setting in settings}
    candidates = [(name, figures[RANKED_FIGURE]) for name, figures in comparison.summary.items()
                  if name != comparison.baseline and RANKED_FIGURE in figures]
    if not candidates:
        return Recommendation(None, None, "nothing to compare: the sweep measured no setting but the user's own")
    ranked = sorted(candidates, key=lambda item: item[1].paired_ratio or 0, reverse=True)
    ahead = [(name, summary) for name, summary in ranked if summary.standing() == "ahead"]
    if ahead:
        name, summary = ahead[0]
        return Recommendation(by_name[name], summary,
                              f"{name}: {_gain(summary)} the rows/s of the setting as is, {summary.paired_text()}")
    name, summary = ranked[0]
    standing = summary.standing()
    why = ("no paired intervals: the budget allowed fewer than 2 rounds" if standing is None
           else f"the best, {name}, is {summary.paired_text()}: within the rounds' noise" if standing == "level"
           else f"every setting is behind it (the best, {name}: {summary.paired_text()})")
    return Recommendation(None, summary, f"keep the setting as is: {why}")


def _gain(summary: FigureSummary) -> str:
    return f"+{(summary.paired_ratio - 1):.0%} over" if summary.paired_ratio >= 1 else "below"


def setting_code(plan: BenchPlan, host: str, ilp_port: int) -> str | None:
    """A Python script that sends the data as ``plan`` did, to the user's server at ``host`` (``ilp_port``: ILP over
    TCP's): its configuration, how it reads the data and converts its dtypes (``Source.reading_code``), its symbols,
    designated timestamp and chunks, and one sender per worker thread (``Wire.sending_code``), runnable as printed
    with pandas 2 or 3 (a DataFrame's script expects it as ``frame``); None for a source no user's code reads (a
    TSBS data set)."""
    reading = plan.source.reading_code(plan.frame)
    if reading is None:
        return None
    wire = wire_for(dataclasses.replace(plan.wire.settings, host=host, ilp_port=ilp_port))
    imports, connect, send = wire.sending_code(plan.source.dataframe_symbols, plan.source.dataframe_at)
    return "\n".join([
        "# Sends the data as the tuning sweep measured it (harness tune).",
        "import queue",
        "import threading",
        "",
        "import pandas as pd",
        *reading.imports,
        *imports,
        "",
        f"CONF = {wire.code_conf()!r}",
        f"TABLE = {plan.source.tables()[0]!r}",
        f"CHUNK_ROWS = {plan.chunk_rows}",
        f"WORKERS = {plan.threads}",
        *reading.constants,
        "",
        "",
        "def pieces():",
        '    """The data in DataFrames of at most CHUNK_ROWS rows, read a piece at a time."""',
        *reading.body,
        "        yield df",
        "",
        "",
        "work = queue.Queue(maxsize=2 * WORKERS)  # a few pieces in flight, never the whole data",
        "errors = []",
        "",
        "",
        "def worker():",
        "    # Each worker its own connection (an ILP sender is not thread-safe).",
        "    try:",
        f"        {connect}",
        "            while (df := work.get()) is not None:",
        *(f"                {line}" for line in send),
        *_WORKERS_RUN,
    ]) + "\n"


# The end of a script of ``setting_code``: a worker's failure kept, and the workers fed the pieces.
_WORKERS_RUN = [
    "    except BaseException as error:",
    "        errors.append(error)",
    "        while work.get() is not None:  # keep taking pieces, so that the reader never waits for good",
    "            pass",
    "",
    "",
    "threads = [threading.Thread(target=worker) for _ in range(WORKERS)]",
    "for thread in threads:",
    "    thread.start()",
    "for df in pieces():",
    "    work.put(df)",
    "for _ in threads:",
    "    work.put(None)",
    "for thread in threads:",
    "    thread.join()",
    "if errors:",
    "    raise errors[0]",
]
