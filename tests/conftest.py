"""Real servers for the tests: QuestDB from its release jar and the socat sink, on test-only ports.

Nothing here is a stand-in: the fixtures start the same processes `make native-up` starts, with the
project's conf/server.conf, and stop them afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness.native import NativeQuestDB, SocatSink
from harness.questdb import QuestDB

# Test ports, away from the defaults (9000/9009/8812/9003) that a developer's own stack may hold.
TEST_PORTS = dict(http_port=19000, ilp_port=19009, pg_port=18812, min_port=19003)
KILLABLE_PORTS = dict(http_port=19100, ilp_port=19109, pg_port=18912, min_port=19103)
SINK_PORT = 19010


@dataclass
class RunningQuestDB:
    server: NativeQuestDB
    client: QuestDB

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
    def min_port(self) -> int:
        return self.server.min_port

    def kill(self) -> None:
        self.server.kill()


def _start(root, ports) -> RunningQuestDB:
    server = NativeQuestDB(root, **ports)
    server.start()
    return RunningQuestDB(server, QuestDB(server.host, server.http_port))


@pytest.fixture(scope="session")
def questdb_server(tmp_path_factory):
    running = _start(tmp_path_factory.mktemp("questdb-root"), TEST_PORTS)
    yield running
    running.server.stop()


@pytest.fixture
def questdb(questdb_server):
    """The session's QuestDB, with the benchmark's default table dropped before each test."""
    questdb_server.client.drop_table("cpu")
    return questdb_server


@pytest.fixture
def killable_questdb(tmp_path):
    """A QuestDB of the test's own, which the test may kill."""
    running = _start(tmp_path / "questdb-root", KILLABLE_PORTS)
    yield running
    running.server.stop()


@dataclass
class RunningSink:
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
