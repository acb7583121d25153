"""Where the client's and QuestDB's time goes, profiled (a script, not a test): the TSBS loader seed's investigation
redone for this client with ``--profile``.

    .venv/bin/python benchmarks/profile_reference.py [--folder results/profiles] [--row-count 1000000]

Each run is ``python -m harness bench --send --stream --profile --report`` over ILP/TCP, its output, record,
profile folder and report kept in ``--folder``:

- TSBS cpu-only into the sink and into QuestDB, with 1 and 2 workers, ILP protocols 1 and 2;
- a Parquet file whose strings are Python objects (``object`` columns: the serializer takes the GIL for them), into
  QuestDB with 1 and 2 workers;
- with ``--profile-native`` (the client's Rust and C frames, its waits for the GIL; it slows the client), cpu-only
  into the sink and the file into QuestDB, 2 workers.

Needs the sink on 9010 and QuestDB on this machine (``python -m harness native up``). Then ``harness compare`` of
all the records: every bucket's share side by side, each run's verdict.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import typer

app = typer.Typer(add_completion=False)


def object_strings_file(folder: Path, rows: int) -> Path:
    """A Parquet file of ``rows`` rows whose strings pandas reads as Python objects (``object`` dtype)."""
    path = folder / "object-strings.parquet"
    if not path.exists():
        generator = np.random.default_rng(7)
        frame = pd.DataFrame({
            "timestamp": pd.date_range("2024-01-01", periods=rows, freq="10ms"),
            "symbol": pd.Series(generator.choice(["ETH-USD", "BTC-USD", "SOL-USD"], rows)).astype(object),
            "side": pd.Series(generator.choice(["buy", "sell"], rows)).astype(object),
            "note": pd.Series([f"order {index}" for index in range(rows)], dtype=object),
            "price": generator.normal(100, 5, rows), "amount": generator.exponential(1.0, rows),
        })
        frame.to_parquet(path, index=False)
    return path


def run(folder: Path, name: str, flags: list[str]) -> Path:
    results = folder / f"{name}.json"
    command = [sys.executable, "-m", "harness", "bench", "--send", "--stream", "--reporting-period", "0", "--profile",
               "--report", "--results", str(results), *flags]
    done = subprocess.run(command, capture_output=True, text=True)
    (folder / f"{name}.txt").write_text(done.stdout + done.stderr)
    verdict = next((line for line in done.stdout.splitlines() if line.startswith("Verdict: ")), done.stderr.strip())
    print(f"{name}: {verdict}", flush=True)
    if done.returncode:
        raise SystemExit(f"{name}: exit {done.returncode}")
    return results


@app.command()
def main(folder: Path = typer.Option(Path("results/profiles")), row_count: int = typer.Option(1_000_000, min=1),
         file_rows: int = typer.Option(1_000_000, min=1), sink_port: int = 9010) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for target, flags in (("sink", ["--target", "sink", "--ilp-port", str(sink_port)]), ("questdb", [])):
        for protocol in ("1", "2"):
            for workers in (1, 2):
                records.append(run(folder, f"cpu-{target}-p{protocol}-{workers}w",
                                   [*flags, "--row-count", str(row_count), "--protocol-version", protocol,
                                    "--workers", str(workers)]))
    data = object_strings_file(folder, file_rows)
    for workers in (1, 2):
        records.append(run(folder, f"objects-questdb-{workers}w", ["--data", str(data), "--workers", str(workers),
                                                                    "--replace-table"]))
    records.append(run(folder, "cpu-sink-p1-2w-native", ["--target", "sink", "--ilp-port", str(sink_port),
                                                         "--row-count", str(row_count), "--workers", "2",
                                                         "--profile-native"]))
    records.append(run(folder, "objects-questdb-2w-native", ["--data", str(data), "--workers", "2", "--replace-table",
                                                             "--profile-native"]))
    compared = subprocess.run([sys.executable, "-m", "harness", "compare", *map(str, records)], capture_output=True,
                              text=True)
    (folder / "compare.txt").write_text(compared.stdout + compared.stderr)
    print(compared.stdout + compared.stderr)


if __name__ == "__main__":
    app()
