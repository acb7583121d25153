"""What ``--profile`` costs (a script, not a test): the same bench run with and without it, alternated, into the
sink and into QuestDB, with 1 and 2 workers; medians, paired ratios, and the client's peak RSS.

    .venv/bin/python benchmarks/profile_cost.py [--rounds 5] [--row-count 1000000] [--folder results/profile-cost]

Each run is a process of its own (``python -m harness bench --send --stream``), so that its peak RSS is its own
(``wait4``'s ``ru_maxrss``; py-spy is a process of its own and not counted in it). Into the sink needs the sink
listening (``python -m harness native up`` starts it on 9010); into QuestDB, a QuestDB on this machine
(``native up``) for async-profiler to attach to. On 2 shared cores the server is the bottleneck end to end and the
profilers' CPU is taken from both sides: the into-QuestDB ratio is the cost on this machine, not a bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer

from benchmarks.alternate import alternate_groups, write_record
from harness.records.benchmark_record import BenchmarkRecord, Measurement

app = typer.Typer(add_completion=False)


def bench(folder: Path, name: str, flags: list[str]) -> Measurement:
    """One bench run in a process of its own: its send phase's rows/s and its peak RSS."""
    results = folder / f"{name}.json"
    command = [sys.executable, "-m", "harness", "bench", "--send", "--stream", "--reporting-period", "0",
               "--results", str(results), *flags]
    with open(folder / f"{name}.txt", "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{name}: exit {process.returncode}; see {folder / f'{name}.txt'}")
    record = json.loads(results.read_text())
    send = record["phases"]["send"]
    profile = record.get("profile")
    extra = {"verdict": profile["verdict"]} if profile else {}
    return Measurement(seconds=send["seconds"], rows=send["rows"], client_cpu_seconds=send.get("client_cpu_seconds"),
                       peak_rss_bytes=usage.ru_maxrss * 1024, extra=extra, run_record=str(results))


@app.command()
def main(rounds: int = typer.Option(5, min=1), row_count: int = typer.Option(1_000_000, min=1),
         folder: Path = typer.Option(Path("results/profile-cost")), sink_port: int = 9010,
         json_path: Path | None = typer.Option(None, "--json", help="The benchmark record's path.")) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    targets = {"sink": ["--target", "sink", "--ilp-port", str(sink_port)], "questdb": ["--transport", "http"]}
    groups = {}
    for target, flags in targets.items():
        for workers in (1, 2):
            group = f"{target}, {workers} worker{'s' if workers > 1 else ''}"

            def variant(profiled: bool, target=target, flags=flags, workers=workers):
                def measure(round_number: int) -> Measurement:
                    name = f"{target}-{workers}w-{'on' if profiled else 'off'}-{round_number}"
                    measured = bench(folder, name, [*flags, "--row-count", str(row_count), "--workers", str(workers),
                                                    *(["--profile"] if profiled else [])])
                    print(f"round {round_number} {name:<22} {measured.rows / measured.seconds:>12,.0f} rows/s, "
                          f"peak RSS {measured.peak_rss_bytes / 2**20:.0f} MiB", flush=True)
                    return measured
                return measure

            groups[group] = {"off": variant(False), "on": variant(True)}
    record = BenchmarkRecord("profile-cost", parameters=dict(rounds=rounds, row_count=row_count, folder=str(folder)))
    record.comparisons.extend(alternate_groups(groups, rounds, baseline="off", warm_up=True))
    for comparison in record.comparisons:
        rate, rss = (comparison.summary["on"][figure] for figure in ("rows_per_second", "peak_rss_bytes"))
        off_rss = comparison.summary["off"]["peak_rss_bytes"].median
        print(f"{comparison.name}: rows/s with --profile {rate.paired_text()}; peak RSS {off_rss / 2**20:.0f} -> "
              f"{rss.median / 2**20:.0f} MiB")
    write_record(record, json_path)


if __name__ == "__main__":
    app()
