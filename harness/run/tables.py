"""The tables a run fills: the target checked before anything is sent, the tables claimed for this run alone
(``harness.questdb.claims``), each table prepared (dropped and created, or kept after a schema check; a table
the harness did not make is never dropped unless --replace-table says so), the counts read back until they
are exact, and what the server says of a table after a failed send.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from harness.errors import RunError, UsageError
from harness.ingest.sockets import check_listening
from harness.questdb.claims import TableClaim
from harness.questdb.features import detect
from harness.questdb.http import QuestDBQueryError, QuestDBSql
from harness.questdb.schema import TablePolicy, TableWal, check_schema, create_table, schema_difference
from harness.questdb.wal import suspension, wait_for_count
from harness.records.run_record import TableCount, Validation
from harness.tsbs import use_cases
from harness.tsbs.schema import TableSchema

if TYPE_CHECKING:
    from harness.ingest.wire.interface import Wire
    from harness.run.session import Run

# How long the questions after a failed send may take, all together.
SERVER_STATE_SECONDS = 5.0


def connect(questdb: QuestDBSql | None, wire: Wire | None, run: Run, schemas: list[TableSchema],
            policy: TablePolicy, known_schemas: bool = True) -> tuple[QuestDBSql | None, dict[str, int]]:
    """Check the target answers before anything is sent (``questdb``: the server's SQL, None into the sink);
    for QuestDB, record its version and prepare the tables as ``policy`` says. Returns the SQL client (None for
    the sink) and the rows each table already holds. ``known_schemas``: whether a table of a schema the harness
    makes is the harness's to drop (TSBS's tables); without, every existing table is the user's
    (``refuse_foreign_table``)."""
    if questdb is None:
        if wire is not None:
            check_listening(*wire.settings.endpoint(), "the no-op sink")
        return None, {}
    questdb.ping()
    if wire is not None:
        check_listening(*wire.settings.endpoint(), f"QuestDB {wire.traits.name}")
        if needed := wire.needed_features():
            if lacking := detect(questdb).lacking(needed, wire.settings.address):
                raise UsageError(lacking)
    run.record.server = {"questdb_version": questdb.server_version()}
    return questdb, prepare_tables(questdb, policy, run, schemas, known_schemas)


def prepare_tables(questdb: QuestDBSql, policy: TablePolicy, run: Run, schemas: list[TableSchema],
                   known_schemas: bool = True) -> dict[str, int]:
    """Claim, check and prepare the run's tables (``connect``'s, or more found later: replay's); returns the
    rows each already holds."""
    # One run per table: claimed before anything is checked or touched, held until the run ends.
    claim = TableClaim(questdb, run.record.run_id, [schema.table for schema in schemas])
    claim.take()
    run.releases.append(claim.release)
    # Every table is checked before any is touched: a use case of nine tables never drops three, then refuses.
    for schema in schemas:
        if policy.keep:
            if questdb.table_columns(schema.table) is not None:
                check_schema(questdb, schema, policy.dedup)
        elif not policy.replace:
            refuse_foreign_table(questdb, schema, known_schemas, policy.wal)
    return {schema.table: prepare_table(questdb, schema, policy.keep, run, policy.dedup, policy.wal)
            for schema in schemas}


def refuse_foreign_table(questdb: QuestDBSql, schema: TableSchema, known_schemas: bool = True,
                         wal: TableWal = TableWal.wal) -> None:
    """A table of the run's name whose schema is none the harness makes under that name (this run's, or
    another use case's or field type's) is someone else's (Telegraf writes ``cpu`` too): refuse, naming
    its first difference from this run's schema, rather than drop it. Without ``known_schemas`` (the user's
    own data: its schema is the user's too) any table of that name is refused."""
    if not known_schemas:
        if questdb.table_columns(schema.table) is not None:
            raise UsageError(f"table {schema.table} exists: a run of the user's data never drops or writes into a "
                             f"table it did not make; --keep-table appends to it (after a schema check), "
                             f"--replace-table drops it, --table names another table")
        return
    difference = schema_difference(questdb, schema, wal)
    if difference is not None and all(schema_difference(questdb, other, wal) is not None
                                      for other in use_cases.schemas_named(schema.table) if other != schema):
        raise UsageError(f"table {schema.table} exists and is not the benchmark's: {difference}; nothing was "
                         f"dropped (--replace-table drops it, --table names another table)")


def prepare_table(questdb: QuestDBSql, schema: TableSchema, keep_table: bool, run: Run, dedup: bool = False,
                  wal: TableWal = TableWal.wal) -> int:
    """Drop and create the table, or (``keep_table``) check the existing one; returns its row count.
    Whether an existing table may be dropped is the caller's check (``refuse_foreign_table``)."""
    table = schema.table
    exists = questdb.table_columns(table) is not None
    if keep_table and exists:
        check_schema(questdb, schema, dedup)
        rows = questdb.count(table)
        run.say(f"Kept table {table} ({rows} rows)")
        return rows
    if exists:
        questdb.drop_table(table)
        run.say(f"Dropped table {table}")
    elif not keep_table:
        run.say(f"Table {table} does not exist")
    create_table(questdb, schema, dedup, wal)
    # What the server made, read back: with --table-wal server-default its configuration decides.
    made_wal = bool(questdb.table_layout(table).get("walEnabled"))
    server = run.record.server = run.record.server or {}
    server.setdefault("wal_tables", {})[table] = made_wal
    run.say(f"Created table {table} ({'WAL' if made_wal else 'not WAL'}{', deduplicating' if dedup else ''})")
    return 0


def validate(questdb: QuestDBSql, timeout: float, expected: dict[str, int], last_flush: float, run: Run,
             missing_why: str = "") -> None:
    """Wait (at most ``timeout`` seconds) until each table holds exactly its expected rows; record the counts read
    back and the time it took after the last flush. ``missing_why`` ends a shortfall's line (``wait_for_count``)."""
    # One deadline for every table and every question: a server that stops answering ends the validation
    # within its timeout (and a few seconds), not a request timeout later.
    with questdb.bounded(timeout + SERVER_STATE_SECONDS):
        for table, rows in expected.items():
            wait_for_count(questdb, table, rows, timeout, missing_why=missing_why)
        since_flush = time.perf_counter() - last_flush
        tables = {table: TableCount(rows, questdb.count(table)) for table, rows in expected.items()}
    run.record.validation = Validation(sum(expected.values()), sum(count.visible for count in tables.values()),
                                       round(since_flush, 3), tables if len(tables) > 1 else {})
    for table, rows in expected.items():
        run.say(f"Validated:\n  {rows} rows visible in table {table} {since_flush:.2f}s after the last flush.")


def server_state(questdb: QuestDBSql, schemas: list[TableSchema]) -> str:
    """What the server says after a failed send: rows visible per table and, where its WAL apply stopped,
    the server's own reason (a full disk shows here, while the client only saw a reset connection)."""
    states = []
    # However the send failed, asking costs a few seconds at most: a frozen server adds no minute of its own.
    with questdb.bounded(SERVER_STATE_SECONDS):
        for schema in schemas:
            try:
                reason = suspension(questdb, schema.table)
                suspended = f", WAL apply suspended: {reason}" if reason is not None else ""
                states.append(f"{schema.table}: {questdb.count(schema.table)} rows visible{suspended}")
            except QuestDBQueryError as exc:  # the table was dropped, the login refused: the server's words
                states.append(f"{schema.table}: {exc}")
            except RunError as exc:
                return f"the server does not answer ({exc})"
    return "server says " + "; ".join(states)
