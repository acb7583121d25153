"""harness.questdb.http against a real QuestDB (the pinned version): SQL over /exec, the cpu table, schema checks, counts, WAL."""

from __future__ import annotations

import pytest
from helpers import free_port
from questdb import Sender, TimestampNanos

from harness.errors import RunError, UsageError
from harness.versions import questdb_version
from harness.questdb.http import QuestDBQueryError, QuestDBSql
from harness.tsbs.cpu_only import generator as cpu_only
from harness.questdb.schema import check_schema, create_table
from harness.questdb.wal import wait_for_count, wal_state

TABLE = "cpu_test"


@pytest.fixture
def client(questdb):
    """The session server's client, with this module's table dropped before and after each test."""
    questdb.client.drop_table(TABLE)
    yield questdb.client
    questdb.client.drop_table(TABLE)


def insert_rows(client: QuestDBSql, table: str, rows: int) -> None:
    """``rows`` rows through SQL: into a WAL table they become visible only once the WAL is applied."""
    client.exec(f"insert into '{table}' (hostname, usage_user, timestamp) "
                f"select 'host_' || (x % 10), x, (x * 10_000_000)::timestamp from long_sequence({rows})")


def test_exec_and_query_shapes(client):
    answer = client.exec("select 1 as one, 'ab' as letters")
    assert answer["columns"] == [{"name": "one", "type": "INT"}, {"name": "letters", "type": "STRING"}]
    assert answer["dataset"] == [[1, "ab"]] and answer["count"] == 1
    assert client.query("select x from long_sequence(3)") == (["x"], [[1], [2], [3]])
    assert client.exec(f"create table {TABLE} (x long)") == {"ddl": "OK"}
    assert client.exec(f"insert into {TABLE} values (1)") == {"dml": "OK"}


def test_a_rejected_statement_raises_with_the_servers_text(client):
    with pytest.raises(QuestDBQueryError, match="table does not exist") as failure:
        client.query("select * from no_such_table")
    assert isinstance(failure.value, RunError) and client.address in str(failure.value)


def test_ping_and_version(client):
    client.ping()
    assert client.server_version() == questdb_version()


def test_ping_to_a_closed_port_names_host_and_port():
    port = free_port()
    with pytest.raises(RunError, match=f"127.0.0.1:{port}"):
        QuestDBSql("127.0.0.1", port).ping()


@pytest.mark.parametrize("fields,field_type", [("double", "DOUBLE"), ("long", "LONG")])
def test_create_cpu_table(client, fields, field_type):
    assert client.table_columns(TABLE) is None
    create_table(client, cpu_only.schema(fields, TABLE))
    expected = [(tag, "SYMBOL") for tag in cpu_only.TAG_COLUMNS]
    expected += [(field, field_type) for field in cpu_only.FIELD_COLUMNS]
    expected.append(("timestamp", "TIMESTAMP"))
    assert client.table_columns(TABLE) == expected
    assert [name for name, _ in expected] == list(cpu_only.COLUMNS)
    names, rows = client.query(f"select designatedTimestamp, partitionBy, walEnabled from tables() "
                               f"where table_name = '{TABLE}'")
    assert rows == [["timestamp", "DAY", True]]
    assert wal_state(client, TABLE)["suspended"] is False
    check_schema(client, cpu_only.schema(fields, TABLE))
    assert client.count(TABLE) == 0
    with pytest.raises(QuestDBQueryError, match="already exists"):
        create_table(client, cpu_only.schema(fields, TABLE))


def test_drop_table_is_idempotent(client):
    create_table(client, cpu_only.schema("double", TABLE))
    client.drop_table(TABLE)
    assert client.table_columns(TABLE) is None
    client.drop_table(TABLE)


@pytest.mark.slow
def test_drop_table_waits_for_a_writer_to_let_the_table_go(questdb):
    # A non-WAL table written over ILP/TCP is locked by the connection's writer while rows flow: a DROP then
    # answers "could not lock", and drop_table asks again until the connection has closed. A table of its own:
    # QuestDB's ILP/TCP writers may outlive a DROP of their table under that name.
    import socket
    import threading
    import time

    table, client = "cpu_test_locked", questdb.client
    client.drop_table(table)
    client.exec(f"create table '{table}' (v long, timestamp timestamp) timestamp(timestamp) partition by day "
                "bypass wal")
    stop = threading.Event()

    def send() -> None:
        with socket.create_connection((questdb.host, questdb.ilp_port)) as ilp:
            for row in range(1_000_000):
                if stop.is_set():
                    return
                ilp.sendall(f"{table} v={row}i {1_000_000_000 + row}\n".encode())
                time.sleep(0.005)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        deadline = time.monotonic() + 30
        while client.count(table) == 0:
            assert time.monotonic() < deadline, "no row committed within 30 s"
            time.sleep(0.05)
        with pytest.raises(QuestDBQueryError, match="could not lock"):
            client.exec(f"drop table '{table}'")
        threading.Timer(1.0, stop.set).start()
        client.drop_table(table)
        assert stop.is_set() and client.table_columns(table) is None
    finally:
        stop.set()
        sender.join()


