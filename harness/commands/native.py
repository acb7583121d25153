"""The ``native`` commands: QuestDB (release jar) and the socat sink started, stopped and shown natively,
with the servers of ``harness.servers``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.options.declare import CommandOptions, command, option
from harness.servers.jar import jar_path
from harness.servers.process import DEFAULT_BIND_HOST
from harness.servers.questdb import (
    DEFAULT_HTTP_PORT,
    DEFAULT_ILP_PORT,
    DEFAULT_MIN_PORT,
    DEFAULT_PG_PORT,
    DEFAULT_ROOT,
    START_TIMEOUT_SECONDS,
    NativeQuestDB,
)
from harness.servers.sink import DEFAULT_SINK_PORT, SocatSink
from harness.versions import questdb_version


@dataclass
class NativeOptions(CommandOptions):
    """Where the native servers live and listen (``python -m harness native ...``)."""

    root: str = option(str(DEFAULT_ROOT), "QuestDB root: conf/, data, questdb.log, questdb.pid.")
    http_port: int = option(DEFAULT_HTTP_PORT, "HTTP: /exec, ILP/HTTP, web console.", min=1, max=65535)
    ilp_port: int = option(DEFAULT_ILP_PORT, "ILP over TCP.", min=1, max=65535)
    pg_port: int = option(DEFAULT_PG_PORT, "PostgreSQL wire protocol.", min=1, max=65535)
    min_port: int = option(DEFAULT_MIN_PORT, "/status and /metrics.", min=1, max=65535)
    sink_port: int = option(DEFAULT_SINK_PORT, "socat no-op sink.", min=1, max=65535)
    questdb_only: bool = option(False, "Leave the socat sink alone.", flags=("--questdb-only",))
    timeout: float = option(START_TIMEOUT_SECONDS, "Seconds to wait for health.", min=0, min_open=True)
    bind_host: str = option(DEFAULT_BIND_HOST, "Address every listener binds. 0.0.0.0 exposes unauthenticated SQL "
                                               "(DROP TABLE included) and ILP writes to the network.")

    def servers(self) -> tuple[NativeQuestDB, SocatSink | None]:
        root = Path(self.root).resolve()
        server = NativeQuestDB(root, self.http_port, self.ilp_port, self.pg_port, self.min_port,
                               bind_host=self.bind_host)
        # The sink's pid file lives beside the server root, so a second set of servers keeps its own.
        sink = None if self.questdb_only else SocatSink(self.sink_port, pid_file=root.parent / "sink.pid",
                                                            bind_host=self.bind_host)
        return server, sink


@command
def up(options: NativeOptions) -> None:
    """Start QuestDB (and the sink) and wait until healthy; say so, or that they already ran."""
    server, sink = options.servers()
    already = server.is_running()
    server.start(options.timeout)
    print(f"QuestDB {questdb_version()} {'already running' if already else 'up'} (pid {server.pid()}): "
          f"http {server.http_port}, ilp {server.ilp_port}, pg {server.pg_port}, "
          f"metrics http://127.0.0.1:{server.min_port}/metrics; log {server.log_file}")
    if sink is not None:
        already = sink.is_running()
        sink.start()
        print(f"socat no-op sink {'already running' if already else 'up'} (pid {sink.pid()}) on port {sink.port}")


@command
def down(options: NativeOptions) -> None:
    server, sink = options.servers()
    for name, process in (("QuestDB", server), ("socat sink", sink)):
        if process is not None:
            was_running = process.is_running()
            process.stop()
            print(f"{name} {'stopped' if was_running else 'was not running'}")


@command
def status(options: NativeOptions) -> bool:
    """Print whether the servers run; returns whether QuestDB does."""
    server, sink = options.servers()
    running = server.is_running()
    if running:
        health = "healthy" if server.healthy() else f"not answering on ports {server.min_port}/{server.http_port}"
        print(f"QuestDB: running (pid {server.pid()}), {health}; log {server.log_file}")
    else:
        print(f"QuestDB: not running; log {server.log_file}")
    if sink is not None:
        print(f"socat sink: {f'running (pid {sink.pid()}) on port {sink.port}' if sink.is_running() else 'not running'}")
    return running


@command
def fetch(options: NativeOptions) -> None:
    """Only fetch the QuestDB jar, and say where it is."""
    print(f"QuestDB {questdb_version()} jar: {jar_path()}")
