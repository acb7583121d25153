"""The garbage collector over the open loop (a script, not a test): how many full collections a harness command
sets off and how long each took, and the open loop's schedule delay from two checkouts alternated. Made the
figures of results/reference/2026-11-28-open-loop/gc-freeze/.

    .venv/bin/python benchmarks/gc_freeze.py count bench --send --rate 18000 --duration 30s ...
    .venv/bin/python benchmarks/gc_freeze.py ab OUT --before CHECKOUT --after CHECKOUT [--rounds 3]

``count`` runs the harness command in this process with a ``gc.callbacks`` hook and prints, on exit, the full
(generation 2) collections and their milliseconds. ``ab`` runs ``bench --rate 18000 --duration 60s`` (ILP over
HTTP to QuestDB on 127.0.0.1) from each checkout's own ``.venv``, alternated, and records each run's schedule delay
(p90, p99, max) in a benchmark record ``OUT/gc-freeze.json``, every run's record and output beside it.
"""

from __future__ import annotations

import atexit
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

import typer

from harness.records.alternation import alternate
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.records.store import write_benchmark_record

app = typer.Typer(add_completion=False)
FLAGS = ["bench", "--send", "--host", "127.0.0.1", "--transport", "http", "--reporting-period", "0", "--rate", "18000",
         "--duration", "60s", "--worker-chunk-row-count", "10000", "--scale", "4000", "--seed", "1"]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def count(context: typer.Context) -> None:
    """Run the harness command given; print its full collections and their milliseconds when it ends."""
    collections, started = [], {}

    def hook(phase: str, info: dict) -> None:
        if phase == "start":
            started["at"] = time.perf_counter()
        elif info["generation"] == 2:
            collections.append((time.perf_counter() - started["at"]) * 1000)

    gc.callbacks.append(hook)
    atexit.register(lambda: print(f"GC gen2 collections: {len(collections)}; ms: "
                                  f"{[round(ms, 1) for ms in collections]}", file=sys.stderr))
    from harness.cli import main

    sys.argv = ["harness", *context.args]
    main()


@app.command()
def ab(out: Path, before: Path = typer.Option(...), after: Path = typer.Option(...),
       rounds: int = typer.Option(3, min=1)) -> None:
    """The open loop's schedule delay from the checkout ``before`` and ``after`` a change, alternated."""
    out.mkdir(parents=True, exist_ok=True)
    trees = {"before": before.resolve(), "after": after.resolve()}

    def variant(name: str):
        def measure(round_number: int) -> Measurement:
            results = out / f"{name}-{round_number}.json"
            done = subprocess.run([str(trees[name] / ".venv/bin/python"), "-m", "harness", *FLAGS, "--results",
                                   str(results)], cwd=trees[name], capture_output=True, text=True)
            (out / f"{name}-{round_number}.txt").write_text(done.stdout + done.stderr)
            run = json.loads(results.read_text())
            step, send = run["open_loop"]["steps"][0], run["phases"]["send"]
            delay = step["schedule_delay"]
            print(f"round {round_number} {name}: schedule delay p50 {delay['p50'] * 1e3:.2f} p90 "
                  f"{delay['p90'] * 1e3:.2f} p99 {delay['p99'] * 1e3:.2f} max {delay['max'] * 1e3:.2f} ms "
                  f"({delay['count']} chunks), achieved {step['achieved_rows_per_second']}", flush=True)
            return Measurement(seconds=send["seconds"], rows=send["rows"], run_record=str(results),
                               extra={"schedule_delay_p90_ms": delay["p90"] * 1e3,
                                      "schedule_delay_p99_ms": delay["p99"] * 1e3,
                                      "schedule_delay_max_ms": delay["max"] * 1e3})
        return measure

    record = BenchmarkRecord("open-loop-schedule-gc-freeze", parameters={"command": FLAGS, "rounds": rounds})
    comparison = alternate({name: variant(name) for name in trees}, rounds, warm_up=False)
    record.comparisons.append(comparison)
    write_benchmark_record(record, out / "gc-freeze.json")
    for name, summary in comparison.summary.items():
        for figure in ("schedule_delay_p99_ms", "schedule_delay_max_ms"):
            if figure in summary:
                print(name, figure, summary[figure].paired_text(higher_is_better=False))


if __name__ == "__main__":
    app()
