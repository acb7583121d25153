"""Real servers for the tests: QuestDB from its release jar and the socat sink, on test-only ports.

Nothing here is a stand-in: the fixtures start the same processes `make native-up` starts, with the
project's conf/server.conf, and stop them afterwards. A server that cannot start (no Java, no jar and no
Maven to fetch it, a busy port) makes the tests that need it error, never skip.

    questdb_server    session: the one QuestDB of the run (RunningQuestDB)
    questdb           per test: the same server, with the benchmark's table ``cpu`` dropped first
    killable_questdb  per test: a QuestDB of the test's own (own root, ports 191xx) that it may kill
    questdb_factory   per test: starts such QuestDBs with other options (e.g. extra QDB_* env)
    qwp_server        session: a QuestDB that speaks QWP (the pinned QWP jar: .env's QUESTDB_QWP) (RunningQuestDB)
    qwp_questdb       per test: the same server, with the benchmark's table ``cpu`` dropped first
    killable_qwp_questdb  per test: a QWP server of the test's own, which it may kill
    socat_sink        session: the socat no-op sink (RunningSink)
    devnull           per test: a text stream that discards what a run prints

The markers each test carries (pyproject.toml lists them; docs/testing.md): ``server`` on every test that
uses one of the server fixtures above, directly or through another fixture, and ``docker`` on every test of
the Docker modules, both set here at collection; ``server`` on a test that starts a server itself, ``docker``
on one that runs the Docker CLI elsewhere, and ``slow`` are set in the modules. What the test modules share
(ports, ``run_cli``, ``assert_one_line_error`` ...) is in helpers.py.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from harness.questdb.http import QuestDBSql
from harness.servers.process import port_in_use
from harness.servers.jar import qwp_jar
from harness.servers.questdb import NativeQuestDB
from harness.servers.sink import SocatSink
from harness.questdb.process import listening_process
from helpers import (KILLABLE_PORTS, QWP_KILLABLE_PORTS, QWP_PORTS, SINK_PORT, TEST_PORTS, WORKER,
                     WORKER_PORT_STRIDE)
from prerequisites import require

pytest_plugins = ["fixture_timer"]  # --fixture-durations=N

# The fixtures that start (or hand out) a real QuestDB or the socat sink: a test using one is `server`.
SERVER_FIXTURES = frozenset({"questdb_server", "questdb", "killable_questdb", "questdb_factory", "socat_sink",
                             "qwp_server", "qwp_questdb", "killable_qwp_questdb"})
# The modules that run the Docker engine (Compose, Swarm): every test of theirs is `docker`.
DOCKER_MODULES = frozenset({"test_docker_e2e.py", "test_docker_swarm.py", "test_docker_swarm_nodes.py"})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)
        if item.path.name in DOCKER_MODULES:
            item.add_marker(pytest.mark.docker)
        if item.get_closest_marker("serial") and not item.get_closest_marker("slow"):
            # make test-fast has no serial part: it runs every test it takes in parallel.
            raise pytest.UsageError(f"{item.nodeid} is marked serial but not slow: a serial test is also slow")
    if WORKER:
        # Longest first, a module's tests in their order: the scheduler below hands out modules as listed.
        weights = module_weights(items)
        items.sort(key=lambda item: -weights[item.path.name])


def module_weights(items) -> dict[str, int]:
    """Each module's place in the parallel part's queue: the Docker modules first (they wait on the engine
    most of their time, the other worker's tests beside them), then modules by their count of slow tests."""
    weights: dict[str, int] = {}
    for item in items:
        weights[item.path.name] = weights.get(item.path.name, 0) + bool(item.get_closest_marker("slow"))
    return {name: 1_000_000 if name in DOCKER_MODULES else weight for name, weight in weights.items()}


if importlib.util.find_spec("xdist") is not None:
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        """pytest-xdist's --dist loadscope, a module to a worker (its module fixtures made once), with the
        Docker modules one unit: they share the one engine (a swarm, the stack's ports), so they take turns."""

        def __init__(self, config, log=None):
            super().__init__(config, log)
            config.option.loadscopereorder = False  # the collection's order is already longest first

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "docker" if Path(module).name in DOCKER_MODULES else module

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "loadscope":
            return ModuleScheduling(config, log)
        return None


@pytest.fixture
def devnull():
    with open(os.devnull, "w") as stream:
        yield stream



def _holder(port: int) -> str:
    """Who listens on ``port``, as far as this user can see."""
    process = listening_process(port)
    try:
        if process is not None:
            what = "a native QuestDB" if "io.questdb" in " ".join(process.cmdline()) else process.name()
            return f"{what} (pid {process.pid})"
    except psutil.Error:
        pass
    return "another process"


def pytest_sessionstart(session):
    """Refuse to start, in one line, when a server port the fixtures need is taken: otherwise every test
    that uses it errors with the same message. Under pytest-xdist the controller checks every worker's
    ports before any worker starts (a worker that stopped on a busy port would be replaced by one with
    other ports)."""
    if WORKER:
        return
    workers = len(getattr(session.config.option, "tx", None) or ()) or 1  # pytest-xdist's -n, resolved
    for worker in range(workers):
        for port in (*TEST_PORTS.values(), *KILLABLE_PORTS.values(), *QWP_PORTS.values(),
                     *QWP_KILLABLE_PORTS.values(), SINK_PORT):
            port += worker * WORKER_PORT_STRIDE
            if port_in_use(port):
                pytest.exit(f"test port {port} is taken by {_holder(port)}: stop it, or move the tests' ports "
                            f"with HARNESS_TEST_PORT_OFFSET=N", returncode=2)


@dataclass
class RunningQuestDB:
    """A started QuestDB: its process handle (``server``) and an HTTP client (``client``) to it."""

    server: NativeQuestDB
    client: QuestDBSql

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def http_port(self) -> int:
        return self.server.http_port

    @property
    def ilp_port(self) -> int:
        return self.server.ilp_port

    @property
    def pg_port(self) -> int:
        return self.server.pg_port

    @property
    def min_port(self) -> int:
        return self.server.min_port

    @property
    def root(self) -> Path:
        return self.server.root

    @property
    def log_file(self) -> Path:
        return self.server.log_file

    def kill(self) -> None:
        """SIGKILL the server, as a crash would."""
        self.server.kill()


def start_questdb(root: Path, ports: dict, **extra) -> RunningQuestDB:
    """Start a QuestDB in ``root`` on ``ports`` (the test ports by default) and wait until it is healthy."""
    server = NativeQuestDB(root, **ports, **extra)
    server.start()
    return RunningQuestDB(server, QuestDBSql(server.host, server.http_port))


def _session_server(tmp_path_factory, root: str, ports: dict, **extra):
    """A server the whole session shares, in a root of its own, stopped when the session ends."""
    running = start_questdb(tmp_path_factory.mktemp(root), ports, **extra)
    yield running
    running.server.stop()


@pytest.fixture(scope="session")
def questdb_server(tmp_path_factory):
    yield from _session_server(tmp_path_factory, "questdb-root", TEST_PORTS)


@pytest.fixture
def questdb(questdb_server):
    """The session's QuestDB (started once), with the benchmark's default table dropped before each test."""
    questdb_server.client.drop_table("cpu")
    return questdb_server


@pytest.fixture
def questdb_factory(tmp_path):
    """Starts QuestDBs of the test's own: ``factory(ports=KILLABLE_PORTS, **NativeQuestDB options)``, each in
    its own root under the test's tmp_path; every one still running is stopped afterwards."""
    started: list[RunningQuestDB] = []

    def factory(ports: dict = KILLABLE_PORTS, **extra) -> RunningQuestDB:
        running = start_questdb(tmp_path / f"questdb-root-{len(started)}", ports, **extra)
        started.append(running)
        return running

    yield factory
    for running in started:
        running.server.stop()


@pytest.fixture
def killable_questdb(questdb_factory):
    """A QuestDB of the test's own (ports 19100/19109/18912/19103), which the test may kill."""
    return questdb_factory()


@pytest.fixture(scope="session")
def qwp_server(tmp_path_factory):
    """A QuestDB that speaks QWP: the pinned QWP server's jar, on Java 25 (a missing jar or Java fails, never
    skips)."""
    require("qwp-server")
    yield from _session_server(tmp_path_factory, "qwp-root", QWP_PORTS, jar=qwp_jar())


@pytest.fixture
def qwp_questdb(qwp_server):
    """The session's QWP server, with the benchmark's default table dropped before each test."""
    qwp_server.client.drop_table("cpu")
    return qwp_server


@pytest.fixture
def killable_qwp_questdb(questdb_factory):
    """A QWP server of the test's own, which the test may kill."""
    require("qwp-server")
    return questdb_factory(QWP_KILLABLE_PORTS, jar=qwp_jar())


@dataclass
class RunningSink:
    """A started socat sink: everything sent to host:port is discarded."""

    sink: SocatSink

    @property
    def host(self) -> str:
        return self.sink.host

    @property
    def port(self) -> int:
        return self.sink.port


@pytest.fixture(scope="session")
def socat_sink(tmp_path_factory):
    sink = SocatSink(SINK_PORT, pid_file=tmp_path_factory.mktemp("sink") / "sink.pid")
    sink.start()
    yield RunningSink(sink)
    sink.stop()
