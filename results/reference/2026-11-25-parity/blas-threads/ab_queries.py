"""A/B, run by hand: `queries run FILE` from two checkouts, alternated round by round, against the native QuestDB
(`make native-up`, the query data set loaded as `make bench-queries` loads it).

    python ab_queries.py BASE_CHECKOUT NEW_CHECKOUT ROUNDS QUERY_FILE [WORKERS]

Prints per checkout the medians of queries/s, of the median query and of the client CPU a query (the record's
queries phase), and the paired median ratio of the rates."""
import json, statistics, subprocess, sys
base, new, rounds, qfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
workers = sys.argv[5] if len(sys.argv) > 5 else "1"
figures = {base: [], new: []}
for r in range(rounds):
    for checkout in (base, new) if r % 2 == 0 else (new, base):
        subprocess.run([sys.executable, "-m", "harness", "queries", "run", qfile, "--protocol", "pgwire", "--workers", workers,
                        "--host", "127.0.0.1", "--pg-port", "8812", "--http-port", "9000", "--reporting-period", "0",
                        "--results", "/tmp/ab-queries.json"], cwd=checkout, capture_output=True, check=True)
        record = json.load(open("/tmp/ab-queries.json"))
        stats = record["queries"]["statistics"]["all queries"]
        queries = stats["count"] if "count" in stats else 500
        figures[checkout].append((stats["queries_per_second"], stats["median_ms"],
                                  record["phases"]["queries"]["client_cpu_seconds"] * 1000 / queries))
for checkout in (base, new):
    rate, median, cpu = (statistics.median(f[i] for f in figures[checkout]) for i in range(3))
    print(f"{checkout}: {rate:8.0f} queries/s, median query {median:.3f} ms, client CPU {cpu:.3f} ms a query")
ratio = statistics.median(n[0] / b[0] for b, n in zip(figures[base], figures[new]))
print(f"rate, new over base, paired median: {ratio:.2f}x")
