"""The ``tune`` command: the user's data (or a TSBS data set) sent with the user's setting and with each
setting of the sweep (``harness.run.tune.grid``), trials alternated in rounds within a time budget, ranked by
rows/s with paired intervals against the user's setting, a recommendation that states its measured gain (or
"level"), and the code that applies it. One benchmark record; ``--report`` adds the HTML report with the
sweep's chart. ``run_tune(TuneOptions(...))`` is what ``python -m harness tune`` and ``harness.tune()`` call.

Each trial is a ``bench`` run of its own (a plan of its own, run by ``run_plan`` in this process), its chunks made
while sending, the data read once for them all: client-only into the socat sink by default (where nothing listens at
--host:--sink-port, a private sink the sweep starts and stops: ``harness.servers.sink.sink_at``); with ``--target
questdb`` into a scratch table the sweep makes (``harness_tune_<run>``, claimed by each trial as every run's tables
are) and drops when it ends, however it ends. Into QuestDB, a trial's time runs until its rows are visible. The
lifecycle of the comparison is ``harness.run.comparison``'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

from harness.commands.bench import run_plan
from harness.errors import RunError, UsageError
from harness.ingest.choices import Target
from harness.options.declare import CommandOptions, command, option
from harness.options.groups import (
    DataSetRowsOptions,
    DryRunOptions,
    FrameOptions,
    OwnDataOptions,
    ProfileOptions,
    RecordOptions,
    SendOptions,
    ServerOptions,
)
from harness.questdb.features import detect
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.report.tables import plain_table
from harness.run.bench_options import BenchOptions
from harness.run.comparison import ComparisonRun
from harness.run.plan import BenchPlan
from harness.run.tune import AS_IS, RANKED_FIGURE, Setting, grid, recommend, setting_code
from harness.servers.sink import DEFAULT_SINK_PORT, SinkAddress, sink_at
from harness.source import Source

DEFAULT_BUDGET_SECONDS = 600.0
DEFAULT_ROUNDS = 5
SCRATCH_PREFIX = "harness_tune_"


@dataclass
class TuneOptions(DryRunOptions, SendOptions, OwnDataOptions, FrameOptions, DataSetRowsOptions, RecordOptions,
                  ServerOptions, ProfileOptions, CommandOptions):
    """Every option of a sweep: the data (--data, or a TSBS data set), the user's own setting (the baseline),
    where the trials send, the budget and the rounds."""

    target: Target = option(Target.sink, "sink: client-only, into the socat no-op sink (--sink-port); questdb: "
                                         "into a scratch table the sweep makes and drops.")
    sink_port: int = option(DEFAULT_SINK_PORT, "The socat no-op sink's port (--target sink); where nothing listens "
                                               "at --host:PORT on this machine, the sweep starts a private sink on a "
                                               "free loopback port and stops it when it ends.", min=1, max=65535)
    budget: float = option(DEFAULT_BUDGET_SECONDS, "Seconds the whole sweep may take: rounds stop before one "
                                                   "would end past it.", min=0, min_open=True)
    rounds: int = option(DEFAULT_ROUNDS, "Counted rounds at most (after a warm-up round), each running every "
                                         "setting once, in a rotated order.", min=1)
    settings: list[Setting] | None = option(None, "The settings to sweep instead of the default grid (the first is "
                                                  "the baseline).", cli=False)

    def baseline(self, sink: SinkAddress | None = None) -> BenchOptions:
        """The user's own setting as a bench run: what every trial starts from, sending into ``sink`` (the sweep's,
        into the sink) or the server (``--target questdb``). --profile profiles two trials after the sweep
        (``_profiled_trials``), not the sweep's own."""
        at_sink = {} if sink is None else {"host": sink.host, "ilp_port": sink.port, "private_sink": sink.private}
        return BenchOptions.shared_with(self, profile=False, profile_wall=False, **at_sink)

    def check_values(self) -> None:
        super().check_values()
        self.refuse_table_flags("a sweep sends into the sink or a scratch table of its own")
        self.baseline().check_values()

    def rehearse(self) -> None:
        """A --dry-run also opens the data and checks the sweep can send it."""
        check_source(self, self.baseline().source())


