"""One run per table at a time: a run claims its tables on the server before any DDL, and refuses in one line
when another live run holds one of them.

The claims live on the server itself, in the harness's own table ``harness_runs`` (created on first use,
without WAL so that a row is visible to every reader as soon as its insert answers). A run inserts a
``claim`` row (its id, its tables, who it is), then reads every row of the last ``STALE_SECONDS`` by the
server's clock: a run is alive while its rows keep coming (a ``beat`` every ``BEAT_SECONDS``, from a thread
of its own) and it has written no ``done``. Of two live runs that share a table, the one that claimed first
(ties: the smaller run id) goes on; the other writes ``done`` and refuses, before its DDL. Both insert before
either reads, so two runs started at the same moment cannot both go on.

Limits: only harness runs claim (another writer, say Telegraf, or a harness older than this, is not seen);
a run whose process is paused stops beating and its claim lapses after ``STALE_SECONDS``, while one that
was killed on this host frees its tables at once (its pid is gone); runs on different hosts see each other
through the server, as long as they name it alike.
"""

from __future__ import annotations

import os
import socket
import threading

import psutil

from harness.errors import RunError, UsageError
from harness.http_exec import QuestDBSql

REGISTRY = "harness_runs"
BEAT_SECONDS = 1.0
STALE_SECONDS = 10.0
# A beat or the release waits this long for a server that does not answer: it never holds the run.
REQUEST_SECONDS = 2.0


class TableClaim:
    """This run's claim on ``tables``: ``take()`` claims them or refuses; ``release()`` ends the claim."""

    def __init__(self, questdb: QuestDBSql, run_id: str, tables: list[str]):
        self.questdb = QuestDBSql(questdb.host, questdb.http_port, timeout=REQUEST_SECONDS)
        self.run_id = run_id
        self.tables = sorted({table.lower() for table in tables})
        self.owner = f"pid {os.getpid()} on {socket.gethostname()}"
        self.claimed: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="table-claim", daemon=True)

    def _add(self, state: str) -> None:
        self.questdb.add_claim(REGISTRY, self.run_id, self.tables, state, self.claimed, self.owner)

    def take(self) -> None:
        """Claim the tables, or raise UsageError naming the live run that holds one of them."""
        self.questdb.create_claims(REGISTRY)
        self._add("claim")
        runs: dict[str, dict] = {}
        for row in self.questdb.recent_claims(REGISTRY, STALE_SECONDS):
            run = runs.setdefault(row["run_id"], {"done": False, "claimed": row["claimed"], "tables": set(),
                                                  "owner": row["owner"], "last": row["ts"]})
            run["done"] |= row["state"] == "done"
            run["tables"] |= set(filter(None, str(row["tables"]).split(",")))
            run["claimed"] = min(run["claimed"], row["claimed"])
            run["last"] = max(run["last"], row["ts"])
        mine = runs.get(self.run_id)
        if mine is None:
            raise RunError(f"the server did not keep this run's claim in {REGISTRY}")
        self.claimed = mine["claimed"]
        for run_id, run in sorted(runs.items(), key=lambda item: (item[1]["claimed"], item[0])):
            if run_id == self.run_id:
                break
            shared = sorted(run["tables"] & set(self.tables))
            if shared and not run["done"] and not self._died(run["owner"]):
                self._add("done")
                raise UsageError(
                    f"table {shared[0]} is held by another harness run ({run_id}, {run['owner']}, since "
                    f"{run['claimed']}, last seen {run['last']}): nothing was touched; run again when it ends "
                    f"(a run that died lapses after {STALE_SECONDS:g}s), or use another --table")
        self._thread.start()

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
