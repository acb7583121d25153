"""One record of a scale-out run from its clients' records: ``harness merge A.json B.json ...``, and what
``bench --clients N`` and the Compose and Swarm targets call when their clients are done.

The clients of one run (``--barrier`` names it) each sent TSBS's interleaved group i of N of one data set.
The merged record is the whole run's: each phase's rows, bytes, CPU seconds and flushes summed over the
clients, its time the union of the clients' windows (earliest start to latest end, from each phase's
wall-clock end; across hosts this trusts their clocks), so its rate is the whole data set over the time the
run really took; the validation is client 0's, which counted the whole data set once every client had sent;
``parameters.clients`` is N, and each client's own figures stay beside (``clients``). Records that are not
the N groups of one run's one data set are refused, naming the first difference.
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import UsageError
from harness.records.run_record import ClientFigures, RunRecord
from harness.records.store import load_results, write_results
from harness.report.tables import format_phase
from harness.telemetry.phase import PhaseRecord, WorkerTotals

GROUP_ID, GROUPS = "interleaved_generation_group_id", "interleaved_generation_groups"
# What every client of one run must share: the run's name and the data set it splits.
SHARED = ("barrier", GROUPS, "use_case", "seed", "scale", "timestamp_start_ns", "timestamp_end", "interval_ns",
          "fields", "time_ordered", "table")


LOST = "lost"


def merge_records(records: list[RunRecord], absent: dict[int, str] | None = None) -> RunRecord:
    """The whole run's record from its clients' (any order), the clients in ``absent`` (client -> why) left
    none; UsageError where they are not one run's N groups."""
    absent = absent or {}
    if not records:
        raise UsageError("merge: no records given")
    names = {id(record): record.path.name if record.path else f"record {index + 1}"
             for index, record in enumerate(records)}
    for record in records:
        if record.clients is not None:
            raise UsageError(f"merge: {names[id(record)]} is a merged record already; give its clients' records")
        if record.kind != "bench" or record.parameters.get("barrier") is None:
            raise UsageError(f"merge: {names[id(record)]} is not a client of a scale-out run (a bench run with "
                             f"--barrier)")
    records = sorted(records, key=lambda record: record.parameters.get(GROUP_ID) or 0)
    first = records[0]
    for record in records[1:]:
        for key in SHARED:
            if record.parameters.get(key) != first.parameters.get(key):
                raise UsageError(f"merge: {names[id(record)]} and {names[id(first)]} differ in {key} "
                                 f"({record.parameters.get(key)!r} vs {first.parameters.get(key)!r}): not one run")
    groups = first.parameters.get(GROUPS) or 1
    seen = [record.parameters.get(GROUP_ID) or 0 for record in records]
    if sorted(seen + list(absent)) != list(range(groups)):
        raise UsageError(f"merge: run {first.parameters['barrier']} has {groups} clients (groups 0 to {groups - 1}); "
                         f"these records hold groups {', '.join(map(str, seen))}"
                         + (f", and {', '.join(map(str, sorted(absent)))} left none" if absent else ""))
    failed = [record for record in records if record.status != "ok"]
    lost = [ClientFigures(client=client, results="", hostname=None, status=LOST, error=reason, rows=None,
                          seconds=None, client_cpu_seconds=None, ended_at=None)
            for client, reason in sorted(absent.items())]
    if lost:
        status, error = "failed", f"client {lost[0].client} {LOST}: {lost[0].error}"
    elif failed:
        status, error = failed[0].status, f"client {failed[0].parameters.get(GROUP_ID) or 0}: {failed[0].error}"
    else:
        status, error = "ok", None
    merged = RunRecord(
        kind="bench", mode=f"{first.mode}-{groups}clients", run_id=first.run_id,
        parameters={**{key: value for key, value in first.parameters.items() if key != GROUP_ID},
                    "clients": groups, "results": None},
        seed=first.seed, started_at=min(record.started_at for record in records), system=first.system,
        server=first.server,
        phases={name: _merged_phase([record.phases[name] for record in records])
                for name in first.phases if all(name in record.phases for record in records)},
        validation=first.validation,
        clients=sorted([_client_figures(record, names[id(record)]) for record in records] + lost,
                       key=lambda figures: figures.client),
        status=status, error=error)
    if status == "ok" and first.validation is None and first.parameters.get("target") != "sink":
        merged.status, merged.error = "failed", "client 0's record has no validation of the whole data set"
    return merged


def _merged_phase(phases: list[PhaseRecord]) -> PhaseRecord:
    if all(phase.ended_at is not None for phase in phases):
        end = max(phase.ended_at for phase in phases)
        seconds = end - min(phase.started_at for phase in phases)
    else:  # records from before phases kept their end: the slowest client's time is the lower bound
        end, seconds = None, max(phase.seconds for phase in phases)
    tables: dict[str, int] = {}
    for phase in phases:
        for table, rows in phase.tables.items():
            tables[table] = tables.get(table, 0) + rows
    cpu = [phase.client_cpu_seconds for phase in phases]
    return PhaseRecord(
        rows=sum(phase.rows for phase in phases), bytes=sum(phase.bytes for phase in phases), seconds=seconds,
        client_cpu_seconds=sum(cpu) if None not in cpu else None, flushes=sum(phase.flushes for phase in phases),
        workers=[WorkerTotals(phase.rows, phase.bytes) for phase in phases], tables=tables,
        resent_chunks=sum(phase.resent_chunks for phase in phases),
        outage_seconds=sum(phase.outage_seconds for phase in phases), ended_at=end)


def _client_figures(record: RunRecord, name: str) -> ClientFigures:
    send = record.phases.get("send")
    return ClientFigures(
        client=record.parameters.get(GROUP_ID) or 0, results=name, hostname=record.system.get("hostname"),
        status=record.status, error=record.error, rows=send.rows if send else None,
        seconds=send.seconds if send else None, client_cpu_seconds=send.client_cpu_seconds if send else None,
        ended_at=send.ended_at if send else None)


def summary(merged: RunRecord) -> str:
    """What the whole run did, then each client's send."""
    lines = [f"{merged.parameters['clients']} clients, run {merged.parameters['barrier']}:"]
    if "send" in merged.phases:
        lines.append(format_phase("Sent (all clients, over the union of their send windows)", merged.phases["send"]))
    if merged.validation is not None:
        lines.append(f"Validated by client 0: {merged.validation.visible_rows} of {merged.validation.expected_rows} "
                     f"rows visible")
    for client in merged.clients or []:
        rate = client.rows_per_second
        lines.append(f"  client {client.client} ({client.hostname or '-'}): {client.status}, "
                     + (f"{client.rows} rows in {client.seconds:.2f}s: {rate / 1e6:.2f} mil rows/sec"
                        if rate is not None else "no send phase")
                     + (f"; {client.error}" if client.error else ""))
    return "\n".join(lines)


def run_merge(paths: list[str], results: str | None = None, results_dir: str = "results") -> RunRecord:
    """``harness merge``: read the clients' records, write and print the whole run's."""
    merged = merge_records(load_results(paths))
    write_results(merged, Path(results) if results else None, results_dir)
    print(summary(merged))
    print(f"Results: {merged.path}")
    return merged

