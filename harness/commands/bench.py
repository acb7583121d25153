"""The ``bench`` command: TSBS DataFrames generated, serialized and (``--send``) sent, the count validated,
the run recorded. ``run_bench(BenchOptions(...))`` is what ``python -m harness bench`` calls and what
tests and notebooks call directly.

The options are ``harness.run.bench_options``'s; the phases are ``harness.run.bench_phases``;
the run's lifecycle is the session's (``harness.run.session``), and so is the no-op sink a run of the user's
data starts for itself where none listens (``into_sink``); the data set is the use case's
(``harness.tsbs.use_cases``).
"""

from __future__ import annotations

import dataclasses
import pprint
import sys
from typing import TextIO

from harness.errors import ThresholdsFailed
from harness.ingest.senders import SenderSettings
from harness.questdb.conf import redact_conf
from harness.options.declare import command
from harness.records.run_record import RunRecord
from harness.run.bench_options import TSBS_DATA_SET_OPTIONS, BenchOptions
from harness.run.bench_phases import bench_phases
from harness.run.open_loop import missed_thresholds
from harness.run.session import Run, into_sink, metered, profiled, sampled
from harness.scaleout.clients import run_clients
from harness.scaleout.meeting import run_seed
from harness.telemetry.metrics import RunMetrics
from harness.tsbs import params


def bench_parameters(options: BenchOptions, spec: params.DatasetSpec, target: SenderSettings) -> dict:
    values = dataclasses.asdict(options)
    # What was really used: --conf wins over --transport and --protocol-version, and its secrets are never
    # recorded.
    values.update(target.used())
    conf = options.client_conf()
    if conf is not None:
        values["conf"] = redact_conf(conf)
        values["conf_source"] = "--conf" if options.conf is not None else "QDB_CLIENT_CONF"
    if options.own_data:  # the user's data: its own rows, table and columns, no TSBS data set
        source = options.use_case_entry
        for name in TSBS_DATA_SET_OPTIONS:
            values.pop(name, None)
        # The user's data is always made into chunks while sending: the record says what ran.
        values.update(use_case=source.name, data=source.data.name, row_count=options.source_rows(spec), stream=True,
                      table=source.table_name, at=source.at, symbols=list(source.symbol_columns),
                      audit=[audit.stored() for audit in source.audits],
                      conversion_seconds=round(source.conversion_seconds, 3))
        if reading := source.data.described():
            values["reading"] = reading
        return values
    values.update(seed=spec.seed, row_count=spec.row_count, timestamp_start_ns=spec.start_ns,
                  interval_ns=spec.interval_ns)
    return values


@command
def run_bench(options: BenchOptions, out: TextIO | None = None) -> RunRecord | None:
    """Run one benchmark; returns its record (also written as JSON), or None after a --dry-run's checks.
    Raises UsageError/RunError."""
    out = out or sys.stdout
    with into_sink(options, out) as options:  # a private no-op sink where the run needs one and none listens
        return _run(options, out)


def _run(options: BenchOptions, out: TextIO) -> RunRecord:
    if options.clients > 1:  # the launcher: its clients are bench runs of their own
        return run_clients(options, out, run_bench)
    seed_from_name = options.barrier is not None and options.seed is None
    if seed_from_name:
        options = dataclasses.replace(options, seed=run_seed(options.barrier))
    target = options.sender_settings()
    spec = options.dataset()
    parameters = bench_parameters(options, spec, target)
    # The clients of a scale-out run share its name as their run id: one run in the metrics and the records.
    shared_id = {"run_id": options.barrier} if options.barrier else {}
    seed = None if options.own_data else spec.seed
    run = Run(RunRecord(kind="bench", mode=options.mode, parameters=parameters, seed=seed, **shared_id), options, out)
    if options.verbose:
        run.say("Running with params:")
        run.say(pprint.pformat(dict(sorted(parameters.items())), indent=4))
    elif options.own_data:
        from harness.own_data.audit import audit_table

        source = options.use_case_entry
        run.say(f"data: {source.data.name}, {parameters['row_count']} rows into table {source.table_name} (designated "
                f"timestamp {source.at}; symbols: {', '.join(source.symbol_columns) or 'none'})")
        for line in source.data.reading_lines():
            run.say(line)
        run.say(audit_table(source.audits, source.data.is_file()))
        if source.conversion_seconds:
            run.say(f"Converted the DataFrames' dtypes once, before sending: {source.conversion_seconds:.2f}s.")
    elif options.seed is None or seed_from_name:
        run.say(f"seed: {spec.seed}{' (from the run name)' if seed_from_name else ''}")
    metrics = RunMetrics(run.record.run_id, _metric_labels(parameters), options.metrics_port,
                         options.metrics_linger, workers=options.threads, host=options.metrics_host)
    with metered(run, metrics), sampled(options, run, metrics.phases), profiled(options, run):
        bench_phases(options, spec, target, run, metrics)
    missed = missed_thresholds(run)
    if missed:  # the run ended well and is recorded so; its exit code says what it missed
        raise ThresholdsFailed(missed)
    return run.record


def _metric_labels(parameters: dict) -> dict:
    """The run's info labels, from what the record says was used."""
    labels = {key: str(parameters.get(key, "")) for key in ("transport", "fields", "scale", "seed", "op", "target")}
    return {**labels, "workers": str(parameters["workers"] or 1), "protocol": str(parameters["protocol_version"])}
