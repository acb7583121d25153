"""One run per table at a time: a run claims its tables on the server before any DDL, and refuses in one line
when another live run holds one of them. This module owns the claims' table and every statement on it.

The claims live on the server itself, in the harness's own table ``harness_runs`` (created on first use,
without WAL so that a row is visible to every reader as soon as its insert answers). A run inserts a
``claim`` row (its id, its tables, who it is), then reads every row of the last ``STALE_SECONDS`` by the
server's clock: a run is alive while its rows keep coming (a ``beat`` every ``BEAT_SECONDS``, from a thread
of its own) and it has written no ``done``. Of two live runs that share a table, the one that claimed first
(ties: the smaller run id) goes on; the other writes ``done`` and refuses, before its DDL.

A claim's stamp (the server's ``now()``) can be taken before its row becomes visible (an insert that waits
for the registry's writer), so a run may find a later claim that did not see its own and went on alone.
Hence a run that comes first but sees a later live claim on its tables waits for that run's word: ``go``
(it went on: this run refuses) or ``done`` (it refused or already ended: this run goes on). A run that goes
on writes ``go`` before its DDL. Of any two runs, the one whose claim became visible last reads the other's,
so two runs started at the same moment cannot both go on.

Limits: only harness runs claim (another writer, say Telegraf, or a harness version without claims, is not seen);
a run whose process is paused stops beating and its claim lapses after ``STALE_SECONDS``, while one that
was killed on this host frees its tables at once (its pid is gone); runs on different hosts see each other
through the server, as long as they name it alike.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import psutil

from harness.errors import RunError, UsageError
from harness.questdb.http import QuestDBQueryError, QuestDBSql, checked_table_name, sql_string

REGISTRY = "harness_runs"
BEAT_SECONDS = 1.0
STALE_SECONDS = 10.0
# A beat or the release waits this long for a server that does not answer: it never holds the run.
REQUEST_SECONDS = 2.0
# How long a run that claimed first waits for a later claim's go or done: that run decides as soon as its
# one read answers, so this is only reached when it hangs; this run then refuses rather than guess.
DECISION_SECONDS = 2 * REQUEST_SECONDS + BEAT_SECONDS


class TableClaim:
    """This run's claim on ``tables``: ``take()`` claims them or refuses; ``release()`` ends the claim."""

    def __init__(self, questdb: QuestDBSql, run_id: str, tables: list[str]):
        self.questdb = questdb.copy(timeout=REQUEST_SECONDS)
        self.run_id = run_id
        self.tables = sorted({table.lower() for table in tables})
        self.owner = f"pid {os.getpid()} on {socket.gethostname()}"
        self.claimed: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="table-claim", daemon=True)

    def _add(self, state: str) -> None:
        add_claim(self.questdb, REGISTRY, self.run_id, self.tables, state, self.claimed, self.owner)

    def take(self) -> None:
        """Claim the tables, or raise UsageError naming the live run that holds one of them."""
        create_claims(self.questdb, REGISTRY)
        self._add("claim")
        runs = self._live_runs()
        mine = runs.get(self.run_id)
        if mine is None:
            raise RunError(f"the server did not keep this run's claim in {REGISTRY}")
        self.claimed = mine["claimed"]
        later: list[str] = []
        for run_id, run in sorted(runs.items(), key=lambda item: (item[1]["claimed"], item[0])):
            if run_id == self.run_id:
                continue
            if not self._contends(run):
                continue
            if (run["claimed"], run_id) > (self.claimed, self.run_id):
                later.append(run_id)
            else:
                self._refuse(run_id, run, "")
        self._await(later)
        self._add("go")
        self._thread.start()

    def _live_runs(self) -> dict[str, dict]:
        """The registry's runs of the last ``STALE_SECONDS``: per run id its first claim, tables, owner, last
        row and the states it wrote."""
        runs: dict[str, dict] = {}
        for row in recent_claims(self.questdb, REGISTRY, STALE_SECONDS):
            run = runs.setdefault(row["run_id"], {"states": set(), "claimed": row["claimed"], "tables": set(),
                                                  "owner": row["owner"], "last": row["ts"]})
            run["states"].add(row["state"])
            run["tables"] |= set(filter(None, str(row["tables"]).split(",")))
            run["claimed"] = min(run["claimed"], row["claimed"])
            run["last"] = max(run["last"], row["ts"])
        return runs

    def _contends(self, run: dict) -> bool:
        """Whether ``run`` shares a table with this one and may still be writing it."""
        return bool(run["tables"] & set(self.tables)) and "done" not in run["states"] and not self._died(run["owner"])

    def _await(self, later: list[str]) -> None:
        """Wait for the word of each later claim that shares a table: refuse if one went on."""
        deadline = time.monotonic() + DECISION_SECONDS
        while later:
            runs = self._live_runs()
            for run_id in list(later):
                run = runs.get(run_id)
                if run is None or not self._contends(run):
                    later.remove(run_id)  # it refused, ended, died or lapsed
                elif "go" in run["states"] or "beat" in run["states"]:
                    self._refuse(run_id, run, "")
            if later and time.monotonic() >= deadline:
                run_id = later[0]
                self._refuse(run_id, runs[run_id], f" and has not said within {DECISION_SECONDS:g}s whether it goes on")
            if later:
                time.sleep(0.05)

    def _refuse(self, run_id: str, run: dict, why: str) -> None:
        self._add("done")
        shared = sorted(run["tables"] & set(self.tables))
        raise UsageError(
            f"table {shared[0]} is held by another harness run ({run_id}, {run['owner']}, since "
            f"{run['claimed']}, last seen {run['last']}){why}: nothing was touched; run again when it ends "
            f"(a run that died lapses after {STALE_SECONDS:g}s), or use another --table")

    def _died(self, owner: str) -> bool:
        """Whether ``owner`` (``pid N on HOST``) is a process of this host that no longer runs (killed: its
        claim need not wait to lapse)."""
        pid, _, host = owner.removeprefix("pid ").partition(" on ")
        return host == socket.gethostname() and pid.isdigit() and not psutil.pid_exists(int(pid))

    def _beat(self) -> None:
        while not self._stop.wait(BEAT_SECONDS):
            try:
                self._add("beat")
            except RunError:
                pass  # the server is slow or gone: the run itself finds out and says so

    def release(self) -> None:
        """End the claim: the beats stop and a ``done`` row frees the tables at once (if the server
        answers; if not, the claim lapses by itself)."""
        self._stop.set()  # a beat still in flight after the done row changes nothing: done is final
        if self.claimed is not None:
            try:
                with self.questdb.bounded(REQUEST_SECONDS):
                    self._add("done")
            except RunError:
                pass


