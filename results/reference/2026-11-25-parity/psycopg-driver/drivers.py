"""Bare loops, asyncpg (prepare named, executemany, as queries run) against psycopg 3 (libpq, sync, prepared,
binary), each run a fresh process, alternated: rate over the loop (connection included), mean latency, CPU."""
import json, statistics, subprocess, sys
qtype, rounds = sys.argv[1], int(sys.argv[2])
CHILD = r'''
import asyncio, re, statistics, sys, time, json
from harness.tsbs.query_file import read_jsonl
from harness.queries.clients import PgwireConnection, _bind_values
qs = [PgwireConnection.wire(q) for q in read_jsonl(sys.argv[2])]
mode = sys.argv[1]
lat = []
if mode == "psycopg":
    import psycopg
    work = [(re.sub(r"\$\d+", "%s", w.sql), list(w.times)) for w in qs]
    cpu0 = time.process_time(); t0 = time.perf_counter()
    c = psycopg.connect(host="127.0.0.1", port=8812, user="admin", password="quest", dbname="qdb", autocommit=True,
                        sslmode="disable", prepare_threshold=0)
    cur = c.cursor(binary=True)
    for sql, values in work:
        s = time.perf_counter()
        cur.execute(sql, values, prepare=True)
        lat.append(time.perf_counter() - s)
    wall = time.perf_counter() - t0; cpu = time.process_time() - cpu0
else:
    import asyncpg
    async def main():
        cpu0 = time.process_time(); t0 = time.perf_counter()
        c = await asyncpg.connect(host="127.0.0.1", port=8812, user="admin", password="quest", database="qdb",
                                  statement_cache_size=0, ssl="disable")
        cache = {}
        for n, w in enumerate(qs):
            s = time.perf_counter()
            st = cache.get(w.sql)
            if st is None:
                st = cache[w.sql] = await c.prepare(w.sql, name=f"s{time.time_ns()}_{n}")
            await st.executemany([_bind_values(w, st.get_parameters())], timeout=60)
            lat.append(time.perf_counter() - s)
        return time.perf_counter() - t0, time.process_time() - cpu0
    wall, cpu = asyncio.run(main())
print(json.dumps([len(qs) / wall, 1000 * statistics.mean(lat), 1000 * cpu / len(qs)]))
'''
res = {"asyncpg": [], "psycopg": []}
for r in range(rounds + 1):
    for who in (("asyncpg", "psycopg") if r % 2 == 0 else ("psycopg", "asyncpg")):
        row = json.loads(subprocess.run(["/work/main/.venv/bin/python", "-c", CHILD, who, f"/work/exp/q/{qtype}.jsonl"],
                                        capture_output=True, text=True, check=True, env={"OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}).stdout)
        if r:
            res[who].append(row)
        print(f"{qtype} {'warm-up' if not r else f'round {r}'} {who:8s} {row[0]:8.1f} q/s mean {row[1]:6.3f} ms cpu {row[2]:.3f} ms/q", flush=True)
a = [x[0] for x in res["asyncpg"]]; p = [x[0] for x in res["psycopg"]]
for who, rows in res.items():
    print(f"{qtype} {who:8s} median %.1f q/s  mean %.3f ms  cpu %.3f ms/q" % tuple(statistics.median(c) for c in zip(*rows)))
print(f"{qtype} psycopg/asyncpg {statistics.median(p)/statistics.median(a):.3f}x (paired {statistics.median(x/y for x, y in zip(p, a)):.3f}x)")
