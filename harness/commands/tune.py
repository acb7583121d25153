"""The ``tune`` command: the user's data (or a TSBS data set) sent with the user's setting and with each
setting of the sweep (``harness.run.tune.grid``), trials alternated in rounds within a time budget, ranked by
rows/s with paired intervals against the user's setting, a recommendation that states its measured gain (or
"level"), and the code that applies it. One benchmark record; ``--report`` adds the HTML report with the
sweep's chart. ``run_tune(TuneOptions(...))`` is what ``python -m harness tune`` and ``harness.tune()`` call.

Each trial is a ``bench`` run of its own (``run_bench``), in this process, its chunks made while sending:
client-only into the socat sink by default (where nothing listens at --host:--sink-port, a private sink the
sweep starts and stops: ``harness.run.session.into_sink``); with ``--target questdb`` into a scratch table the
sweep makes (``harness_tune_<run>``, claimed by each trial as every run's tables are) and drops when it ends,
however it ends. Into QuestDB, a trial's time runs until its rows are visible.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.commands.bench import run_bench
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
from harness.records.alternation import alternate
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.records.store import default_results_path, write_benchmark_record
from harness.report.tables import plain_table
from harness.run.bench_options import BenchOptions
from harness.run.tune import AS_IS, RANKED_FIGURE, Setting, grid, recommend, setting_code
from harness.run.session import into_sink
from harness.servers.sink import DEFAULT_SINK_PORT, PRIVATE_SINK_HOST, SinkAddress
from harness.sources import DATA

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
    private_sink: str | None = option(None, "The no-op sink started for this sweep alone (socat, or python where "
                                            "socat is missing) on a loopback port of its own (--sink-port), nothing "
                                            "having listened at --host:--sink-port.", cli=False)

    @functools.cached_property
    def baseline(self) -> BenchOptions:
        """The user's own setting as a bench run: what every trial starts from (its data read once)."""
        into_sink = {}
        if self.target == Target.sink:
            into_sink["ilp_port"] = self.sink_port
            if self.private_sink is not None:
                into_sink["host"] = PRIVATE_SINK_HOST
        # --profile profiles two trials after the sweep (``_profiled_trials``), not the sweep's own.
        options = BenchOptions.shared_with(self, profile=False, profile_wall=False, **into_sink)
        return options.sending(self.__dict__["sent_source"]) if "sent_source" in self.__dict__ else options

    def sending(self, source) -> TuneOptions:
        """These options, sweeping ``source`` (the notebook API's DataFrames)."""
        self.__dict__["sent_source"] = source
        return self

    def sink_endpoint(self) -> tuple[str, int] | None:
        """Where the sweep sends into the no-op sink, starting a private one there if nothing listens
        (``harness.run.session.into_sink``); None into QuestDB, with a --conf (its own address), or once pointed
        at a private sink."""
        if self.target != Target.sink or self.private_sink is not None or self.client_conf() is not None:
            return None
        return self.host, self.sink_port

    def at_sink(self, sink: SinkAddress) -> TuneOptions:
        """These options, the trials sending into the private ``sink`` (--host stays the user's: the code the
        sweep prints sends there), the data already read kept."""
        moved = dataclasses.replace(self, sink_port=sink.port, private_sink=sink.private)
        return moved.sending(self.baseline.use_case_entry)

    def check_values(self) -> None:
        super().check_values()
        self.refuse_table_flags("a sweep sends into the sink or a scratch table of its own")
        baseline = self.baseline
        baseline.check_values()
        if self.target == Target.questdb and not baseline.use_case_entry.renamable_table:
            raise UsageError(f"--target questdb: a sweep sends into one scratch table; {baseline.use_case_entry.name} "
                             f"writes several (--target sink sweeps it)")


@command
def run_tune(options: TuneOptions, out: TextIO | None = None) -> BenchmarkRecord | None:
    """Sweep; returns the benchmark record (also written as JSON). Raises UsageError/RunError."""
    out = out or sys.stdout
    with into_sink(options, out) as options:  # a private no-op sink where none listens
        return _sweep(options, out)


