"""Where the clients of one scale-out run meet: a table of the harness's own, ``harness_clients``, on the
QuestDB they all send to, one row per client and step (``TablePlace``). The server is the one place every
client reaches, whether they run as local processes, Compose containers or a swarm's replicas on other
hosts. Clients that send to the no-op sink, which has no table, meet in a folder they all share instead
(``FolderPlace``: ``bench --clients N --target sink`` uses its run's folder), one file per client and step.

The steps of a run of N clients (client i sends TSBS's interleaved group i of N):
client 0 prepares the tables and says ``prepared``; the others wait for that, then check the tables'
schema; each says ``ready`` once its data is generated; all start sending when all N are ready (the start
barrier: the whole run's rate is not diluted by staggered starts); each says ``sent``; client 0 waits for
every ``sent`` and validates the whole data set once. A client that fails says ``failed`` with its error,
and every client waiting on it stops at once with that error instead of waiting out its timeout.

The table is created if missing and never dropped: runs share it, each under its own run name, and its rows
are a few per client. A folder's files are named by run, client and step.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunError, UsageError
from harness.questdb.http import QuestDBSql, sql_string

TABLE = "harness_clients"
PREPARED, READY, SENT, FAILED = "prepared", "ready", "sent", "failed"
POLL_SECONDS = 0.05
FAILED_NOTICE_SECONDS = 2.0
_RUN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Barrier:
    """A client's part in a scale-out run: the run's ``name``, where its clients meet (``folder``: a folder they all
    write; None: the QuestDB they send to), and how long a client waits for the others at each step."""

    name: str
    folder: str | None = None
    timeout: float = 600.0


def check_run_name(name: str) -> str:
    if not _RUN_NAME.fullmatch(name):
        raise UsageError(f"--barrier {name!r}: a run name is 1 to 64 letters, digits, '.', '_' or '-'")
    return name


def run_seed(name: str) -> int:
    """The seed of run ``name`` when it was given none: every client derives the same one from the name they
    share, so they split one data set without agreeing on anything else (a random seed each would make N
    data sets). Below 2**63, as a random seed."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") >> 1


class TablePlace:
    """The meeting place on the server: table ``harness_clients`` of the QuestDB every client sends to, made where
    missing as a meeting opens the place."""

    def __init__(self, questdb: QuestDBSql):
        self.questdb = questdb

    def open(self) -> None:
        self.questdb.exec(f"CREATE TABLE IF NOT EXISTS {TABLE} (run SYMBOL, client INT, step SYMBOL, detail VARCHAR, "
                          f"ts TIMESTAMP) TIMESTAMP(ts) PARTITION BY DAY WAL")

    def write(self, run: str, client: int, step: str, detail: str) -> None:
        self.questdb.exec(f"INSERT INTO {TABLE} VALUES ('{run}', {client}, '{step}', {sql_string(detail)}, now())")

    def read(self, run: str) -> list[tuple[str, int, str]]:
        _, rows = self.questdb.query(f"SELECT step, client, detail FROM {TABLE} WHERE run = '{run}'")
        return [(step, client, detail) for step, client, detail in rows]

    def bounded(self, seconds: float) -> contextlib.AbstractContextManager:
        return self.questdb.bounded(seconds)


class FolderPlace:
    """The meeting place in a folder every client can write: ``RUN/CLIENT.STEP``, a file per client and step
    holding its detail, written beside its place and renamed, so a reader sees it whole or not at all."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def open(self) -> None:
        pass  # a client's folder is made as it writes its first step

    def write(self, run: str, client: int, step: str, detail: str) -> None:
        path = self.folder / run / f"{client}.{step}"
        part = path.with_name(f".{path.name}.part")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            part.write_text(detail)
            os.replace(part, path)
        except OSError as exc:
            raise RunError(f"cannot write {path}: {exc.strerror}") from None

    def read(self, run: str) -> list[tuple[str, int, str]]:
        said = []
        with contextlib.suppress(FileNotFoundError):  # nobody has said anything yet
            for path in (self.folder / run).iterdir():
                client, _, step = path.name.partition(".")
                if client.isdigit():  # not a .part file on its way in
                    said.append((step, int(client), path.read_text()))
        return said

    def bounded(self, seconds: float) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()  # a local file: no server that may hang


class Meeting:
    """Client ``client`` of ``clients`` in the run called ``run``, at ``place``: ``say`` a step, ``wait_for``
    others'."""

    def __init__(self, place: TablePlace | FolderPlace, run: str, client: int, clients: int, timeout: float):
        self.place, self.run, self.client, self.clients, self.timeout = (
            place, check_run_name(run), client, clients, timeout)
        place.open()

    def say(self, step: str, detail: str = "") -> None:
        self.place.write(self.run, self.client, step, detail[:500])

    def failed(self, error: BaseException) -> None:
        """Tell the others this client failed, so they stop waiting; best effort and brief (the server may
        be what failed)."""
        try:
            with self.place.bounded(FAILED_NOTICE_SECONDS):
                self.say(FAILED, str(error) or type(error).__name__)
        except RunError:
            pass

    def steps(self) -> dict[str, dict[int, str]]:
        """What each client of the run has said so far: step -> client -> detail."""
        said: dict[str, dict[int, str]] = {}
        for step, client, detail in self.place.read(self.run):
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
