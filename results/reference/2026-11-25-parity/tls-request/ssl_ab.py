"""`queries run` at HEAD before the change (asyncpg's default sslmode=prefer: a TLS request the server refuses, then
the startup) in /work/ab-base against the working tree (sslmode=disable), alternated per type after one warm-up
round, on the native QuestDB (`make native-up`) holding the query parity's data set. Per run: the rate (counted
queries over the first query's start to the last one's end: the connection's set-up is not in it), the
queries phase's client CPU a query, and the phase's seconds minus the sum of the latencies (set-up, the
gaps between queries, closing).

    python ssl_ab.py lastpoint,single-groupby-1-1-1,cpu-max-all-1 10
"""
import json, os, statistics, subprocess, sys
types, rounds = sys.argv[1].split(","), int(sys.argv[2])
sides = {"prefer (HEAD)": "/work/ab-base", "disable": "/work/main"}
for qtype in types:
    res = {k: [] for k in sides}
    for r in range(rounds + 1):
        for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
            subprocess.run(["/work/main/.venv/bin/python", "-m", "harness", "queries", "run", f"/work/exp/q/{qtype}.jsonl",
                            "--protocol", "pgwire", "--workers", "1", "--host", "127.0.0.1", "--http-port", "9000",
                            "--pg-port", "8812", "--reporting-period", "0", "--results", "/tmp/ssl_ab.json"],
                           capture_output=True, check=True, cwd=sides[name], env=dict(os.environ, PYTHONPATH=sides[name]))
            rec = json.load(open("/tmp/ssl_ab.json"))
            s, phase = rec["queries"]["statistics"]["all queries"], rec["phases"]["queries"]
            row = (s["queries_per_second"], 1000 * phase["client_cpu_seconds"] / s["count"],
                   1000 * phase["seconds"] - s["sum_ms"])
            if r:  # round 0: warm-up
                res[name].append(row)
            print(f"{qtype} {'warm-up' if not r else f'round {r}'} {name:14s} {row[0]:8.1f} q/s  cpu {row[1]:.3f} ms/q  "
                  f"outside the queries {row[2]:6.1f} ms", flush=True)
    base = [x[0] for x in res["prefer (HEAD)"]]; new = [x[0] for x in res["disable"]]
    for name, rows in res.items():
        print(f"{qtype} {name:14s} median {statistics.median(x[0] for x in rows):8.1f} q/s  cpu "
              f"{statistics.median(x[1] for x in rows):.3f} ms/q  outside {statistics.median(x[2] for x in rows):.1f} ms")
    print(f"{qtype} disable/prefer {statistics.median(new)/statistics.median(base):.3f}x (paired "
          f"{statistics.median(n/b for n, b in zip(new, base)):.3f}x)\n", flush=True)
