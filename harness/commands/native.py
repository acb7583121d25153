"""The ``native`` commands: QuestDB (a release's jar, the pinned QWP server's, or any server jar: ``--questdb-jar``)
and the socat sink started, stopped and shown natively, with the servers of ``harness.servers``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunError
from harness.options.declare import CommandOptions, command, option
from harness.servers.jar import QUESTDB_JAR_ENV, describe_jar, server_named
from harness.servers.java import java_release
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
from harness.servers.server_build import ServerBuild
from harness.servers.sink import DEFAULT_SINK_PORT, SocatSink
from harness.versions import questdb_version


@dataclass
class NativeOptions(CommandOptions):
    """Where the native servers live and listen (``python -m harness native ...``)."""

    root: str = option(str(DEFAULT_ROOT), "QuestDB root: conf/, data, questdb.log, questdb.pid.")
    http_port: int = option(DEFAULT_HTTP_PORT, "HTTP: /exec, ILP/HTTP, QWP, web console.", min=1, max=65535)
    ilp_port: int = option(DEFAULT_ILP_PORT, "ILP over TCP.", min=1, max=65535)
    pg_port: int = option(DEFAULT_PG_PORT, "PostgreSQL wire protocol.", min=1, max=65535)
    min_port: int = option(DEFAULT_MIN_PORT, "/status and /metrics.", min=1, max=65535)
    sink_port: int = option(DEFAULT_SINK_PORT, "socat no-op sink.", min=1, max=65535)
    questdb_only: bool = option(False, "Leave the socat sink alone.", flags=("--questdb-only",))
    timeout: float = option(START_TIMEOUT_SECONDS, "Seconds to wait for health.", min=0, min_open=True)
    bind_host: str = option(DEFAULT_BIND_HOST, "Address every listener binds. 0.0.0.0 exposes unauthenticated SQL "
                                               "(DROP TABLE included) and ILP writes to the network.")

    def servers(self, root: Path | None = None) -> tuple[NativeQuestDB, SocatSink | None]:
        root = (root or Path(self.root)).resolve()
        server = NativeQuestDB(root, self.http_port, self.ilp_port, self.pg_port, self.min_port,
                               bind_host=self.bind_host)
        # The sink's pid file lives beside the server root, so a second set of servers keeps its own.
        sink = None if self.questdb_only else SocatSink(self.sink_port, pid_file=root.parent / "sink.pid",
                                                            bind_host=self.bind_host)
        return server, sink

    def roots(self) -> list[Path]:
        """The roots ``down`` and ``status`` look at: the one named, or by default every server's default root (the
        pinned release's and each other server's, ``NativeServerOptions.root_of``) that exists, the release's first."""
        if Path(self.root) != DEFAULT_ROOT:
            return [Path(self.root)]
        others = sorted(path for path in DEFAULT_ROOT.parent.glob(f"{DEFAULT_ROOT.name}-*") if path.is_dir())
        return [DEFAULT_ROOT, *others]


@dataclass
class NativeServerOptions(NativeOptions):
    """The native servers, and which QuestDB ``up`` starts (``fetch`` fetches)."""

    questdb_jar: str | None = option(None, f"The QuestDB server to run: a server jar's path, a release (e.g. 9.3.4, "
                                           f"fetched through Maven once) or qwp (the pinned QWP server, .env's "
                                           f"QUESTDB_QWP). It runs on the Java its class files need. Default: "
                                           f"${QUESTDB_JAR_ENV}, else the pinned release.")

    def server_build(self) -> ServerBuild:
        """The server the user named (the flag, else the environment's), else the pinned release."""
        if self.questdb_jar:
            return ServerBuild(self.questdb_jar)
        named = server_named(None)
        return ServerBuild(named, given_as=f"${QUESTDB_JAR_ENV}") if named else ServerBuild(questdb_version())

    def named_one(self) -> bool:
        """Whether the user named a server (else the pinned release runs)."""
        return server_named(self.questdb_jar) is not None

    def root_of(self, build: ServerBuild) -> Path:
        """Where ``build`` keeps its data: the root named, or by default a root of each server version's own (the
        pinned release's ``questdb-root``, another's ``questdb-root-VERSION``): a server never opens, nor upgrades,
        the tables another version wrote."""
        if Path(self.root) != DEFAULT_ROOT or build.version == questdb_version():
            return Path(self.root)
        return DEFAULT_ROOT.with_name(f"{DEFAULT_ROOT.name}-{re.sub(r'[^A-Za-z0-9.]+', '_', build.version)}")


@command
def up(options: NativeServerOptions) -> None:
    """Start QuestDB (and the sink) and wait until healthy; say what runs, or that it already ran. A root whose
    server runs another jar than the one named is left as it is, in one line."""
    build = options.server_build()
    server, sink = options.servers(options.root_of(build))
    if not server.is_running():
        server.jar = build.jar
        server.start(options.timeout)
        what, state = build.description(), "up"
    else:
        running = server.running_jar()
        if options.named_one() and running is not None and running.resolve() != build.jar.resolve():
            raise RunError(f"{describe_jar(running)} already runs on {server.root} (pid {server.pid()}), not "
                           f"{build.description()}: native down stops it (make native-down)")
        what, state = (describe_jar(running) if running is not None else "QuestDB"), "already running"
    print(f"{what} {state} (pid {server.pid()}): http {server.http_port}, ilp {server.ilp_port}, "
          f"pg {server.pg_port}, metrics http://127.0.0.1:{server.min_port}/metrics; log {server.log_file}")
    if sink is not None:
        already = sink.is_running()
        sink.start()
        print(f"socat no-op sink {'already running' if already else 'up'} (pid {sink.pid()}) on port {sink.port}")


@command
def down(options: NativeOptions) -> None:
    """Stop QuestDB (every server's default root's, by default) and the sink."""
    for index, root in enumerate(options.roots()):
        server, sink = options.servers(root)
        for name, process in (("QuestDB", server), ("socat sink", sink if index == 0 else None)):
            if process is not None and (index == 0 or process.is_running()):
                was_running = process.is_running()
                process.stop()
                where = "" if index == 0 else f" ({root.name})"
                print(f"{name}{where} {'stopped' if was_running else 'was not running'}")


@command
def status(options: NativeOptions) -> bool:
    """Print whether the servers run, and which QuestDB; returns whether QuestDB does."""
    roots = options.roots()
    running_roots = [root for root in roots if options.servers(root)[0].is_running()]
    server, sink = options.servers(running_roots[0] if running_roots else roots[0])
    running = server.is_running()
    if running:
        health = "healthy" if server.healthy() else f"not answering on ports {server.min_port}/{server.http_port}"
        jar = server.running_jar()
        which = f"; {describe_jar(jar)}, {jar}" if jar is not None else ""
        print(f"QuestDB: running (pid {server.pid()}{which}), {health}; log {server.log_file}")
    else:
        print(f"QuestDB: not running; log {server.log_file}")
    if sink is not None:
        print(f"socat sink: {f'running (pid {sink.pid()}) on port {sink.port}' if sink.is_running() else 'not running'}")
    return running


@command
def fetch(options: NativeServerOptions) -> None:
    """Only fetch the QuestDB jar (or find the one named), find the Java that runs it, and say where both are."""
    build = options.server_build()
    java = build.check_runnable()
    print(f"{build.description()} jar: {build.jar}; runs on Java {java_release(java)} ({java})")
