import sys, glob, statistics as st, collections
sys.path.insert(0, __import__("os").path.dirname(__file__))
from pcap_pg import segments
from pcap_split import exchanges
T = sys.argv[1]
rows = []
for path in sorted(glob.glob(f"/tmp/tr/cap-{T}-*.pcap")):
    runner, rnd = path.split("-")[-2], int(path.split("-")[-1].split(".")[0])
    ex = exchanges(segments(path))
    ex = [e for e in ex if e["kind"] in "PBCQ"]
    server = sum(e["resp_last"] - e["t_req"] for e in ex)
    client = sum(b["t_req"] - a["resp_last"] for a, b in zip(ex, ex[1:]))
    span = ex[-1]["resp_last"] - ex[0]["t_req"]
    byk = collections.defaultdict(list)
    for e in ex: byk[e["kind"]].append((e["resp_last"] - e["t_req"]) * 1e3)
    rows.append((rnd, runner, span, server, client, {k: st.median(v) for k, v in byk.items()}, len(ex)))
for rnd, runner, span, server, client, med, n in sorted(rows):
    print(f"{rnd} {runner:4} span {span:.3f}s server {server:.3f}s client {client:.3f}s  per query: server {server/5:.3f} ms client {client/5:.3f} ms  medians " + " ".join(f"{k}={v:.3f}" for k, v in sorted(med.items())))
for runner in sorted({x[1] for x in rows}):
    r = [x for x in rows if x[1] == runner]
    print(runner, "median span %.3f server %.3f client %.3f" % tuple(st.median(x[i] for x in r) for i in (2, 3, 4)))
