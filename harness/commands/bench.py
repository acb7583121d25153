"""The ``bench`` command: TSBS DataFrames or the user's data (``--data``) serialized and (``--send``) sent, the
count validated, the run recorded. ``run_bench(BenchOptions(...))`` is what ``python -m harness bench`` calls and
what tests and notebooks call directly; ``run_plan(plan)`` runs a plan already made (``BenchOptions.plan``: a tuning
sweep's trials, a matrix's turns, the notebook's DataFrames).

The options are ``harness.run.bench_options``'s, checked at the door; the plan is made of them once; the phases are
``harness.run.bench_phases``; the run's lifecycle is the session's (``harness.run.session``); the no-op sink a run starts for itself where its
source says so and none listens is the command's (``planned``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import pprint
import sys
from collections.abc import Iterator
from typing import TextIO

from harness.errors import ThresholdsFailed
from harness.ingest.choices import Target
from harness.open_loop.thresholds import missed_thresholds
from harness.options.declare import command
from harness.records.run_record import RunRecord
from harness.run.bench_options import BenchOptions
from harness.run.bench_phases import bench_phases
from harness.run.plan import BenchPlan
from harness.run.session import session
from harness.scaleout.clients import Launch, run_clients
from harness.servers.sink import sink_at
from harness.source import Source


@command
def run_bench(options: BenchOptions, out: TextIO | None = None, source: Source | None = None) -> RunRecord | None:
    """Run one benchmark of ``source`` (default: the one the flags name; the notebook API hands its DataFrames'
    in); returns its record (also written as JSON), or None after a --dry-run's checks. Raises
    UsageError/RunError."""
    out = out or sys.stdout
    if options.clients > 1:  # the launcher: its clients are bench runs of their own
        launch = _launch(options)
        return run_clients(launch, out, run_bench)
    with planned(options, source, out) as plan:
        return run_plan(plan, out)


def run_plan(plan: BenchPlan, out: TextIO) -> RunRecord:
    """Run ``plan``; returns its record (also written as JSON)."""
    record = plan.record()
    with session(record, plan.lifecycle, out, plan.run_metrics) as run:
        if plan.verbose:
            run.say("Running with params:")
            run.say(pprint.pformat(dict(sorted(plan.parameters.items())), indent=4))
        else:
            for line in [*plan.source.describe(), *([plan.seed_said] if plan.seed_said else [])]:
                run.say(plan.lifecycle.spelling.text(line))
        for line in plan.cross_check.lines() if plan.cross_check is not None else ():
            run.say(plan.lifecycle.spelling.text(line))
        bench_phases(plan, run)
    missed = missed_thresholds(run)
    if missed:  # the run ended well and is recorded so; its exit code says what it missed
        raise ThresholdsFailed(missed)
    return run.record


@contextlib.contextmanager
def planned(options: BenchOptions, source: Source | None, out: TextIO) -> Iterator[BenchPlan]:
    """The run's plan for the block (``source``, or the one the options name, opened here), pointed at a private
    no-op sink, started for the block and stopped however it ends, where the run sends into the sink, its source
    starts one of its own and nothing listens (``harness.servers.sink.sink_at``, which says so on ``out``)."""
    source = source or options.source()
    endpoint = options.sink_endpoint(source)
    if endpoint is None:
        yield options.plan(source)
        return
    with sink_at(*endpoint, say=lambda text: print(text, file=out, flush=True)) as sink:
        at = options if sink.private is None else dataclasses.replace(options, host=sink.host, ilp_port=sink.port,
                                                                      private_sink=sink.private)
        yield at.plan(source)


def _launch(options: BenchOptions) -> Launch:
    """``--clients N`` on this machine: client i of N runs interleaved group i as one client of the run, its own
    record in the run's folder, a metrics port of its own where the run serves metrics."""
    def client(index: int, run_name: str, results: str, meeting_folder: str | None) -> BenchOptions:
        return dataclasses.replace(options, clients=1, barrier=run_name, report=False,
                                   interleaved_generation_group_id=index, interleaved_generation_groups=options.clients,
                                   results=results, barrier_folder=meeting_folder,
                                   metrics_port=options.metrics_port + index if options.metrics_port else None)

    recording, mode = options.recording(), options.plan().mode
    return Launch(options.clients, options.barrier, recording, options.target == Target.sink, options.barrier_folder,
                  mode, client)

