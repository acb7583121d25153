"""A long run's memory, watched (a script, not a test): the resident memory of a process and its children sampled
while it runs, and Python's own allocations traced in a harness command, what grew between two snapshots written
out. Made the 30-minute open-loop run's figures (results/reference/2026-11-28-open-loop/memory-30min/).

    .venv/bin/python benchmarks/memory_watch.py rss PID rss.txt [--every 10]
    .venv/bin/python benchmarks/memory_watch.py trace --first 60 --second 210 --out diff.txt -- bench --send ...

``rss`` writes a line per sample, ``<seconds> <MiB>``, until the process ends. ``trace`` runs the harness command
after ``--`` in this process with ``tracemalloc`` on (3 frames), takes a snapshot ``--first`` and ``--second``
seconds in, and writes the 25 largest growths between them with their tracebacks to ``--out``.
"""

from __future__ import annotations

import sys
import threading
import time
import tracemalloc
from pathlib import Path

import psutil
import typer

app = typer.Typer(add_completion=False)


@app.command()
def rss(pid: int, out: Path, every: float = typer.Option(10.0, min=0.1)) -> None:
    """Sample the resident memory of ``pid`` and its children every ``every`` seconds until it ends."""
    process = psutil.Process(pid)
    started = time.time()
    with open(out, "w") as lines:
        while process.is_running():
            try:
                resident = process.memory_info().rss + sum(child.memory_info().rss
                                                           for child in process.children(recursive=True))
            except psutil.NoSuchProcess:
                break
            lines.write(f"{time.time() - started:.0f} {resident / 2**20:.1f}\n")
            lines.flush()
            time.sleep(every)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def trace(context: typer.Context, first: float = typer.Option(60.0, min=0), second: float = typer.Option(210.0),
          out: Path = typer.Option(Path("tracemalloc-diff.txt"))) -> None:
    """Run the harness command given after ``--`` with tracemalloc on; write what grew between two snapshots."""
    tracemalloc.start(3)
    snapshots = {}

    def snapshot() -> None:
        time.sleep(first)
        snapshots["first"] = tracemalloc.take_snapshot()
        time.sleep(second - first)
        grown = tracemalloc.take_snapshot().compare_to(snapshots["first"], "traceback")
        with open(out, "w") as lines:
            lines.write(f"traced now {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB\n")
            for stat in grown[:25]:
                lines.write(f"{stat.size_diff / 1024:.0f} KiB, count {stat.count_diff}\n")
                for line in stat.traceback.format()[-6:]:
                    lines.write("   " + line + "\n")

    threading.Thread(target=snapshot, daemon=True).start()
    from harness.cli import main

    sys.argv = ["harness", *context.args]
    main()


if __name__ == "__main__":
    app()
