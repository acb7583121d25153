"""A/B of `replay`'s whole command, TSBS's 4.32 M-row file, 2 workers: HEAD in /work/ab-base (each piece
written with sendall from the mapped file) against a working tree whose workers wrote a plain file's pieces
with socket.sendfile (the kernel copies from the page cache; the patch was three lines in raw.py's write and
was reverted). Alternated rounds, medians, whole-command ratio base over sendfile.

    python ab.py FILE ROUNDS PORT [replay options: --target sink | --http-port 9000]
"""
import os, resource, statistics, subprocess, sys, time, json
F = sys.argv[1]; rounds = int(sys.argv[2]); port = sys.argv[3]; extra = sys.argv[4:]
sides = {"base": "/work/ab-base", "sendfile": "/work/main"}
res = {k: [] for k in sides}
for r in range(rounds):
    order = list(sides) if r % 2 == 0 else list(sides)[::-1]
    for name in order:
        env = dict(os.environ, PYTHONPATH=sides[name])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run(["/work/main/.venv/bin/python", "-m", "harness", "replay", F, "--workers", "2",
                              "--host", "127.0.0.1", "--ilp-port", port, "--results", f"/tmp/ab-{name}.json", *extra],
                             cwd=sides[name], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert out.returncode == 0, out.stderr
        rec = json.load(open(f"/tmp/ab-{name}.json"))
        send = rec["phases"]["send"]
        u, s = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
        res[name].append((wall, send["seconds"], u, s))
        print(f"round {r+1} {name:9s} whole {wall:.3f} s send {send['seconds']:.3f} s user {u:.2f} sys {s:.2f}", flush=True)
for name, rows in res.items():
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"{name:9s} median whole {med[0]:.3f} send {med[1]:.3f} user {med[2]:.2f} sys {med[3]:.2f}")
b = [r[0] for r in res["base"]]; n = [r[0] for r in res["sendfile"]]
print(f"whole: base/sendfile median {statistics.median(b)/statistics.median(n):.3f}x, paired {statistics.median([x/y for x,y in zip(b,n)]):.3f}x")
