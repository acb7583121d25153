"""A WAL table's state on the server: ``wal_tables()``, why its apply was suspended, and the wait for its
rows to become visible (the count a run validates)."""

from __future__ import annotations

import time

from harness.errors import RunError
from harness.questdb.http import QuestDBSql

# How often a wait for rows to become visible also asks whether the table's WAL apply was suspended.
SUSPENSION_CHECK_SECONDS = 0.5


def wal_tables(questdb: QuestDBSql) -> list[dict]:
    """``wal_tables()``: per WAL table name, suspended, writerTxn, bufferedTxnSize, sequencerTxn,
    errorTag, errorMessage, memoryPressure."""
    names, rows = questdb.query("select * from wal_tables()")
    return [dict(zip(names, row)) for row in rows]


def wal_state(questdb: QuestDBSql, table: str) -> dict | None:
    """The table's row of wal_tables(), or None (no such table, or not a WAL table)."""
    for entry in wal_tables(questdb):
        if str(entry.get("name")).lower() == table.lower():
            return entry
    return None


def suspension(questdb: QuestDBSql, table: str) -> str | None:
    """Why the server suspended the table's WAL apply, in its own words (``DISK FULL: commit failed...``,
    an out-of-memory or a schema clash), or None while it applies."""
    wal = wal_state(questdb, table)
    if wal is None or not wal.get("suspended"):
        return None
    tag, message = wal.get("errorTag") or "", wal.get("errorMessage") or ""
    return ": ".join(part for part in (tag, message) if part) or "no reason given"


def wait_for_count(questdb: QuestDBSql, table: str, expected: int, timeout: float,
                   poll_interval: float = 0.01, missing_why: str = "") -> float:
    """Poll until ``count()`` equals ``expected``; returns the seconds waited.

    Rows sent to a WAL table become visible only after the server applies the WAL, so the count
    rises in steps after the last flush; a count answers in well under a millisecond, so the wait is
    timed to ``poll_interval``. Fails (RunError, stating expected and visible counts) on timeout, as
    soon as the count exceeds ``expected``, and within ``SUSPENSION_CHECK_SECONDS`` of the table's WAL
    apply being suspended (its rows would never arrive). ``missing_why`` ends the timeout's line: what the
    caller knows may lose rows unseen."""
    started = time.perf_counter()
    deadline = started + timeout
    suspension_checked = float("-inf")
    while True:
        visible = questdb.count(table)
        now = time.perf_counter()
        if visible == expected:
            return now - started
        if visible > expected:
            raise RunError(
                f"table {table} holds more rows than expected: expected {expected} rows, {visible} visible"
            )
        if now - suspension_checked >= SUSPENSION_CHECK_SECONDS:
            reason = suspension(questdb, table)
            if reason is not None:
                raise RunError(f"table {table}: WAL apply is suspended ({reason}); expected {expected} rows, "
                               f"{visible} visible")
            suspension_checked = now
        if now >= deadline:
            raise RunError(
                f"validation timed out after {timeout:g}s: expected {expected} rows in table {table}, "
                f"{visible} visible{missing_why}"
            )
        time.sleep(poll_interval)


def settled_count(questdb: QuestDBSql, table: str, timeout: float, quiet: float = 0.5,
                  poll_interval: float = 0.02) -> int:
    """The table's row count once its WAL is applied (``writerTxn`` caught up with ``sequencerTxn``) and neither
    has moved for ``quiet`` seconds (a table without a WAL: once its count has not moved for as long): what a write
    left behind when how many rows it landed is not known (a write that failed part way). A RunError on timeout or
    where its apply is suspended."""
    deadline = time.perf_counter() + timeout
    last, since = None, time.perf_counter()
    while True:
        wal = wal_state(questdb, table)
        if wal is not None and wal.get("suspended"):
            raise RunError(f"table {table}: WAL apply is suspended ({suspension(questdb, table)})")
        now = time.perf_counter()
        if wal is None:  # not a WAL table: its count is what it holds
            count = questdb.count(table)
            state = (count, count)
        else:
            state = (wal.get("writerTxn"), wal.get("sequencerTxn"))
        if state != last:
            last, since = state, now
        elif state[0] == state[1] and now - since >= quiet:
            return questdb.count(table)
        if now >= deadline:
            raise RunError(f"table {table}: its WAL did not settle in {timeout:g}s (writer and sequencer "
                           f"transactions {state})")
        time.sleep(poll_interval)
