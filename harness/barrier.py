"""Where the clients of one scale-out run meet: a table of the harness's own, ``harness_clients``, on the
QuestDB they all send to, one row per client and step. The server is the one place every client reaches,
whether they run as local processes, Compose containers or a swarm's replicas on other hosts.

The steps of a run of N clients (client i sends TSBS's interleaved group i of N):
client 0 prepares the tables and says ``prepared``; the others wait for that, then check the tables'
schema; each says ``ready`` once its data is generated; all start sending when all N are ready (the start
barrier: the whole run's rate is not diluted by staggered starts); each says ``sent``; client 0 waits for
every ``sent`` and validates the whole data set once. A client that fails says ``failed`` with its error,
and every client waiting on it stops at once with that error instead of waiting out its timeout.

The table is created if missing and never dropped: runs share it, each under its own run name, and its rows
are a few per client.
"""

from __future__ import annotations

import re
import time

from harness.errors import RunError, UsageError
from harness.http_exec import QuestDBSql, sql_string

TABLE = "harness_clients"
PREPARED, READY, SENT, FAILED = "prepared", "ready", "sent", "failed"
POLL_SECONDS = 0.05
FAILED_NOTICE_SECONDS = 2.0
_RUN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def check_run_name(name: str) -> str:
    if not _RUN_NAME.fullmatch(name):
        raise UsageError(f"--barrier {name!r}: a run name is 1 to 64 letters, digits, '.', '_' or '-'")
    return name


class Meeting:
    """Client ``client`` of ``clients`` in the run called ``run``: ``say`` a step, ``wait_for`` others'."""

    def __init__(self, questdb: QuestDBSql, run: str, client: int, clients: int, timeout: float):
        self.questdb, self.run, self.client, self.clients, self.timeout = (
            questdb, check_run_name(run), client, clients, timeout)
        questdb.exec(f"CREATE TABLE IF NOT EXISTS {TABLE} (run SYMBOL, client INT, step SYMBOL, detail VARCHAR, "
                     f"ts TIMESTAMP) TIMESTAMP(ts) PARTITION BY DAY WAL")

    def say(self, step: str, detail: str = "") -> None:
        self.questdb.exec(f"INSERT INTO {TABLE} VALUES ('{self.run}', {self.client}, '{step}', "
                          f"{sql_string(detail[:500])}, now())")

    def failed(self, error: BaseException) -> None:
        """Tell the others this client failed, so they stop waiting; best effort and brief (the server may
        be what failed)."""
        try:
            with self.questdb.bounded(FAILED_NOTICE_SECONDS):
                self.say(FAILED, str(error) or type(error).__name__)
        except RunError:
            pass

    def steps(self) -> dict[str, dict[int, str]]:
        """What each client of the run has said so far: step -> client -> detail."""
        _, rows = self.questdb.query(f"SELECT step, client, detail FROM {TABLE} WHERE run = '{self.run}'")
        said: dict[str, dict[int, str]] = {}
        for step, client, detail in rows:
            said.setdefault(step, {})[client] = detail
        return said

    def wait_for(self, step: str, clients: range | None = None) -> float:
        """Wait until every client in ``clients`` (default: all) has said ``step``; returns the seconds
        waited. A client that says ``failed`` ends the wait at once (RunError with its error), as does the
        timeout."""
        clients = range(self.clients) if clients is None else clients
        started = time.monotonic()
        while True:
            said = self.steps()
            failed = {client: detail for client, detail in said.get(FAILED, {}).items() if client != self.client}
            if failed:
                client, detail = min(failed.items())
                raise RunError(f"client {client} of run {self.run} failed: {detail or 'no reason given'}")
            missing = [client for client in clients if client not in said.get(step, {})]
            if not missing:
                return time.monotonic() - started
            if time.monotonic() - started >= self.timeout:
                raise RunError(f"run {self.run}: clients {', '.join(map(str, missing))} did not say {step!r} "
                               f"within {self.timeout:g}s (--barrier-timeout)")
            time.sleep(POLL_SECONDS)
