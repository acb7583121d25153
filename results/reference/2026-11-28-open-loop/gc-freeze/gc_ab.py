"""Schedule delay at 18,000 rows/s from the TSBS generator: before (c593ffa) and after the gc.freeze, alternated."""
import json, subprocess, sys, pathlib
sys.path.insert(0, "/work/main")
from harness.records.alternation import alternate
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.records.store import write_benchmark_record

OUT = pathlib.Path(sys.argv[1]); OUT.mkdir(parents=True, exist_ok=True)
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
TREES = {"before (no freeze)": "/tmp/wt-old", "after (gc.freeze)": "/work/main"}
FLAGS = ["bench", "--send", "--host", "127.0.0.1", "--transport", "http", "--reporting-period", "0", "--rate", "18000",
         "--duration", "60s", "--worker-chunk-row-count", "10000", "--scale", "4000", "--seed", "1"]

def variant(name):
    def measure(n):
        slug = "before" if "before" in name else "after"
        results = OUT / f"{slug}-{n}.json"
        done = subprocess.run([f"{TREES[name]}/.venv/bin/python", "-m", "harness", *FLAGS, "--results", str(results)],
                              cwd=TREES[name], capture_output=True, text=True)
        (OUT / f"{slug}-{n}.txt").write_text(done.stdout + done.stderr)
        step = json.loads(results.read_text())["open_loop"]["steps"][0]
        d = step["schedule_delay"]
        print(f"round {n} {name}: schedule delay p50 {d['p50']*1e3:.2f} p90 {d['p90']*1e3:.2f} p99 {d['p99']*1e3:.2f} "
              f"max {d['max']*1e3:.2f} ms ({d['count']} chunks), achieved {step['achieved_rows_per_second']}", flush=True)
        send = json.loads(results.read_text())["phases"]["send"]
        return Measurement(seconds=send["seconds"], rows=send["rows"], run_record=str(results),
                           extra={"schedule_delay_p99_ms": d["p99"] * 1e3, "schedule_delay_max_ms": d["max"] * 1e3,
                                  "schedule_delay_p90_ms": d["p90"] * 1e3})
    return measure

record = BenchmarkRecord("open-loop-schedule-gc-freeze", parameters={"command": FLAGS, "rounds": ROUNDS})
comparison = alternate({k: variant(k) for k in TREES}, ROUNDS, warm_up=False)
record.comparisons.append(comparison)
write_benchmark_record(record, OUT / "gc-freeze.json")
for k, s in comparison.summary.items():
    for f in ("schedule_delay_p99_ms", "schedule_delay_max_ms"):
        if f in s:
            print(k, f, s[f].paired_text() if hasattr(s[f], "paired_text") else s[f])
