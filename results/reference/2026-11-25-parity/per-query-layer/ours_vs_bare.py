"""Client CPU and wall time a query: `queries run`'s PgwireConnection.run against a bare asyncpg loop (prepare, then
executemany), with asyncpg's per-call timeout and with parameters bound from get_parameters(), on the first 500
queries of a query file, order rotating. Run by hand against a native QuestDB holding the scale-100 data set:

    .venv/bin/python results/reference/2026-11-25-parity/per-query-layer/ours_vs_bare.py QUERIES.jsonl ROUNDS
"""
import asyncio, sys, time, statistics, itertools
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[4]))
import asyncpg
from harness.tsbs.query_file import read_jsonl
from harness.queries.clients import PgwireConnection, _bind_values
N = 500
queries = read_jsonl(sys.argv[1])[:N]
wires = [PgwireConnection.wire(q) for q in queries]
names = itertools.count()
async def ours():
    c = await PgwireConnection.open("127.0.0.1", 8812)
    t = time.perf_counter(); cpu = time.process_time()
    for w in wires: await c.run(w, 60, False)
    r = time.perf_counter() - t, time.process_time() - cpu
    await c.close(); return r
def bare(timeout, params):
    async def f():
        c = await asyncpg.connect(host="127.0.0.1", port=8812, user="admin", password="quest", database="qdb", statement_cache_size=0)
        keep = []
        t = time.perf_counter(); cpu = time.process_time()
        for w in wires:
            s = await c.prepare(w.sql, name=f"bare_{next(names)}")
            keep.append(s)
            vals = _bind_values(w, s.get_parameters()) if params else [tm if tm is not None else v for v, tm in zip(w.values, w.times)]
            if timeout: await s.executemany([vals], timeout=60)
            else: await s.executemany([vals])
        r = time.perf_counter() - t, time.process_time() - cpu
        await c.close(); return r
    return f
sides = {"ours": ours, "bare": bare(False, False), "bare+timeout": bare(True, False), "bare+params": bare(False, True)}
res = {k: [] for k in sides}
for i in range(int(sys.argv[2])):
    order = list(sides)[i % 4:] + list(sides)[:i % 4]
    for side in order:
        res[side].append(asyncio.run(sides[side]()))
for k, v in res.items():
    print(f"{k:14} wall ms/q {statistics.median(x[0] for x in v) / N * 1000:.4f}  cpu ms/q {statistics.median(x[1] for x in v) / N * 1000:.4f}")
