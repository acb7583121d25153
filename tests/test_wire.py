"""The sender seam's conformance (``harness.ingest.wire``): every wire of the registry, against a real QuestDB, lands
exact counts, means what its ``Delivery`` says when a commit returns, closes cleanly on an error, and says a refused
value or a server that is not there in one line. A new wire joins by its registry entry: the first test fails until
it is here."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.errors import HarnessError, RunError, UsageError
from harness.ingest.wire.interface import Delivery
from harness.ingest.wire.registry import WIRES, wire_for
from harness.ingest.wire.settings import SenderSettings
from harness.questdb.schema import create_table
from harness.questdb.wal import wait_for_count, wal_state
from harness.tsbs.schema import TableSchema
from helpers import free_port

TABLE = "wire_conformance"
SCHEMA = TableSchema(TABLE, tags=("host",), fields=(("value", "DOUBLE"),), series_tags=("host",))
# The schemes that reach every wire of the registry on a plain server (https, tcps and wss are the same wires over
# TLS, tested through the TLS proxy in test_tls.py); QWP's (ws) on a server that speaks it.
SCHEMES = ("http", "tcp", "raw", "ws")
TRANSPORTS = {"http": "http", "tcp": "tcp", "raw": "tcp", "ws": "qwp"}
ROWS = 1_000


def frame(rows: int, first: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"host": pd.Categorical([f"h{index % 7}" for index in range(first, first + rows)]),
                         "value": [float(index) for index in range(first, first + rows)],
                         "timestamp": pd.to_datetime(range(first, first + rows), unit="s")})


def ilp_lines(data: pd.DataFrame) -> bytes:
    return "".join(f"{TABLE},host={row.host} value={row.value!r} {row.timestamp.value}\n"
                   for row in data.itertuples()).encode()


def settings_for(questdb, scheme: str) -> SenderSettings:
    return SenderSettings(transport=TRANSPORTS[scheme], host=questdb.host, ilp_port=questdb.ilp_port,
                          http_port=questdb.http_port)


def hand(connection, wire, data: pd.DataFrame) -> None:
    """``data`` handed to the connection as the wire takes it: a frame, or its ILP lines."""
    if "frame" in wire.traits.takes:
        connection.frame(TABLE, data, ("host",), "timestamp")
    else:
        connection.write(ilp_lines(data))


@pytest.fixture
def questdb_of(request):
    """The server of the test's wire: the session's QuestDB, or the QWP server for QWP."""
    scheme = request.node.callspec.params["scheme"]
    return request.getfixturevalue("qwp_questdb" if scheme == "ws" else "questdb")


@pytest.fixture
def table(questdb_of):
    questdb_of.client.drop_table(TABLE)
    create_table(questdb_of.client, SCHEMA)
    yield TABLE
    questdb_of.client.drop_table(TABLE)


def test_every_wire_of_the_registry_is_tested_here():
    tested = {WIRES[scheme] for scheme in SCHEMES}
    assert set(WIRES.values()) == tested


@pytest.mark.server  # its server is the wire's (questdb_of)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_commits_land_exact_counts(questdb_of, table, scheme):
    questdb = questdb_of
    wire = wire_for(settings_for(questdb, scheme), scheme if scheme == "raw" else None)
    connection = wire.connect()
    try:
        for first in range(0, ROWS, 250):
            hand(connection, wire, frame(250, first))
            sent = connection.commit()
            assert sent is None if scheme == "ws" else sent > 0  # QWP's client does not count its bytes
    finally:
        connection.close()
    assert wait_for_count(questdb.client, table, ROWS, 60) >= 0
    assert questdb.client.count(table) == ROWS


@pytest.mark.server  # its server is the wire's (questdb_of)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_commit_means_what_its_delivery_says(questdb_of, table, socat_sink, scheme):
    """Committed: the server holds the commit as a transaction of its WAL the moment ``commit()`` returns. Written:
    the commit needs no answer (into the no-op sink, which answers nothing, it returns all the same)."""
    questdb = questdb_of
    wire = wire_for(settings_for(questdb, scheme), scheme if scheme == "raw" else None)
    if wire.traits.delivery == Delivery.committed:
        connection = wire.connect()
        try:
            for commit in range(1, 4):
                hand(connection, wire, frame(10, 10 * commit))
                connection.commit()
                assert wal_state(questdb.client, table)["sequencerTxn"] == commit
        finally:
            connection.close()
    else:
        sink = SenderSettings(transport="tcp", host=socat_sink.host, ilp_port=socat_sink.port)
        connection = wire_for(sink, scheme if scheme == "raw" else None).connect()
        try:
            hand(connection, wire, frame(10))
            assert connection.commit() > 0
        finally:
            connection.close()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_nothing_listening_is_one_line_naming_the_address(scheme):
    port = free_port()
    settings = SenderSettings(transport=TRANSPORTS[scheme], host="127.0.0.1", ilp_port=port, http_port=port)
    wire = wire_for(settings, scheme if scheme == "raw" else None)
    with pytest.raises(RunError) as raised:
        wire.connect().commit()
    assert f"127.0.0.1:{port}" in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.server  # its server is the wire's (questdb_of)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_refused_value_is_one_line_and_the_close_is_clean(questdb_of, table, scheme):
    """A value the wire cannot take (a frame's column of dicts; a frame handed to a wire of bytes) fails in one line;
    the connection then closes without raising, and nothing of the refused value landed."""
    questdb = questdb_of
    wire = wire_for(settings_for(questdb, scheme), scheme if scheme == "raw" else None)
    connection = wire.connect()
    refused = frame(3).assign(value=[{"a": 1}, {"b": 2}, {"c": 3}])
    try:
        with pytest.raises(HarnessError) as raised:
            connection.frame(TABLE, refused, ("host",), "timestamp")
            connection.commit()
        assert isinstance(raised.value, (RunError, UsageError))
        assert str(raised.value) and "\n" not in str(raised.value)
    finally:
        connection.close()
    connection.close()  # twice: still clean
    assert questdb.client.count(table) == 0
