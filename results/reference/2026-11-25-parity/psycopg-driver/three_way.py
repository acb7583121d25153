"""Per TSBS query type at 1 worker: the Go runner, `queries run` (asyncpg), and a bare psycopg 3 loop (libpq,
synchronous, every text prepared under a name, a cache of 512 as pgx's, binary results), each run a process
of its own, after one warm-up round, the order rotating. Rates from before the connection to the last
query's end for all three (TSBS's way; `queries run`'s since 6e4c1cf). Medians, ratios to Go."""
import json, os, re, statistics, subprocess, sys
types, rounds = sys.argv[1].split(","), int(sys.argv[2])
PY = "/work/main/.venv/bin/python"
D = "/work/exp/all"
PSYCOPG = r'''
import re, sys, time, json
from harness.tsbs.query_file import read_jsonl
from harness.queries.clients import PgwireConnection
qs = [PgwireConnection.wire(q) for q in read_jsonl(sys.argv[1])]
work = [(re.sub(r"\$\d+", "%s", w.sql), [t if t is not None else v for v, t in zip(w.values, w.times)]) for w in qs]
import psycopg
cpu0 = time.process_time(); t0 = time.perf_counter()
c = psycopg.connect(host="127.0.0.1", port=8812, user="admin", password="quest", dbname="qdb", autocommit=True,
                    sslmode="disable", prepare_threshold=0)
c.prepared_max = 512
cur = c.cursor(binary=True)
for sql, values in work:
    cur.execute(sql, values, prepare=True)
wall = time.perf_counter() - t0; cpu = time.process_time() - cpu0
print(json.dumps([len(work) / wall, 1000 * cpu / len(work)]))
'''
def run(who, qtype):
    if who == "go":
        out = subprocess.run(["/work/tsbs-build/tsbs_run_queries_questdb", f"--file={D}/{qtype}.gob", "--workers=1",
                              "--print-interval=0", "--pg-host=127.0.0.1", "--pg-port=8812"], capture_output=True, text=True).stdout
        return float(re.search(r"Overall query rate ([0-9.]+)", out).group(1)), float("nan")
    if who == "ours":
        subprocess.run([PY, "-m", "harness", "queries", "run", f"{D}/{qtype}.jsonl", "--protocol", "pgwire", "--workers", "1",
                        "--host", "127.0.0.1", "--http-port", "9000", "--pg-port", "8812", "--reporting-period", "0",
                        "--results", "/tmp/three.json"], capture_output=True, check=True)
        rec = json.load(open("/tmp/three.json"))
        s = rec["queries"]["statistics"]["all queries"]
        return s["queries_per_second"], 1000 * rec["phases"]["queries"]["client_cpu_seconds"] / s["count"]
    return tuple(json.loads(subprocess.run([PY, "-c", PSYCOPG, f"{D}/{qtype}.jsonl"], capture_output=True, text=True,
                                           check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1")).stdout))
names = ["go", "ours", "psycopg"]
for qtype in types:
    res = {n: [] for n in names}
    for r in range(rounds + 1):
        order = names[r % 3:] + names[:r % 3]
        for who in order:
            rate, cpu = run(who, qtype)
            if r:
                res[who].append((rate, cpu))
            print(f"{qtype:22s} {'warm-up' if not r else f'round {r}':8s} {who:8s} {rate:9.1f} q/s  cpu {cpu:.3f} ms/q", flush=True)
    go = statistics.median(x[0] for x in res["go"])
    line = f"{qtype:22s} go {go:9.1f}"
    for who in ("ours", "psycopg"):
        rate = statistics.median(x[0] for x in res[who]); cpu = statistics.median(x[1] for x in res[who])
        paired = statistics.median(a[0] / b[0] for a, b in zip(res[who], res["go"]))
        line += f"  {who} {rate:9.1f} {rate/go:.2f}x (paired {paired:.2f}x) cpu {cpu:.3f}"
    print("MEDIANS " + line, flush=True)
