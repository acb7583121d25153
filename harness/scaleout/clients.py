"""``bench --clients N`` on one machine: N client processes, client i sending TSBS's interleaved group i of
N, each pinned to its own share of this process's CPUs, meeting at the server (``harness.scaleout.meeting``), then
their records merged into the whole run's (``harness.scaleout.merge``). The Compose and Swarm targets run the same
clients as containers and merge the same way.

Each client is a fresh interpreter (multiprocessing's spawn: nothing inherited but its options), writes its
progress to its own log beside the records, and its own record; the launcher prints the CPU split, where the
logs are, and the merged result. Ctrl-C or SIGTERM reaches every client (they end as one run does: record
written as interrupted), and the launcher merges what there is.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness.errors import HarnessError, RunError, UsageError
from harness.records.run_record import RunRecord
from harness.records.store import Recording, load_results, write_results
from harness.scaleout.merge import merge_records, summary


@dataclass(frozen=True)
class Launch:
    """A scale-out run to launch here: ``clients`` of them, the run's ``name`` (None: one is made), where the merged
    record goes (``recording``), whether they send into the sink (which has no table to meet at), the folder they
    meet in where one was given, the run's ``mode``, and each client's run: ``client(i, run name, its record's path,
    the meeting folder)`` makes what ``run_bench`` takes in client i's process."""

    clients: int
    name: str | None
    recording: Recording
    into_sink: bool
    meeting_folder: str | None
    mode: str
    client: Callable[[int, str, str, str | None], object]


# A client that does not end this long after the others were told to stop is killed.
STOP_GRACE_SECONDS = 30.0


def cpu_shares(cpus: list[int], clients: int) -> list[list[int]]:
    """Client i's CPUs: a contiguous share of ``cpus`` each; with fewer CPUs than clients, clients share
    CPUs round robin (and the split says so)."""
    if clients <= len(cpus):
        size, extra = divmod(len(cpus), clients)
        shares, start = [], 0
        for client in range(clients):
            end = start + size + (client < extra)
            shares.append(cpus[start:end])
            start = end
        return shares
    return [[cpus[client % len(cpus)]] for client in range(clients)]


def run_clients(launch: Launch, out: TextIO, run_bench: Callable[..., RunRecord]) -> RunRecord:
    """Run ``launch``'s clients of one run here, each ``run_bench(its options, out=its log)`` in a process of its
    own; returns the merged record (also written)."""
    clients = launch.clients
    run_name = launch.name or f"clients-{uuid.uuid4().hex[:8]}"
    merged_path = launch.recording.path(f"{launch.mode}-{clients}clients")
    folder = merged_path.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    shares = cpu_shares(sorted(os.sched_getaffinity(0)), clients)
    # The sink has no table to meet at: its clients, all on this machine, meet in the run's folder.
    meeting_folder = str(folder / "meeting") if launch.into_sink else launch.meeting_folder
    children, paths = [], []
    context = multiprocessing.get_context("spawn")
    out.write(f"{clients} clients, run {run_name}; records and logs in {folder}/\n")
    for client, cpus in enumerate(shares):
        path = folder / f"client-{client}.json"
        paths.append(path)
        child = launch.client(client, run_name, str(path), meeting_folder)
        out.write(f"  client {client}: group {client} of {clients}, CPUs {','.join(map(str, cpus))}\n")
        process = context.Process(target=_client, args=(run_bench, child, cpus, str(folder / f"client-{client}.log")),
                                  name=f"client-{client}")
        children.append(process)
    out.flush()
    try:
        for process in children:
            process.start()
        for process in children:
            process.join()
    except KeyboardInterrupt:
        _stop(children)
        raise
    finally:
        _stop(children)
    written = [path for path in paths if path.exists()]
    for client, process in enumerate(children):
        if process.exitcode:
            out.write(f"  client {client} exited {process.exitcode}: {_last_line(folder / f'client-{client}.log')}\n")
    if len(written) < clients:
        raise RunError(f"only {len(written)} of {clients} clients left a record (logs in {folder}/)")
    merged = merge_records(load_results(written))
    write_results(merged, merged_path)
    out.write(summary(merged) + f"\nResults: {merged.path}\n")
    if launch.recording.report:
        from harness.report.html import write_report  # matplotlib: only when asked

        out.write(f"Report: {write_report([merged], merged.path.with_suffix('.html'))}\n")
    if merged.status != "ok":
        raise RunError(merged.error or f"the run ended {merged.status}")
    return merged


def _client(run_bench: Callable[..., RunRecord], options, cpus: list[int], log: str) -> None:
    """One client process: pinned, its progress into its log, its error as the log's last line."""
    signal.signal(signal.SIGTERM, _interrupt)  # as the command line does: the run ends and records itself
    os.sched_setaffinity(0, cpus)
    with open(log, "w", buffering=1) as out:
        try:
            run_bench(options, out=out)
        except (HarnessError, KeyboardInterrupt) as exc:
            out.write(f"error: {exc or 'interrupted'}\n")
            sys.exit(2 if isinstance(exc, UsageError) else 1)


def _interrupt(signum: int, frame) -> None:
    raise KeyboardInterrupt


def _stop(children: list) -> None:
    for process in children:
        if process.is_alive():
            process.terminate()  # SIGTERM: the client ends its run and writes its record
    for process in children:
        process.join(STOP_GRACE_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "empty log"