def _sweep(options: TuneOptions, out: TextIO) -> BenchmarkRecord:
    baseline = options.baseline
    source = baseline.use_case_entry
    settings = options.settings or grid(baseline)
    path = Path(options.results) if options.results else default_results_path("tune", options.results_dir)
    run_id = uuid.uuid4().hex[:12]
    scratch = f"{SCRATCH_PREFIX}{run_id}" if options.target == Target.questdb else None
    say = _printer(out)
    trial_options = {setting.name: _setting_options(setting, baseline, scratch) for setting in settings}
    rows = baseline.source_rows(baseline.dataset())
    say(f"Sweep: {len(settings)} settings, {rows} rows each, into "
        f"{'the sink' if scratch is None else f'QuestDB (scratch table {scratch})'}; up to {options.rounds} rounds "
        f"after a warm-up, within {options.budget:g}s")
    if source.name == DATA:
        say(audit_text(source))
    trials = tempfile.mkdtemp(prefix="harness-tune-")
    started = time.perf_counter()
    round_seconds: dict[int, float] = {}

    def trial(setting: Setting):
        def measure(round_number: int) -> Measurement:
            say(f"  round {round_number or 'warm-up'}: {setting.name}")
            began = time.perf_counter()
            try:
                return _trial(trial_options[setting.name], f"{trials}/{round_number}-{settings.index(setting)}.json")
            finally:
                round_seconds[round_number] = round_seconds.get(round_number, 0.0) + time.perf_counter() - began
        return measure

    def out_of_budget(round_number: int) -> bool:
        longest, spent = max(round_seconds.values()), time.perf_counter() - started
        if spent + longest <= options.budget:
            return False
        say(f"  budget: a round takes up to {longest:.1f}s and {options.budget - spent:.1f}s of {options.budget:g}s "
            f"are left: the sweep ends after {round_number - 1} counted rounds")
        return True

    record = BenchmarkRecord(benchmark="tune", parameters=_parameters(options, baseline, settings, scratch))
    try:
        comparison = alternate({setting.name: trial(setting) for setting in settings}, options.rounds,
                               name="settings", warm_up=True, stop_before=out_of_budget,
                               parameters={"figure": RANKED_FIGURE})
    except BaseException as exc:
        # A sweep that ends early (a trial failed, Ctrl-C) still leaves its record, saying how it ended.
        record.ended_early(exc, time.perf_counter() - started)
        say(f"Results: {write_benchmark_record(record, path)}")
        raise
    finally:
        shutil.rmtree(trials, ignore_errors=True)
        if scratch is not None:
            _drop_scratch(options, scratch, say)
    record.extra["status"] = "ok"
    record.comparisons.append(comparison)
    advice = recommend(comparison, settings)
    chosen = trial_options[advice.setting.name] if advice.setting is not None else trial_options[settings[0].name]
    # The code sends to where the user's own setting points (their server: not the sink, not the scratch table).
    code = setting_code(dataclasses.replace(chosen, target=Target.questdb, host=options.host,
                                            ilp_port=options.ilp_port, table=None, replace_table=False,
                                            private_sink=None).sending(chosen.use_case_entry)) \
        if source.name == DATA else None
    record.extra.update(recommendation={"setting": advice.setting.name if advice.setting else None,
                                        "changes": _plain(advice.setting.changes) if advice.setting else {},
                                        "text": advice.text},
                        code=code, seconds=round(time.perf_counter() - started, 1),
                        settings={setting.name: _plain(setting.changes) for setting in settings})
    say(ranked_table(comparison, settings))
    say(f"Recommendation: {advice.text}")
    if options.profile:
        try:
            record.extra["profiles"] = _profiled_trials(options, path, trial_options, comparison.baseline,
                                                        advice.setting.name if advice.setting else None, say)
        finally:
            if scratch is not None:
                _drop_scratch(options, scratch, say)
    if code is not None:
        say("Code that sends the data so (run as printed):\n" + code)
    written = write_benchmark_record(record, path)
    say(f"Results: {written}")
    if options.report:
        from harness.report.html import write_report  # matplotlib: only when the report is asked for

        say(f"Report: {write_report([], written.with_suffix('.html'), [record])}")
    return record