def test_schema_check_refuses_the_other_field_type(client):
    create_table(client, cpu_only.schema("double", TABLE))
    with pytest.raises(UsageError) as failure:
        check_schema(client, cpu_only.schema("long", TABLE))
    message = str(failure.value)
    assert f"table {TABLE}" in message and "usage_user is DOUBLE, needs LONG" in message
    assert "and 7 more" in message and "--keep-table" in message


def test_schema_check_refuses_missing_columns_and_a_plain_timestamp(client):
    client.exec(f"create table {TABLE} (hostname STRING, usage_user DOUBLE, timestamp TIMESTAMP)")
    with pytest.raises(UsageError) as failure:
        check_schema(client, cpu_only.schema("double", TABLE))
    message = str(failure.value)
    assert "hostname is STRING, needs SYMBOL" in message and "region is missing" in message


def test_schema_check_wants_the_designated_timestamp(client):
    columns = [f"{tag} SYMBOL" for tag in cpu_only.TAG_COLUMNS]
    columns += [f"{field} DOUBLE" for field in cpu_only.FIELD_COLUMNS]
    client.exec(f"create table {TABLE} ({', '.join(columns)}, timestamp TIMESTAMP)")
    with pytest.raises(UsageError, match="timestamp is not the designated timestamp"):
        check_schema(client, cpu_only.schema("double", TABLE))


def test_schema_check_of_a_missing_table(client):
    with pytest.raises(UsageError, match=f"table {TABLE} does not exist"):
        check_schema(client, cpu_only.schema("double", TABLE))


def test_bad_names_and_field_types_are_usage_errors(client):
    with pytest.raises(UsageError, match="invalid table name"):
        client.count("cpu'; drop table cpu; --")
    with pytest.raises(UsageError, match="fields: must be one of double, long"):
        create_table(client, cpu_only.schema("float", TABLE))


def test_wait_for_count_sees_wal_rows_arrive(client):
    create_table(client, cpu_only.schema("double", TABLE))
    insert_rows(client, TABLE, 1000)
    waited = wait_for_count(client, TABLE, 1000, timeout=60)
    assert waited >= 0
    assert client.count(TABLE) == 1000
    state = wal_state(client, TABLE)
    assert state["writerTxn"] == state["sequencerTxn"]


def test_wait_for_count_of_rows_sent_over_ilp(questdb, client):
    create_table(client, cpu_only.schema("long", TABLE))
    with Sender.from_conf(f"tcp::addr={questdb.host}:{questdb.ilp_port};protocol_version=1;") as sender:
        for index in range(500):
            sender.row(TABLE, symbols={"hostname": f"host_{index % 7}"}, columns={"usage_user": index},
                       at=TimestampNanos(1_451_606_400_000_000_000 + index * 10_000_000_000))
    wait_for_count(client, TABLE, 500, timeout=60)
    assert client.query(f"select sum(usage_user) from {TABLE}")[1] == [[sum(range(500))]]


@pytest.mark.slow
def test_wait_for_count_timeout_states_both_counts(client):
    create_table(client, cpu_only.schema("double", TABLE))
    insert_rows(client, TABLE, 100)
    wait_for_count(client, TABLE, 100, timeout=60)
    with pytest.raises(RunError) as failure:
        wait_for_count(client, TABLE, 150, timeout=0.5, poll_interval=0.1)
    message = str(failure.value)
    assert "timed out after 0.5s" in message and "expected 150 rows" in message and "100 visible" in message


def test_wait_for_count_fails_fast_on_excess_rows(client):
    create_table(client, cpu_only.schema("double", TABLE))
    insert_rows(client, TABLE, 100)
    wait_for_count(client, TABLE, 100, timeout=60)
    # A timeout this long would hang the test if the excess were not seen at the first poll.
    with pytest.raises(RunError) as failure:
        wait_for_count(client, TABLE, 60, timeout=3600)
    message = str(failure.value)
    assert "expected 60 rows" in message and "100 visible" in message


@pytest.mark.slow
def test_wait_for_count_fails_fast_on_a_suspended_wal(questdb_factory):
    # Suspending a table's WAL by SQL needs dev mode, so this test runs a server of its own.
    server = questdb_factory(extra_env={"QDB_DEV_MODE_ENABLED": "true"})
    client = server.client
    create_table(client, cpu_only.schema("double", TABLE))
    client.exec(f"alter table {TABLE} suspend wal with 24, 'disk full, as the test says'")
    insert_rows(client, TABLE, 10)
    with pytest.raises(RunError) as failure:
        wait_for_count(client, TABLE, 10, timeout=3600)
    message = str(failure.value)
    assert "WAL apply is suspended" in message and "disk full, as the test says" in message
    assert "expected 10 rows, 0 visible" in message
    assert wal_state(client, TABLE)["suspended"] is True
