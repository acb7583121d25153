import gc, sys, time, atexit
events = []
_t = {}
def cb(phase, info):
    if phase == "start":
        _t["s"] = time.perf_counter()
    elif info["generation"] == 2:
        events.append((time.perf_counter(), (time.perf_counter() - _t["s"]) * 1000, info["collected"]))
gc.callbacks.append(cb)
def report():
    print(f"GC gen2 collections: {len(events)}; ms: {[round(d, 1) for _, d, _ in events]}", file=sys.stderr)
atexit.register(report)
sys.argv = ["harness", *sys.argv[1:]]
from harness.cli import main
main()