def _setting_options(setting: Setting, baseline: BenchOptions, scratch: str | None) -> BenchOptions:
    """The bench options of a setting's trials: into the scratch table (QuestDB) or the sink; a setting with
    the dtype conversions or another protocol version gets a source of its own (the same data, already opened:
    the table's types follow the protocol version, the pieces the conversions), made once."""
    options = dataclasses.replace(setting.applied(baseline), table=scratch, replace_table=scratch is not None)
    source = baseline.use_case_entry
    if source.name == DATA:
        variant = {"convert_dtypes": options.convert_dtypes,
                   "protocol_version": options.sender_settings().offline_protocol_version()}
        if any(getattr(source, key) != value for key, value in variant.items()):
            source = dataclasses.replace(source, **variant)
    return options.sending(source)


def _trial(options: BenchOptions, results: str) -> Measurement:
    """One bench run of the sweep, its output kept quiet; its send phase (into QuestDB: until visible)."""
    options = dataclasses.replace(options, results=results).sending(options.use_case_entry)
    quiet = io.StringIO()
    try:
        record = run_bench(options, quiet)
    except (UsageError, RunError) as exc:
        raise RunError(f"a trial failed: {exc}") from None
    send = record.phases["send"]
    seconds = send.seconds
    if record.validation is not None:
        seconds += record.validation.time_to_visible_seconds
    return Measurement(seconds=seconds, rows=send.rows, client_cpu_seconds=send.client_cpu_seconds,
                       extra={"send_seconds": send.seconds})


def _profiled_trials(options: TuneOptions, path: Path, trial_options: dict[str, BenchOptions], baseline: str,
                     recommended: str | None, say) -> dict:
    """With --profile, after the sweep: the baseline's trial and the recommendation's run once more, each profiled
    (both sides, ``harness.profiling``), their records kept beside the sweep's; each one's verdict and buckets."""
    profiles = {}
    for index, name in enumerate(dict.fromkeys(name for name in (baseline, recommended) if name is not None)):
        results = path.with_name(f"{path.stem}-profile-{index + 1}.json")
        options_profiled = dataclasses.replace(trial_options[name], profile=True, profile_wall=options.profile_wall,
                                               profile_rate=options.profile_rate, results=str(results))
        try:
            record = run_bench(options_profiled.sending(options_profiled.use_case_entry), io.StringIO())
        except (UsageError, RunError) as exc:
            raise RunError(f"the profiled trial of {name} failed: {exc}") from None
        figures = record.profile
        profiles[name] = {"record": results.name, "verdict": figures.verdict, "bound": figures.bound,
                          "client": figures.client.shares(),
                          "server": figures.server.shares() if figures.server is not None else None}
        say(f"Profile of {name} ({results.name}): {figures.verdict}")
    return profiles


def _drop_scratch(options: TuneOptions, table: str, say) -> None:
    questdb = options.questdb_sql()
    with contextlib.suppress(RunError, UsageError, Exception):
        if questdb.table_columns(table) is not None:
            questdb.drop_table(table)
            say(f"Dropped the scratch table {table}")


def _parameters(options: TuneOptions, baseline: BenchOptions, settings: list[Setting], scratch: str | None) -> dict:
    source = baseline.use_case_entry
    values = {"target": str(options.target), "budget": options.budget, "rounds": options.rounds,
              "workers": baseline.threads, "worker_chunk_row_count": baseline.worker_chunk_row_count,
              "transport": str(baseline.transport), "protocol_version": str(baseline.protocol_version),
              "source": source.name, "scratch_table": scratch}
    if scratch is None:  # into the sink: where the trials sent, and whether the sweep started that sink itself
        values.update(ilp_port=baseline.ilp_port, sender_address=baseline.sender_settings().address,
                      private_sink=options.private_sink)
    if source.name == "data":
        values.update(data=source.data.name, at=source.at, symbols=list(source.symbol_columns),
                      audit=[audit.stored() for audit in source.audits])
        if reading := source.data.described():
            values["reading"] = reading
    else:
        values.update(use_case=source.name, row_count=baseline.row_count, scale=baseline.scale)
    return values


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


def audit_text(source) -> str:
    """The dtype audit as the run prints it."""
    from harness.own_data.audit import audit_table

    read = "".join(line + "\n" for line in source.data.reading_lines())
    return f"{read}Dtype audit of {source.data.name}:\n{audit_table(source.audits, source.data.is_file())}"


def _printer(out: TextIO):
    def say(text: str) -> None:
        print(text, file=out, flush=True)
    return say