def add_claim(questdb: QuestDBSql, registry: str, run_id: str, tables: list[str], state: str, claimed: str | None,
              owner: str) -> None:
    """One row of the harness's registry of running runs (``TableClaim``), stamped with the
    server's clock. A write the table's lock refuses for a moment (another run's row) is tried again."""
    values = ", ".join(sql_string(value) for value in (run_id, "," + ",".join(tables) + ",", state, owner))
    since = "now()" if claimed is None else f"'{claimed}'::timestamp"
    for attempt in range(40):
        try:
            questdb.exec(f"insert into '{registry}' (ts, claimed, run_id, tables, state, owner) "
                         f"values (now(), {since}, {values})")
            return
        except QuestDBQueryError as exc:
            if "busy" not in str(exc) or attempt == 39:
                raise
            time.sleep(0.05)


def create_claims(questdb: QuestDBSql, registry: str) -> None:
    """The registry of running runs, if it is not there: a table without WAL, so that a row is visible
    to every reader as soon as its insert answers."""
    questdb.exec(f"create table if not exists '{checked_table_name(registry)}' (ts TIMESTAMP, claimed TIMESTAMP, "
                 "run_id SYMBOL, tables STRING, state SYMBOL, owner STRING) timestamp(ts) partition by DAY BYPASS WAL")


def recent_claims(questdb: QuestDBSql, registry: str, seconds: float) -> list[dict]:
    """The registry's rows of the last ``seconds`` by the server's clock (none if it does not exist)."""
    try:
        names, rows = questdb.query(f"select ts, claimed, run_id, tables, state, owner "
                                    f"from '{checked_table_name(registry)}' "
                                    f"where ts > dateadd('s', -{int(seconds)}, now())")
    except QuestDBQueryError as exc:
        if "does not exist" in str(exc):
            return []
        raise
    return [dict(zip(names, row)) for row in rows]
