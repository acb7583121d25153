import sys, statistics as st, collections
sys.path.insert(0, __import__("os").path.dirname(__file__))
from pcap_pg import segments
def exchanges(segs):
    ex = []; cur = None
    for t, d, conn, n, head in segs:
        if d == "c2s":
            if cur is None or cur["resp_last"] is not None:
                cur = {"kind": chr(head[0]) if head[:1].isalpha() else "startup", "t_req": t, "req_bytes": 0, "resp_first": None, "resp_last": None, "resp_bytes": 0, "kinds": ""}
                ex.append(cur)
            cur["req_bytes"] += n
        else:
            if cur is None: continue
            if cur["resp_first"] is None: cur["resp_first"] = t
            cur["resp_last"] = t; cur["resp_bytes"] += n
    return [e for e in ex if e["resp_last"] is not None]
def summary(path):
    ex = exchanges(segments(path))
    server = collections.defaultdict(list); client_after = collections.defaultdict(list)
    for a, b in zip(ex, ex[1:]):
        server[a["kind"]].append((a["resp_last"] - a["t_req"]) * 1e3)
        client_after[a["kind"] + "->" + b["kind"]].append((b["t_req"] - a["resp_last"]) * 1e3)
    total = (ex[-1]["resp_last"] - ex[0]["t_req"])
    print(path, f"exchanges {len(ex)}, span {total:.3f}s")
    for k, v in sorted(server.items()):
        if len(v) > 5: print(f"  server {k:8} n={len(v):5} median {st.median(v):.3f} ms  mean {st.mean(v):.3f}  sum {sum(v)/1e3:.3f}s")
    for k, v in sorted(client_after.items()):
        if len(v) > 5: print(f"  client {k:8} n={len(v):5} median {st.median(v):.3f} ms  mean {st.mean(v):.3f}  sum {sum(v)/1e3:.3f}s")
if __name__ == "__main__":
    for p in sys.argv[1:]: summary(p)
