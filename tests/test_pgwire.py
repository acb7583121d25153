"""Every PGWire connection of the harness (the query runner's, each PGWire reader's) starts without asking
QuestDB for TLS, as TSBS's runner connects (``sslmode=disable``): read off the wire by a relay in front of a
real QuestDB, which first shows that a driver left to its default does ask."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import asyncpg
import pytest

from benchmarks.pgwire_tally import ENCRYPTION_REQUEST, PgwireTally
from harness.questdb.credentials import PgLogin
from harness.queries.clients import PgwireConnection
from harness.read.protocols import ReadProtocol


def test_a_driver_left_to_its_default_asks_for_tls_first(questdb_server):
    async def connect_and_close(port: int) -> None:
        login = PgLogin()  # QuestDB's factory login
        connection = await asyncpg.connect(host="127.0.0.1", port=port, user=login.user, password=login.password,
                                           database=login.database)
        await connection.close()

    with PgwireTally(questdb_server.host, questdb_server.pg_port) as tally:
        asyncio.run(connect_and_close(tally.port))
        assert tally.counts[ENCRYPTION_REQUEST] == 1, tally.counts
        # The refused request is a round trip of the connection's set-up.
        assert tally.per_query(1)["round_trips_per_query"] == 1 + tally.counts["S"] + tally.counts["Q"]


def test_the_query_runner_asks_for_no_tls(questdb_server):
    async def one_query(port: int) -> int:
        connection = await PgwireConnection.open("127.0.0.1", port, PgLogin())
        try:
            return await connection.connection.fetchval("select 1")
        finally:
            await connection.close()

    with PgwireTally(questdb_server.host, questdb_server.pg_port) as tally:
        assert asyncio.run(one_query(tally.port)) == 1
        assert tally.connections == 1 and tally.counts[ENCRYPTION_REQUEST] == 0, tally.counts


# connectorx holds the GIL while it waits for its connection: the reader runs in a process of its own, so
# that the relay's thread here can answer it.
_READ_ONE = """
import sys
from harness.read.connection import Endpoint
from harness.read.frames import Column
from harness.read.protocols import reader_class
reader = reader_class(sys.argv[1])(Endpoint("127.0.0.1", 0, int(sys.argv[2])))
try:
    print([value for frame in reader.frames("select 1 x", [Column("x", "INT")], 10) for value in frame["x"]])
finally:
    reader.close()
"""


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [ReadProtocol.asyncpg, ReadProtocol.psycopg, ReadProtocol.connectorx])
def test_each_pgwire_reader_asks_for_no_tls(questdb_server, protocol):
    with PgwireTally(questdb_server.host, questdb_server.pg_port) as tally:
        read = subprocess.run([sys.executable, "-c", _READ_ONE, str(protocol), str(tally.port)], capture_output=True,
                              text=True, timeout=120)
        assert read.returncode == 0 and read.stdout.strip() == "[1]", read.stderr[-2000:]
        assert tally.connections >= 1 and tally.counts[ENCRYPTION_REQUEST] == 0, tally.counts
