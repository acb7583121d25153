"""What a new SQL text costs a Python PGWire client (a script, not a test): TSBS's queries of one type whose
every query is a new text (host lists inlined), run one after another on one connection by ``queries
run``'s own asyncpg connection (prepare a named statement, then bind and execute: two round trips) and by
psycopg 3 in the one round trip it sends an unprepared query in (Parse, Bind, Describe, Execute, Sync);
alternated over rounds, each round its own draw of queries; medians of the wall time and the client's CPU
time per query.

    make native-up; .venv/bin/python -m harness bench --send --transport http --scale 100 --seed 7 \\
        --timestamp-end 2016-01-02T00:00:01Z --host 127.0.0.1      # the query parity's data set
    .venv/bin/python benchmarks/prepare_cost.py [--query-type single-groupby-1-8-1] [--queries 300] \\
        [--rounds 4] [--json results/prepare-cost.json]

Both read every row (psycopg fetches them; asyncpg's ``executemany`` reads and discards them, as ``queries
run`` does without ``--check``). At one worker the client and the server take turns, so the client's CPU
per query adds to each query's time: this shows how much of a gap to TSBS's Go runner is the driver's.
"""

from __future__ import annotations

import asyncio
import time

import psycopg
import typer

from benchmarks.alternate import alternate_groups, write_record
from harness.queries.clients import PgwireConnection, WireQuery
from harness.questdb.credentials import pg_login
from harness.questdb.pgwire import libpq_tls
from harness.questdb.tls import pg_tls
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.tsbs.queries import generate_queries

START, END = "2016-01-01T00:00:00Z", "2016-01-02T00:00:01Z"  # the query parity's data set
QUERY_TIMEOUT_SECONDS = 60.0


def drawn(query_type: str, scale: int, queries: int, seed: int) -> list[WireQuery]:
    """``queries`` of ``query_type`` drawn from ``seed``, as ``queries run`` sends them over PGWire."""
    return [PgwireConnection.wire(query)
            for query in generate_queries("cpu-only", seed, scale, START, END, queries, query_type)]


async def asyncpg_run(host: str, port: int, work: list[WireQuery]) -> tuple[float, float]:
    """``queries run``'s own PGWire connection: each new text prepared (a named statement), then executed."""
    connection = await PgwireConnection.open(host, port, pg_login(host, port), pg_tls())
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        for wire in work:
            await connection.run(wire, QUERY_TIMEOUT_SECONDS, want_answer=False)
        return time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        await connection.close()


async def psycopg_run(host: str, port: int, work: list[WireQuery]) -> tuple[float, float]:
    # Its own placeholders and values made before the clock starts, as ``queries run`` makes its wire queries.
    statements = [(_percent_placeholders(wire.sql, len(wire.values)),
                   [value if when is None else when for value, when in zip(wire.values, wire.times)])
                  for wire in work]
    login = pg_login(host, port)
    connection = await psycopg.AsyncConnection.connect(host=host, port=port, user=login.user, password=login.password,
                                                       dbname=login.database, autocommit=True,
                                                       prepare_threshold=None, **libpq_tls(pg_tls()))
    try:
        started, cpu_started = time.perf_counter(), time.process_time()
        async with connection.cursor(binary=True) as cursor:
            for sql, values in statements:
                await cursor.execute(sql, values)
                await cursor.fetchall()
        return time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        await connection.close()


def _percent_placeholders(sql: str, count: int) -> str:
    """psycopg's placeholders (%s) for the $n of ``sql``; TSBS's SQL holds no other %."""
    if "%" in sql:
        raise SystemExit(f"a query holds '%', which psycopg would read as a placeholder: {sql[:120]}")
    for number in range(count, 0, -1):  # $10 before $1
        sql = sql.replace(f"${number}", "%s")
    return sql


def main(
    query_type: str = typer.Option("single-groupby-1-8-1", help="A TSBS cpu-only type whose every query is a new text."),
    queries: int = typer.Option(300, min=1, help="Queries a run."),
    rounds: int = typer.Option(4, min=1),
    scale: int = typer.Option(100, min=1, help="Hosts of the data set in table cpu."),
    host: str = typer.Option("127.0.0.1"),
    pg_port: int = typer.Option(8812),
    results: str = typer.Option("results/prepare-cost.json", "--json", "--results", help="The benchmark record."),
) -> None:
    record = BenchmarkRecord("prepare-cost", parameters=dict(query_type=query_type, queries=queries, rounds=rounds,
                                                             scale=scale))
    drivers = {"asyncpg prepare + execute": asyncpg_run, "psycopg one round trip": psycopg_run}

    def variant(name: str):
        def measure(round_number: int) -> Measurement:
            work = drawn(query_type, scale, queries, seed=round_number)  # both drivers run the round's draw
            seconds, cpu = asyncio.run(drivers[name](host, pg_port, work))
            print(f"round {round_number} {name:26} {seconds / queries * 1e3:6.3f} ms a query, client CPU "
                  f"{cpu / queries * 1e3:.3f} ms", flush=True)
            return Measurement(seconds=seconds, rows=queries, client_cpu_seconds=cpu)
        return measure

    (comparison,) = alternate_groups({query_type: {name: variant(name) for name in drivers}}, rounds)
    record.comparisons.append(comparison)
    print(f"\nmedians over {rounds} rounds, {queries} queries of {query_type} each (ms a query):")
    for name in drivers:
        rate, cpu = (comparison.summary[name][figure] for figure in ("rows_per_second", "client_cpu_seconds"))
        print(f"{name:26} {1e3 / rate.median:6.3f} ({1e3 / rate.max:.3f}-{1e3 / rate.min:.3f})  client CPU "
              f"{cpu.median / queries * 1e3:.3f} ({cpu.min / queries * 1e3:.3f}-{cpu.max / queries * 1e3:.3f})")
    write_record(record, results)


if __name__ == "__main__":
    typer.run(main)
