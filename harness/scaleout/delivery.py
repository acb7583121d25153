"""A scale-out run's records gathered by the run itself, with no disk shared and no file copied by hand: each
client, when its run ends, delivers its record to the QuestDB the run meets at (``deliver``), into a table of
the harness's own, ``harness_records``; whoever coordinates the run reads them back there (``gather``, what
``harness merge --from-server RUN`` calls), writes each client's record beside the whole run's, and merges
them (``harness.scaleout.merge``).

A record travels as its file's bytes, compressed and written in URL-safe base64, cut into pieces that an
``/exec`` request carries (one row each: run, client, piece, pieces, body). A reader takes a client's record
only once every piece is visible, so a half-delivered record is never read. The table is created if missing
and never dropped, as ``harness_clients`` (``harness.scaleout.meeting``): runs share it, each under its own
run name.

A client whose host is lost delivers nothing and cannot say ``failed`` at the meeting: the coordinator that
saw it lost says it for that client (``gather``'s ``lost``), so every client waiting for it stops at once, and
the merged record names it (absent, with the reason) beside what the others did.
"""

from __future__ import annotations

import base64
import time
import zlib
from pathlib import Path
from typing import TextIO

from harness.errors import RunError, UsageError
from harness.output_file import whole_file
from harness.questdb.credentials import http_login
from harness.questdb.http import QuestDBQueryError, QuestDBSql
from harness.questdb.tls import http_tls
from harness.records.run_record import RunRecord
from harness.records.store import load_results, write_results
from harness.scaleout.meeting import Meeting, TablePlace, check_run_name
from harness.scaleout.merge import merge_records, summary

TABLE = "harness_records"
# Base64 characters per row: an /exec URL of one piece stays far below QuestDB's request header buffer (64 KiB).
PIECE_CHARS = 16_000
POLL_SECONDS = 0.5
# A delivery is the run's last word to its server: brief, as the server may be what failed.
DELIVERY_SECONDS = 20.0


class RecordsTable:
    """Table ``harness_records`` of the QuestDB a run meets at: the clients' records, in pieces."""

    def __init__(self, questdb: QuestDBSql):
        self.questdb = questdb
        questdb.exec(f"CREATE TABLE IF NOT EXISTS {TABLE} (run SYMBOL, client INT, piece INT, pieces INT, "
                     f"body VARCHAR, ts TIMESTAMP) TIMESTAMP(ts) PARTITION BY DAY WAL")

    def deliver(self, run: str, client: int, record: bytes) -> None:
        """Client ``client``'s record (its file's bytes) for run ``run``."""
        packed = base64.urlsafe_b64encode(zlib.compress(record, 6)).decode()
        pieces = [packed[start:start + PIECE_CHARS] for start in range(0, len(packed), PIECE_CHARS)]
        for index, body in enumerate(pieces):  # URL-safe base64 and a checked run name: nothing to escape
            self.questdb.exec(f"INSERT INTO {TABLE} VALUES ('{check_run_name(run)}', {client}, {index}, "
                              f"{len(pieces)}, '{body}', now())")

    def delivered(self, run: str) -> dict[int, bytes]:
        """The records of run ``run`` delivered whole so far, by client."""
        _, rows = self.questdb.query(f"SELECT client, piece, pieces, body FROM {TABLE} "
                                     f"WHERE run = '{check_run_name(run)}'")
        pieces: dict[int, dict[int, str]] = {}
        counts: dict[int, int] = {}
        for client, piece, count, body in rows:
            pieces.setdefault(client, {})[piece] = body
            counts[client] = count
        return {client: zlib.decompress(base64.urlsafe_b64decode("".join(got[index] for index in range(counts[client]))))
                for client, got in pieces.items() if len(got) == counts[client]}


def deliver(questdb: QuestDBSql, run: str, client: int, path: Path) -> None:
    """Deliver the record written at ``path`` (client ``client`` of run ``run``); RunError in one line if the
    server does not take it within ``DELIVERY_SECONDS``."""
    record = path.read_bytes()
    try:
        with questdb.bounded(DELIVERY_SECONDS):
            RecordsTable(questdb).deliver(run, client, record)
    except QuestDBQueryError as exc:
        raise RunError(f"cannot deliver the record to {questdb.address}: {exc}") from None


def gather(questdb: QuestDBSql, run: str, clients: int, folder: Path, lost: dict[int, str], wait: float,
           out: TextIO) -> RunRecord:
    """The whole run's record from what its clients delivered: each lost client (client -> why) is said
    ``failed`` at the meeting first; then every other client's record is awaited for up to ``wait`` seconds,
    written to ``folder/client-<i>.json`` as delivered, and merged, a client that delivered none named as
    absent. RunError when no client delivered a record."""
    check_run_name(run)
    if clients < 1 or any(not 0 <= client < clients for client in lost):
        raise UsageError(f"--lost: clients are numbered 0 to {clients - 1}")
    place = TablePlace(questdb)
    for client, reason in sorted(lost.items()):
        Meeting(place, run, client, clients, timeout=0).failed(RunError(reason))
        out.write(f"told run {run}'s clients that client {client} failed: {reason}\n")
    table = RecordsTable(questdb)
    awaited = set(range(clients)) - set(lost)
    deadline = time.monotonic() + wait
    while True:
        records = table.delivered(run)
        if awaited <= set(records) or time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
    if not records:
        raise RunError(f"run {run}: no client delivered its record to {questdb.address} within {wait:g}s")
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for client, record in sorted(records.items()):
        path = folder / f"client-{client}.json"
        with whole_file(path, "client record") as file:
            file.write(record)
        paths.append(path)
    absent = {client: lost.get(client, f"delivered no record within {wait:g}s")
              for client in range(clients) if client not in records}
    return merge_records(load_results(paths), absent)


def lost_clients(given: list[str]) -> dict[int, str]:
    """``--lost CLIENT:REASON`` values as each lost client's reason ("lost" where none is given); a UsageError
    naming the value unless CLIENT is a number."""
    told = {}
    for text in given:
        client, _, reason = text.partition(":")
        if not client.isdigit():
            raise UsageError(f"merge --lost {text!r}: give CLIENT:REASON, CLIENT a number")
        told[int(client)] = reason or "lost"
    return told


def run_gather(run: str, clients: int, host: str, http_port: int, lost: list[str], wait: float,
               results: str | None, results_dir: str, out: TextIO) -> RunRecord:
    """``harness merge --from-server RUN``: gather from the QuestDB at ``host:http_port`` (its login and TLS from
    the environment, as the clients had them), write and print the whole run's record; ``lost``: the
    ``--lost CLIENT:REASON`` values. The clients' records go to the merged record's folder (results/NAME/ beside
    results/NAME.json)."""
    told = lost_clients(lost)
    questdb = QuestDBSql(host, http_port, login=http_login(), tls=http_tls())
    folder = Path(results).with_suffix("") if results else Path(results_dir) / run
    merged = gather(questdb, run, clients, folder, told, wait, out)
    write_results(merged, Path(results) if results else None, results_dir)
    out.write(summary(merged) + f"\nResults: {merged.path}\n")
    return merged