def check_source(options: TuneOptions, source: Source) -> None:
    """What the sweep cannot do with ``source``, in one line: into QuestDB it sends into one scratch table."""
    if options.target == Target.questdb and not source.renamable_table:
        raise UsageError(f"--target questdb: a sweep sends into one scratch table; {source.name} writes several "
                         f"(--target sink sweeps it)")


@command
def run_tune(options: TuneOptions, out: TextIO | None = None, source: Source | None = None
             ) -> BenchmarkRecord | None:
    """Sweep ``source`` (default: the one the flags name, opened once for every trial); returns the benchmark record
    (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout
    source = source or options.baseline().source()
    check_source(options, source)
    with sweep_sink(options, out) as sink:  # a private no-op sink where none listens
        return Sweep(options, source, sink, out).run()


@contextlib.contextmanager
def sweep_sink(options: TuneOptions, out: TextIO) -> Iterator[SinkAddress | None]:
    """Where the trials send into the sink for the block (None into QuestDB): what listens at --host:--sink-port,
    or a private sink started for the sweep where nothing does; a configuration string names its own address."""
    if options.target != Target.sink or options.client_conf() is not None:
        yield None
        return
    with sink_at(options.host, options.sink_port, say=lambda text: print(text, file=out, flush=True)) as sink:
        yield sink


class Sweep:
    """One sweep: its settings, each one's trial plan (the same data, a variant of the source where a setting
    changes how it is read or typed), and its comparison."""

    def __init__(self, options: TuneOptions, source: Source, sink: SinkAddress | None, out: TextIO):
        self.options, self.sink, self.out = options, sink, out
        self.baseline = options.baseline(sink)
        self.settings = options.settings or grid(self.baseline, source)
        parameters = _parameters(options, self.baseline, source, sink)
        self.comparison = ComparisonRun("tune", options.recording(), parameters, out, options.spelling())
        self.scratch = f"{SCRATCH_PREFIX}{self.comparison.run_id}" if sink is None else None
        parameters["scratch_table"] = self.scratch
        self.plans = {setting.name: trial_plan(setting, self.baseline, source, self.scratch)
                      for setting in self.settings}
        self.skipped = self.settings_the_server_lacks()
        parameters["skipped"] = self.skipped
        self.settings = [setting for setting in self.settings if setting.name not in self.skipped]
        self.rows = source.rows(self.baseline.dataset())
        self.round_seconds: dict[int, float] = {}

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def settings_the_server_lacks(self) -> dict[str, str]:
        """Into QuestDB, the settings whose wire needs what the server lacks (QWP), each with why; the user's own
        setting is never one (its run refuses the server in one line)."""
        needs = {name: plan.wire.needed_features() for name, plan in self.plans.items()
                 if name != self.settings[0].name and plan.target == Target.questdb}
        if not any(needs.values()):
            return {}
        try:
            features = detect(self.options.questdb_sql())
        except RunError:
            return {}  # a server that does not answer: the trials say so, each in its line
        where = f"{self.options.host}:{self.options.http_port}"
        return {name: why for name, needed in needs.items() if (why := features.lacking(needed, where))}

    def run(self) -> BenchmarkRecord:
        options, record = self.options, self.comparison.record
        for name, why in self.skipped.items():
            self.say(f"Skipped {name}: {why}")
        self.say(f"Sweep: {len(self.settings)} settings, {self.rows} rows each, into "
                 f"{'the sink' if self.scratch is None else f'QuestDB (scratch table {self.scratch})'}; up to "
                 f"{options.rounds} rounds after a warm-up, within {options.budget:g}s")
        for line in self.plans[self.settings[0].name].source.describe():
            self.say(options.spelling().text(line))
        trials = tempfile.mkdtemp(prefix="harness-tune-")
        try:
            with self.comparison:
                self.comparison.alternate({setting.name: self.trial(setting, trials) for setting in self.settings},
                                          options.rounds, name="settings", stop_before=self.out_of_budget,
                                          parameters={"figure": RANKED_FIGURE})
        finally:
            shutil.rmtree(trials, ignore_errors=True)
            self.drop_scratch()
        (comparison,) = record.comparisons
        advice = recommend(comparison, self.settings)
        chosen = self.plans[advice.setting.name if advice.setting is not None else self.settings[0].name]
        code = setting_code(chosen, options.host, options.ilp_port)
        record.extra.update(recommendation={"setting": advice.setting.name if advice.setting else None,
                                            "changes": _plain(advice.setting.changes) if advice.setting else {},
                                            "text": advice.text},
                            code=code, settings={setting.name: _plain(setting.changes) for setting in self.settings})
        self.say(ranked_table(comparison, self.settings))
        self.say(f"Recommendation: {advice.text}")
        if options.profile:
            try:
                record.extra["profiles"] = self.profiled_trials(comparison.baseline,
                                                                advice.setting.name if advice.setting else None)
            finally:
                self.drop_scratch()
        return self.comparison.finish(*([f"Code that sends the data so (run as printed):\n{code}"] if code else []))

    def trial(self, setting: Setting, folder: str):
        def measure(round_number: int) -> Measurement:
            self.say(f"  round {round_number or 'warm-up'}: {setting.name}")
            began = time.perf_counter()
            try:
                return _trial(self.plans[setting.name],
                              f"{folder}/{round_number}-{self.settings.index(setting)}.json")
            finally:
                self.round_seconds[round_number] = self.round_seconds.get(round_number, 0.0) + \
                    time.perf_counter() - began
        return measure

    def out_of_budget(self, round_number: int) -> bool:
        longest, spent = max(self.round_seconds.values()), self.comparison.seconds
        if spent + longest <= self.options.budget:
            return False
        self.say(f"  budget: a round takes up to {longest:.1f}s and {self.options.budget - spent:.1f}s of "
                 f"{self.options.budget:g}s are left: the sweep ends after {round_number - 1} counted rounds")
        return True

    def profiled_trials(self, baseline: str, recommended: str | None) -> dict:
        """With --profile, after the sweep: the baseline's trial and the recommendation's run once more, each
        profiled (both sides, ``harness.profiling``), their records kept beside the sweep's; each one's verdict and
        buckets."""
        options, path = self.options, self.comparison.path
        profiles = {}
        for index, name in enumerate(dict.fromkeys(name for name in (baseline, recommended) if name is not None)):
            results = path.with_name(f"{path.stem}-profile-{index + 1}.json")
            try:
                record = run_plan(self.plans[name].recorded_at(results, profiling=options.profiling()), io.StringIO())
            except (UsageError, RunError) as exc:
                raise RunError(f"the profiled trial of {name} failed: {exc}") from None
            figures = record.profile
            profiles[name] = {"record": results.name, "verdict": figures.verdict, "bound": figures.bound,
                              "client": figures.client.shares(),
                              "server": figures.server.shares() if figures.server is not None else None}
            self.say(f"Profile of {name} ({results.name}): {figures.verdict}")
        return profiles

    def drop_scratch(self) -> None:
        if self.scratch is None:
            return
        questdb = self.options.questdb_sql()
        with contextlib.suppress(RunError, UsageError, Exception):
            if questdb.table_columns(self.scratch) is not None:
                questdb.drop_table(self.scratch)
                self.say(f"Dropped the scratch table {self.scratch}")


def trial_plan(setting: Setting, baseline: BenchOptions, source: Source, scratch: str | None) -> BenchPlan:
    """The plan of a setting's trials: into the scratch table (QuestDB) or the sink, the source shared with every
    other setting's or a variant of it made once (the same data, already opened) where the setting changes how
    it is typed: the dtype conversions, or another way in (another protocol version, QWP against ILP: the columns
    are judged, and the table's types follow, by it)."""
    options = dataclasses.replace(setting.applied(baseline), table=scratch, replace_table=scratch is not None)
    return options.plan(source.variant(options.convert_dtypes, options.send_path()))


def _trial(plan: BenchPlan, results: str) -> Measurement:
    """One bench run of the sweep, its output kept quiet; its send phase (into QuestDB: until visible)."""
    try:
        record = run_plan(plan.recorded_at(results), io.StringIO())
    except (UsageError, RunError) as exc:
        raise RunError(f"a trial failed: {exc}") from None
    send = record.phases["send"]
    seconds = send.seconds
    if record.validation is not None:
        seconds += record.validation.time_to_visible_seconds
    return Measurement(seconds=seconds, rows=send.rows, client_cpu_seconds=send.client_cpu_seconds,
                       extra={"send_seconds": send.seconds})


def _parameters(options: TuneOptions, baseline: BenchOptions, source: Source, sink: SinkAddress | None) -> dict:
    values = {"target": str(options.target), "budget": options.budget, "rounds": options.rounds,
              "workers": baseline.threads, "worker_chunk_row_count": baseline.worker_chunk_row_count,
              "transport": str(baseline.transport), "protocol_version": str(baseline.protocol_version),
              "source": source.name}
    if sink is not None:  # into the sink: where the trials sent, and whether the sweep started that sink itself
        values.update(ilp_port=baseline.ilp_port, sender_address=baseline.sender_settings().address,
                      private_sink=sink.private)
    # What the data is, as the source says of itself (a TSBS data set's flags, the user's file and its audit).
    spec = baseline.dataset()
    described = source.record_parameters(spec, {"use_case": source.name, "row_count": source.rows(spec),
                                                "scale": baseline.scale})
    return options.spelling().values({**values, **{key: value for key, value in described.items()
                                                   if key not in values}})


def _plain(changes: dict) -> dict:
    return {key: value if isinstance(value, (bool, int, float)) or value is None else str(value)
            for key, value in changes.items()}


def ranked_table(comparison, settings: list[Setting]) -> str:
    """The settings ranked by their paired ratio of rows/s against the setting as is."""
    summary = comparison.summary

    def key(setting: Setting) -> float:
        figure = summary.get(setting.name, {}).get(RANKED_FIGURE)
        return figure.paired_ratio if figure and figure.paired_ratio is not None else (1.0 if setting.name == AS_IS
                                                                                      else 0.0)

    rows = []
    for setting in sorted(settings, key=key, reverse=True):
        figures = summary.get(setting.name, {})
        rate, cpu, rows_figure = (figures.get(name) for name in (RANKED_FIGURE, "client_cpu_seconds", "rows"))
        cpu_per_million = (cpu.median / (rows_figure.median / 1e6)) if cpu and rows_figure and rows_figure.median \
            else None
        rows.append((setting.name, f"{rate.median / 1e6:.2f}" if rate else "-",
                     f"{cpu_per_million:.2f}" if cpu_per_million is not None else "-",
                     "baseline" if setting.name == comparison.baseline else (rate.paired_text() if rate else "-")))
    counted = len(comparison.counted_rounds())
    coverages = [figures[RANKED_FIGURE].paired_confidence for figures in summary.values()
                 if RANKED_FIGURE in figures and figures[RANKED_FIGURE].paired_confidence is not None]
    coverage = f" (covering the median ratio with {min(coverages):.1%} or more)" if coverages else ""
    return (f"Ranked ({counted} rounds; medians; paired ratio of rows/s to the setting as is, its interval"
            f"{coverage} and standing):\n" + plain_table(("setting", "Mrows/s", "CPU s/Mrow", "vs as is"), rows))
