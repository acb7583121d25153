"""Files as a data engineer holds them, each sent into a real QuestDB with ``bench --send --data`` (only the flags its
kind needs) and read back exact: its rows counted on the server, every value compared by ``read --check-against``
with the same flags. The corpus (``SHAPES``, made here, small): every timestamp form (ISO 8601 with ``T`` or a space,
without seconds, with fractions to the nanosecond, ``Z`` and offsets, dates alone; other formats inferred or given;
epoch numbers in each unit; local times in a zone across both DST changes; a date beside a time of day (text, or
Parquet's typed date32 and time64), a timestamp's parts in columns of their own, quarters and months, a day and month
that read either way until a value past the first 10,000 rows tells), nulls in every type QuestDB keeps nulls of,
quoted numbers, an unnamed index column, names QuestDB refuses, each compression (a one-file .zip too), JSON lines, a
partitioned folder, twenty years of days (partitioned by YEAR), Latin-1, a BOM with CRLF line ends, lines above the
header (a title; a station's lines of fewer fields, in a CSV, a gzip and each file of a folder; a TSV's title),
placeholders for missing numbers (``-``, ``?``) beside a text column whose ``NA`` is a label, repeated names (in a
CSV's header and a Parquet file's fields), Parquet files pandas wrote with its index (an unnamed DatetimeIndex, naive
and tz-aware; a RangeIndex). A shape whose timestamps the reader makes of more than one column, or decides late, or
finds in pandas' index, names the first and last instants the file means, checked against the table (``read
--check-against`` reads the file as the run did, so it cannot tell a wrong reading). Then what the reader and
``inspect`` say of them, without a server (the flags that pin a reading among them); the flags ``inspect`` prints
pasted into ``bench`` landing the table the file lands without them; and the timestamps and lines refused
(``--skip-rows`` past the file's end, a ragged line below the header named by its line): each in one line, exit 2, no
table left."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import re
import shlex
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.commands.bench import run_bench
from harness.commands.inspect import InspectOptions, run_inspect
from harness.commands.read import ReadOptions, run_read
from harness.errors import ParameterError
from harness.own_data.files import DataFile, Reading
from harness.run.bench_options import BenchOptions
from harness.questdb.wal import wait_for_count
from helpers import assert_one_line_error, run_cli

ROWS = 120
START = pd.Timestamp("2024-03-01 06:00:00")


def _seconds(rows: int = ROWS, start: pd.Timestamp = START, freq: str = "s") -> pd.DatetimeIndex:
    return pd.date_range(start, periods=rows, freq=freq)


def _values(rows: int = ROWS, nulls: bool = False) -> dict[str, list]:
    """A row's other columns: an integer, a float, a string, a boolean; with ``nulls``, every one but the
    boolean (QuestDB's BOOLEAN has no null) empty now and then."""
    rng = np.random.default_rng(rows)
    ints = [int(value) for value in rng.integers(-10**12, 10**12, rows)]
    floats = [float(value) for value in rng.normal(size=rows) * 1e3]
    strings = [f"s{index % 7}é" for index in range(rows)]
    if nulls:
        ints = [None if index % 5 == 1 else value for index, value in enumerate(ints)]
        floats = [None if index % 6 == 2 else value for index, value in enumerate(floats)]
        strings = [None if index % 4 == 3 else value for index, value in enumerate(strings)]
    return {"count": ints, "load": floats, "host": strings, "ok": [bool(index % 3) for index in range(rows)]}


def _csv(columns: dict[str, list], delimiter: str = ",", header: bool = True, quote_numbers: bool = False,
         line_end: str = "\n") -> str:
    def cell(value) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            text = repr(value)
            return f'"{text}"' if quote_numbers else text
        if isinstance(value, int):
            return f'"{value}"' if quote_numbers else str(value)
        text = str(value)
        return f'"{text}"' if delimiter in text or '"' in text else text
    lines = [delimiter.join(columns)] if header else []
    lines += [delimiter.join(cell(value) for value in row) for row in zip(*columns.values())]
    return line_end.join(lines) + line_end


def _texts(stamps, form: str) -> list[str]:
    return [stamp.strftime(form) for stamp in stamps]


@dataclass
class Shape:
    """A file of the corpus: its name (the file's or folder's), how it is made, the flags its kind needs, the rows
    that land (and those left out, ``skipped``) and what the table's columns must be (a subset, by name); where
    given, the first and last instants of its designated timestamp (UTC) and the partitioning its data chooses."""

    name: str
    make: callable
    flags: dict = field(default_factory=dict)
    rows: int = ROWS
    skipped: int = 0
    types: dict = field(default_factory=dict)
    first: str | None = None
    last: str | None = None
    partition_by: str | None = None  # the table's PARTITION BY the data chooses, where the shape is about it


def _write(path: Path, text: str | bytes, encoding: str = "utf-8") -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode(encoding))
    return path


def _text_file(name: str, stamps_text: list[str], column: str = "ts", **options):
    def make(folder: Path) -> Path:
        return _write(folder / name, _csv({column: stamps_text, **_values()}, **options))
    return make


def _dst_paris() -> list[str]:
    """Paris local times across 2024's spring gap (02:00-03:00 never happened) and autumn overlap (02:00-03:00
    happened twice): every 20 minutes, in the order they happened."""
    spring = pd.date_range("2024-03-31 00:00", periods=12, freq="20min")
    autumn = pd.date_range("2024-10-27 00:00", periods=12, freq="20min", tz="Europe/Paris")
    texts = [stamp.strftime("%Y-%m-%d %H:%M:%S") for stamp in spring]
    texts += [stamp.strftime("%Y-%m-%d %H:%M:%S") for stamp in autumn]
    return texts + [f"2024-10-28 {minute // 60:02d}:{minute % 60:02d}:00" for minute in range(ROWS - len(texts))]


def _compressed(name: str, compress) -> callable:
    def make(folder: Path) -> Path:
        text = _csv({"ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), **_values(nulls=True)})
        return _write(folder / name, compress(text.encode()))
    return make


def _arrow_codec(codec: str):
    """Compression by Arrow's own streams (zstd, and lz4's frame format as the lz4 command writes it)."""
    def compress(data: bytes) -> bytes:
        sink = pa.BufferOutputStream()
        stream = pa.CompressedOutputStream(sink, codec)
        stream.write(data)
        stream.flush()
        stream.close()
        return sink.getvalue().to_pybytes()
    return compress


def _jsonl(name: str, nested: bool = False, compress=None) -> callable:
    def make(folder: Path) -> Path:
        values = _values(nulls=True)
        lines = []
        for index, stamp in enumerate(_texts(_seconds(), "%Y-%m-%dT%H:%M:%S.%fZ")):
            row = {"ts": stamp, **{key: column[index] for key, column in values.items()}}
            if nested:
                row["device"] = {"id": index % 4, "zone": f"z{index % 3}"}
            lines.append(json.dumps(row))
        data = ("\n".join(lines) + "\n").encode()
        return _write(folder / name, compress(data) if compress else data)
    return make


def _partitioned(folder: Path) -> Path:
    root = folder / "sales"
    for index, day in enumerate(("2024-03-01", "2024-03-02", "2024-03-03")):
        part = root / "year=2024" / f"day={day}"
        part.mkdir(parents=True)
        stamps = _seconds(40, pd.Timestamp(day) + pd.Timedelta(hours=6))
        pd.DataFrame({"ts": stamps, **{key: value[:40] for key, value in _values(40).items()}}).to_parquet(
            part / f"part-{index}.parquet")
    (root / "_SUCCESS").write_text("")
    return root


def _part_columns(index: int) -> dict[str, list]:
    """The columns of a folder's ``index``-th file: 40 rows a second apart, each file a minute after the last."""
    stamps = _seconds(40, START + pd.Timedelta(minutes=index))
    return {"ts": _texts(stamps, "%Y-%m-%d %H:%M:%S"), **{key: value[:40] for key, value in _values(40).items()}}


def _csv_folder(folder: Path) -> Path:
    root = folder / "readings"
    root.mkdir()
    for index in range(3):
        columns = _part_columns(index)
        if index == 1:  # a file whose floats look like integers: its reader infers int64, the first file's double
            columns["load"] = [float(int(value)) for value in columns["load"]]
        _write(root / f"readings-{index}.csv", _csv(columns).replace(".0,", ",") if index == 1 else _csv(columns))
    return root


def _parquet_with(make_frame) -> callable:
    def make(folder: Path) -> Path:
        path = folder / "typed.parquet"
        pq.write_table(make_frame(), path)
        return path
    return make


def _typed_table() -> pa.Table:
    """What other tools write: millisecond and second timestamps, dates, times of day, half floats, no pandas
    metadata, integers with nulls."""
    stamps = _seconds()
    return pa.table({
        "ts": pa.array(stamps.as_unit("ms").to_numpy(), pa.timestamp("ms")),
        "seen": pa.array(stamps.as_unit("s").to_numpy(), pa.timestamp("s", "UTC")),
        "day": pa.array([stamp.date() for stamp in stamps], pa.date32()),
        "at_time": pa.array([stamp.time() for stamp in stamps], pa.time64("us")),
        "half": pa.array(np.linspace(0, 1, ROWS).astype(np.float16)),
        "n": pa.array([None if index % 3 == 0 else index for index in range(ROWS)], pa.int32()),
    })


def _widened(folder: Path) -> Path:
    """Monthly files as public data sets publish them: a column all empty in one month (Arrow null) and doubles in
    the next, its name's case changing too, an integer column that becomes double."""
    root = folder / "trips"
    root.mkdir()
    for month, (fee, fare) in enumerate(((pa.nulls(60), pa.array(range(60), pa.int64())),
                                         (pa.array(np.linspace(0, 5, 60)), pa.array(np.linspace(1, 9, 60))))):
        stamps = _seconds(60, START + pd.Timedelta(days=31 * month))
        fee_name = "airport_fee" if month == 0 else "Airport_fee"  # as New York's taxi files spell it, month by month
        pq.write_table(pa.table({"pickup": pa.array(stamps.to_numpy()), fee_name: fee, "fare": fare}),
                       root / f"trips-2024-0{month + 1}.parquet")
    return root


def _with_index(folder: Path) -> Path:
    frame = pd.DataFrame({"ts": _seconds(), **_values()})
    frame.to_csv(folder / "indexed.csv")  # the index as the first column, its header cell empty
    return folder / "indexed.csv"


def _latin1(folder: Path) -> Path:
    columns = {"ts": _texts(_seconds(), "%Y-%m-%d %H:%M:%S"), "ville": ["Zürich", "Besançon", "Köln"] * (ROWS // 3)}
    return _write(folder / "latin1.csv", _csv(columns), "latin-1")


def _bom_crlf(folder: Path) -> Path:
    text = _csv({"ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%S"), **_values(nulls=True)}, line_end="\r\n")
    return _write(folder / "bom_crlf.csv", b"\xef\xbb\xbf" + text.encode())


def _refused_names(folder: Path) -> Path:
    columns = {"Time (UTC)": _texts(_seconds(), "%Y-%m-%d %H:%M:%S"), "price (USD)": _values()["load"],
               "load %": _values()["count"], "a.b": _values()["host"], "V": _values()["count"], "v": _values()["load"]}
    return _write(folder / "names.csv", _csv(columns))


def _skipped(folder: Path) -> Path:
    texts = _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ")
    texts[10], texts[77] = "n/a yet", "2024-13-45T99:00:00Z"
    return _write(folder / "skipped.csv", _csv({"ts": texts, **_values()}))


def _date_beside_time(name: str, stamps, date_form: str, time_form: str, delimiter: str = ",") -> callable:
    """A date in one column, its time of day in the next, as spreadsheets and loggers export them."""
    def make(folder: Path) -> Path:
        columns = {"Date": _texts(stamps, date_form), "Time": _texts(stamps, time_form),
                   "load": [float(index) / 8 for index in range(len(stamps))]}
        return _write(folder / name, _csv(columns, delimiter=delimiter))
    return make


def _hour_ending(stamp: pd.Timestamp) -> str:
    """A meter's hour ending: 01:00 ... 24:00, the day's last reading at the next midnight written 24:00."""
    return "24:00" if stamp.hour == 0 else stamp.strftime("%H:%M")


def _meter_date(stamp: pd.Timestamp) -> str:
    return (stamp - pd.Timedelta(hours=1) if stamp.hour == 0 else stamp).strftime("%Y-%m-%d")


def _parts(name: str, names: tuple[str, ...], stamps) -> callable:
    """A timestamp's parts in columns of their own (year, month, day, hour, minute), as whole numbers."""
    def make(folder: Path) -> Path:
        columns = {column: [getattr(stamp, part) for stamp in stamps]
                   for column, part in zip(names, ("year", "month", "day", "hour", "minute"))}
        return _write(folder / name, _csv({**columns, "load": [float(index) for index in range(len(stamps))]}))
    return make


YEAR_2015 = pd.date_range("2015-01-01", "2015-12-31 23:00", freq="h")
POWER = pd.date_range("2006-12-16 17:24", periods=5_000, freq="min")
METER = pd.date_range("2020-01-01 01:00", periods=ROWS, freq="h")
# Day first, every value reading either way until 13 January: the first that tells is row 17,281, past the first
# 10,000 rows the reading is decided on before the file is read whole.
LATE_DAY = pd.date_range("2015-01-01", periods=20_000, freq="min")


def _one_file_zip(data: bytes) -> bytes:
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("readings.csv", data)
    return sink.getvalue()


def _placeholders(folder: Path) -> Path:
    """Prices and measures as public files publish them: ``-`` and ``?`` where a value is missing, beside a region
    column whose ``NA`` (North America) is a label."""
    values = _values()
    prices = ["-" if index % 7 == 3 else "?" if index % 11 == 5 else str(value)
              for index, value in enumerate(values["count"])]
    measures = ["-" if index % 5 == 1 else repr(value) for index, value in enumerate(values["load"])]
    columns = {"ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), "price": prices, "measure": measures,
               "region": ["EU", "NA", "APAC"] * (ROWS // 3)}
    return _write(folder / "placeholders.csv", _csv(columns))


def _jsonl_placeholders(folder: Path) -> Path:
    lines = [json.dumps({"ts": stamp, "v": "-" if index % 4 == 0 else str(index / 4), "label": ["EU", "NA"][index % 2]})
             for index, stamp in enumerate(_texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"))]
    return _write(folder / "placeholders.jsonl", "\n".join(lines) + "\n")


def _repeated_names(folder: Path) -> Path:
    """Two columns named ISE, as a public file's header had them (and ISE_2 already taken by a third)."""
    header = "ts,ISE,ISE,ISE_2\n"
    values = _values()
    rows = [f"{stamp},{count},{load!r},{host}" for stamp, count, load, host in
            zip(_texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), values["count"], values["load"], values["host"])]
    return _write(folder / "repeated.csv", header + "\n".join(rows) + "\n")


def _repeated_fields(folder: Path) -> Path:
    values = _values()
    table = pa.table([pa.array(_seconds().to_numpy()), pa.array(values["count"]), pa.array(values["host"])],
                     names=["ts", "ISE", "ISE"])
    pq.write_table(table, folder / "repeated.parquet")
    return folder / "repeated.parquet"


ABOVE = ["Weather export", "Station,Zurich-Fluntern", "Units,degC,hPa"]  # a title and a station's lines: 1, 2, 3 fields


def _preamble(name: str, above: list[str], delimiter: str = ",", compress=None) -> callable:
    """A table below lines of fewer fields, as loggers and agencies export them: a title, a station's name, units."""
    def make(folder: Path) -> Path:
        text = "\n".join(above) + "\n" + _csv({"ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), **_values()},
                                              delimiter=delimiter)
        return _write(folder / name, compress(text.encode()) if compress else text)
    return make


def _preamble_folder(folder: Path) -> Path:
    """A station's daily files, each with the same lines above its header."""
    root = folder / "station"
    root.mkdir()
    for index in range(3):
        _write(root / f"station-{index}.csv", "\n".join(ABOVE[:2]) + "\n" + _csv(_part_columns(index)))
    return root


def _ragged(folder: Path) -> Path:
    """Two lines above the header, and a row of one field too many on the file's line 44."""
    text = _preamble("ragged.csv", ABOVE[:2])(folder).read_text().splitlines()
    text[43] += ",spare"
    return _write(folder / "ragged.csv", "\n".join(text) + "\n")


def _typed_date_and_time(folder: Path) -> Path:
    """Parquet's typed columns: a ``date32`` beside a ``time64`` (the hours of five days)."""
    stamps = pd.date_range("2024-02-27 00:00", periods=ROWS, freq="h")
    pq.write_table(pa.table({"day": pa.array(stamps.date, pa.date32()), "clock": pa.array(stamps.time, pa.time64("us")),
                             "v": list(range(ROWS))}), folder / "typed_day_clock.parquet")
    return folder / "typed_day_clock.parquet"


def _twenty_years_daily(folder: Path) -> Path:
    """Twenty years of daily rows (a market's or a station's): a partition a day would hold one row each."""
    days = pd.date_range("2000-01-01", "2019-12-31", freq="D")
    return _write(folder / "daily_20y.csv", _csv({"day": _texts(days, "%Y-%m-%d"), "close": [
        round(100 + index * 0.01, 2) for index in range(len(days))]}))


def _pandas_index(tz: str | None = None, index=None) -> callable:
    """A frame written by ``df.to_parquet()``: its DatetimeIndex unnamed (the usual habit), naive or in a zone, or
    (``index``) another index."""
    def make(folder: Path) -> Path:
        stamps = _seconds() if tz is None else _seconds().tz_localize(tz)
        frame = pd.DataFrame(_values(), index=stamps if index is None else index)
        if index is not None:
            frame.insert(0, "ts", _seconds())
        frame.to_parquet(folder / "frame.parquet")
        return folder / "frame.parquet"
    return make


SHAPES = [
    Shape("iso_z", _text_file("iso_z.csv", _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ")), types={"ts": "TIMESTAMP"}),
    Shape("iso_space", _text_file("iso_space.csv", _texts(_seconds(), "%Y-%m-%d %H:%M:%S"))),
    Shape("iso_minutes", _text_file("iso_minutes.csv", _texts(pd.date_range(START, periods=ROWS, freq="min"),
                                                              "%Y-%m-%dT%H:%M"))),
    Shape("iso_millis", _text_file("iso_millis.csv", _texts(_seconds() + pd.Timedelta("123ms"),
                                                            "%Y-%m-%dT%H:%M:%S.%f")), types={"ts": "TIMESTAMP"}),
    Shape("iso_nanos", _text_file("iso_nanos.csv", [text + "789" for text in _texts(
        _seconds() + pd.Timedelta("123456us"), "%Y-%m-%d %H:%M:%S.%f")]), types={"ts": "TIMESTAMP_NS"}),
    Shape("iso_offsets", _text_file("iso_offsets.csv", [stamp.isoformat() for stamp in _seconds().tz_localize(
        "UTC").tz_convert("Asia/Kolkata")])),
    Shape("iso_offsets_mixed", _text_file("iso_offsets_mixed.csv", [
        (stamp.tz_convert("America/New_York") if index % 2 else stamp).strftime("%Y-%m-%dT%H:%M:%S%z")
        for index, stamp in enumerate(_seconds().tz_localize("UTC"))])),
    Shape("date_only", _text_file("date_only.csv", _texts(pd.date_range("2001-01-01", periods=ROWS, freq="D"),
                                                          "%Y-%m-%d"), column="day"), types={"day": "TIMESTAMP"}),
    # Found without --at: the one column whose first values all parse with one inferred format.
    Shape("slashes", _text_file("slashes.csv", _texts(_seconds(), "%Y/%m/%d %H:%M:%S"), column="when")),
    Shape("stocks", lambda folder: _write(folder / "stocks.csv", _csv({
        "symbol": ["MSFT", "AMZN", "IBM"] * (ROWS // 3),
        "date": _texts(pd.date_range("2000-01-01", periods=ROWS, freq="MS"), "%b %-d %Y"),
        "price": [float(index) / 4 for index in range(ROWS)]})), types={"date": "TIMESTAMP", "symbol": "VARCHAR"}),
    Shape("month_names", _text_file("month_names.csv", _texts(pd.date_range("2000-01-01", periods=ROWS, freq="D"),
                                                              "%b %d %Y"), column="Date"), flags={"at": "Date"}),
    Shape("day_first", _text_file("day_first.csv", _texts(pd.date_range("2000-01-01", periods=ROWS, freq="D"),
                                                          "%d.%m.%Y %H:%M"), column="Datum"),
          flags={"at": "Datum", "at_format": "%d.%m.%Y %H:%M"}),
    Shape("epoch_s", _text_file("epoch_s.csv", [str(stamp.value // 10**9) for stamp in _seconds()], column="time"),
          flags={"at": "time", "at_unit": "s"}),
    Shape("epoch_ms", _text_file("epoch_ms.csv", [str(stamp.value // 10**6 + 7) for stamp in _seconds()]),
          flags={"at": "ts", "at_unit": "ms"}),
    Shape("epoch_float_s", _text_file("epoch_float_s.csv", [f"{stamp.value / 1e9:.3f}" for stamp in
                                                            _seconds() + pd.Timedelta("250ms")]),
          flags={"at": "ts", "at_unit": "s"}),
    Shape("epoch_ns", _text_file("epoch_ns.csv", [str(stamp.value + 11) for stamp in _seconds()]),
          flags={"at": "ts", "at_unit": "ns"}, types={"ts": "TIMESTAMP_NS"}),
    Shape("local_dst", _text_file("local_dst.csv", _dst_paris()), flags={"tz": "Europe/Paris"}),
    Shape("parse_dates", lambda folder: _write(folder / "parse_dates.csv", _csv({
        "ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), "shipped": _texts(pd.date_range(
            START + pd.Timedelta("3D"), periods=ROWS, freq="7h"), "%d/%m/%Y %H:%M")})),
          flags={"at": "ts", "parse_dates": "shipped"}, types={"shipped": "TIMESTAMP"}),
    Shape("nulls", lambda folder: _write(folder / "nulls.csv", _csv({
        "ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), **_values(nulls=True),
        "later": [None if index % 3 else text for index, text in
                  enumerate(_texts(_seconds(), "%Y-%m-%d %H:%M:%S"))]})), flags={"at": "ts"},
          types={"count": "LONG", "load": "DOUBLE", "host": "VARCHAR", "later": "TIMESTAMP"}),
    Shape("quoted_numbers", lambda folder: _write(folder / "quoted.csv", _csv(
        {"ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), **_values()}, quote_numbers=True)),
          types={"count": "LONG", "load": "DOUBLE"}),
    Shape("index_column", _with_index, types={"column0": "LONG"}),
    Shape("refused_names", _refused_names, flags={"at": "Time (UTC)"},
          types={"Time _UTC_": "TIMESTAMP", "price _USD_": "DOUBLE", "load _": "LONG", "a_b": "VARCHAR",
                 "V": "LONG", "v_2": "DOUBLE"}),
    Shape("renamed", _refused_names, flags={"at": "Time (UTC)", "rename": "Time (UTC)=ts,price (USD)=price_usd"},
          types={"ts": "TIMESTAMP", "price_usd": "DOUBLE", "load _": "LONG"}),
    Shape("gzip", _compressed("gzip.csv.gz", gzip.compress)),
    Shape("bzip2", _compressed("bzip2.csv.bz2", bz2.compress)),
    Shape("zstd", _compressed("zstd.csv.zst", _arrow_codec("zstd"))),
    Shape("lz4", _compressed("lz4.csv.lz4", _arrow_codec("lz4"))),
    Shape("jsonl", _jsonl("events.jsonl"), types={"count": "LONG", "ok": "BOOLEAN"}),
    Shape("ndjson_nested", _jsonl("nested.ndjson", nested=True), types={"device_id": "LONG", "device_zone": "VARCHAR"}),
    Shape("jsonl_gzip", _jsonl("events.jsonl.gz", compress=gzip.compress)),
    Shape("partitioned", _partitioned, rows=120, types={"year": "LONG", "day": "VARCHAR"}),
    Shape("csv_folder", _csv_folder, rows=120, types={"load": "DOUBLE"}),
    Shape("latin1", _latin1, flags={"encoding": "latin-1"}, rows=ROWS // 3 * 3),
    Shape("bom_crlf", _bom_crlf),
    Shape("tsv", _text_file("tabs.tsv", _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), delimiter="\t")),
    Shape("semicolons", _text_file("semicolons.csv", _texts(_seconds(), "%Y-%m-%d %H:%M:%S"), delimiter=";")),
    Shape("pipes_no_header", _text_file("pipes.csv", [str(stamp.value // 10**9) for stamp in _seconds()],
                                        delimiter="|", header=False), flags={"at": "column0", "at_unit": "s"}),
    Shape("parquet_typed", _parquet_with(_typed_table), flags={"at": "ts"},
          types={"ts": "TIMESTAMP", "seen": "TIMESTAMP", "day": "TIMESTAMP", "at_time": "VARCHAR", "half": "DOUBLE",
                 "n": "LONG"}),
    Shape("parquet_text_times", _parquet_with(lambda: pa.table({"ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%S.%fZ"),
                                                                "v": list(range(ROWS))})), flags={"at": "ts"}),
    Shape("twelve_hour_clock", _text_file("twelve_hour.csv", [f"{stamp.month}/{stamp.day}/{stamp.year} "
                                                              f"{stamp.strftime('%I:%M:%S %p').lstrip('0')}"
                                                              for stamp in pd.date_range(START, periods=ROWS,
                                                                                         freq="7h")],
                                        column="Time"), flags={"at": "Time"}),
    Shape("zone_names", _text_file("zone_names.csv", _texts(_seconds(), "%Y-%m-%d %H:%M:%S UTC"), column="Time"),
          flags={"at": "Time"}),
    Shape("digits_date", _text_file("digits_date.csv", _texts(pd.date_range("2000-01-01", periods=ROWS, freq="D"),
                                                              "%Y%m%d"), column="day"),
          flags={"at": "day", "at_format": "%Y%m%d"}),
    Shape("parquet_folder_widened", _widened, flags={"at": "pickup"}, types={"airport_fee": "DOUBLE",
                                                                              "fare": "DOUBLE"}),
    Shape("skip_bad_timestamps", _skipped, flags={"on_bad_timestamp": "skip"}, rows=ROWS - 2,
          skipped=2),
    # Found without --at: a date beside a time of day, joined.
    Shape("date_beside_twelve_hour_time", _date_beside_time("hourly_2015.csv", YEAR_2015, "%b %-d, %Y", "%I:%M %p"),
          rows=len(YEAR_2015), types={"Date_Time": "TIMESTAMP"}, first="2015-01-01T00:00", last="2015-12-31T23:00"),
    Shape("typed_date_beside_typed_time", _typed_date_and_time, types={"day_clock": "TIMESTAMP", "v": "LONG"},
          first="2024-02-27T00:00", last="2024-03-02T23:00"),
    Shape("household_power", _date_beside_time("household_power.csv", POWER, "%d/%m/%Y", "%H:%M:%S", delimiter=";"),
          rows=len(POWER), first="2006-12-16T17:24", last=str(POWER[-1])),
    # Named: --at DATE+TIME, a meter's hours ending at 24:00 (the next midnight).
    Shape("date_beside_hour_ending", lambda folder: _write(folder / "meter.csv", _csv({
        "day": [_meter_date(stamp) for stamp in METER], "hour_ending": [_hour_ending(stamp) for stamp in METER],
        "kwh": [float(index) for index in range(ROWS)]})),
          flags={"at": "day+hour_ending"}, types={"day_hour_ending": "TIMESTAMP"}, first="2020-01-01T01:00",
          last="2020-01-06T00:00"),
    Shape("parts_found", _parts("parts.csv", ("year", "month", "day", "hour"), METER), first="2020-01-01T01:00",
          last="2020-01-06T00:00", types={"year_month_day_hour": "TIMESTAMP"}),
    Shape("parts_named", _parts("parts_named.csv", ("yr", "mo", "dy", "hr", "mi"), _seconds(freq="7min")),
          flags={"at": "yr+mo+dy+hr+mi"}, first=str(START), last=str(START + pd.Timedelta(minutes=7 * (ROWS - 1)))),
    Shape("quarters", _text_file("quarters.csv", [f"{1974 + index // 4}Q{index % 4 + 1}" for index in range(ROWS)],
                                 column="period"), first="1974-01-01", last="2003-10-01"),
    Shape("months_named", _text_file("months_named.csv", _texts(pd.date_range("1977-01-01", periods=ROWS, freq="MS"),
                                                                "%Y-%b"), column="month"),
          first="1977-01-01", last="1986-12-01"),
    Shape("months_numbered", _text_file("months_numbered.csv", _texts(pd.date_range("2020-03-01", periods=ROWS,
                                                                                    freq="MS"), "%Y-%m"),
                                        column="month"), first="2020-03-01", last="2030-02-01"),
    Shape("day_first_told_late", lambda folder: _write(folder / "late_day.csv", _csv({
        "Datum": _texts(LATE_DAY, "%d.%m.%Y %H:%M"), "v": list(range(len(LATE_DAY)))})), rows=len(LATE_DAY),
          first="2015-01-01T00:00", last=str(LATE_DAY[-1])),
    Shape("xz", _compressed("xz.csv.xz", lzma.compress)),
    # Partitions that fit the data: twenty years of days by YEAR, not 7,305 partitions of a row each.
    Shape("twenty_years_daily", _twenty_years_daily, rows=7_305, first="2000-01-01", last="2019-12-31",
          partition_by="YEAR"),
    Shape("zip", _compressed("readings.zip", _one_file_zip)),
    Shape("placeholders", _placeholders, types={"price": "LONG", "measure": "DOUBLE", "region": "VARCHAR"}),
    Shape("jsonl_placeholders", _jsonl_placeholders, types={"v": "DOUBLE", "label": "VARCHAR"}),
    Shape("repeated_names", _repeated_names, types={"ISE": "LONG", "ISE_3": "DOUBLE", "ISE_2": "VARCHAR"}),
    Shape("repeated_fields", _repeated_fields, types={"ISE": "LONG", "ISE_2": "VARCHAR"}),
    Shape("pandas_index", _pandas_index(), types={"index": "TIMESTAMP", "count": "LONG"}, first=str(START),
          last=str(_seconds()[-1])),
    Shape("pandas_index_tz", _pandas_index("Asia/Kolkata"), types={"index": "TIMESTAMP"},
          first=str(START - pd.Timedelta(hours=5, minutes=30)),
          last=str(_seconds()[-1] - pd.Timedelta(hours=5, minutes=30))),
    Shape("pandas_range_index", _pandas_index(index=pd.RangeIndex(1_000, 1_000 + ROWS)),
          types={"ts": "TIMESTAMP", "count": "LONG"}),
    # Lines above the header, skipped as DuckDB's sniffer finds them.
    Shape("preamble_title", _preamble("titled.csv", ["Hourly readings, station 7"]), types={"count": "LONG"},
          first=str(START), last=str(_seconds()[-1])),
    Shape("preamble_station", _preamble("station.csv", ABOVE), types={"load": "DOUBLE", "ok": "BOOLEAN"},
          first=str(START), last=str(_seconds()[-1])),
    Shape("preamble_tsv", _preamble("titled.tsv", ["Exported from logger 7"], delimiter="\t"),
          types={"host": "VARCHAR"}, first=str(START), last=str(_seconds()[-1])),
    Shape("preamble_gzip", _preamble("station.csv.gz", ABOVE, compress=gzip.compress), first=str(START),
          last=str(_seconds()[-1])),
    Shape("preamble_folder", _preamble_folder, rows=120, first=str(START),
          last=str(START + pd.Timedelta(minutes=2, seconds=39))),
]


def test_the_corpus_is_at_least_thirty_shapes():
    assert len(SHAPES) >= 30 and len({shape.name for shape in SHAPES}) == len(SHAPES)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("corpus")
    made = {}
    for shape in SHAPES:
        place = folder / shape.name
        place.mkdir()
        made[shape.name] = shape.make(place)
    return made


def _server(questdb) -> dict:
    return dict(host=questdb.host, http_port=questdb.http_port, ilp_port=questdb.ilp_port,
                server_metrics_port=questdb.min_port)


@pytest.mark.slow  # one of the 67 cases of SHAPES
@pytest.mark.parametrize("shape", SHAPES, ids=[shape.name for shape in SHAPES])
def test_each_shape_lands_exact(questdb_server, corpus, tmp_path, shape):
    table = f"as_they_come_{shape.name}"
    questdb_server.client.drop_table(table)
    path = str(corpus[shape.name])
    with open("/dev/null", "w") as devnull:
        record = run_bench(BenchOptions(data=path, table=table, send=True, transport="http", reporting_period=0,
                                        sample_interval=0, results=str(tmp_path / "bench.json"),
                                        **_server(questdb_server), **shape.flags), out=devnull)
    try:
        assert record.status == "ok"
        assert record.validation.expected_rows == record.validation.visible_rows == shape.rows
        assert questdb_server.client.count(table) == shape.rows
        columns = dict(questdb_server.client.table_columns(table))
        for name, questdb_type in shape.types.items():
            assert columns.get(name) == questdb_type, (name, columns)
        reading = record.parameters["reading"]
        assert reading["skipped_rows"] == shape.skipped
        read, printed = _read(questdb_server, tmp_path, path, table, shape.flags)
        assert read.status == "ok", printed
        assert f"every value of {shape.rows} rows equal" in printed
        if shape.first is not None:
            _, rows = questdb_server.client.query(f"select min({record.parameters['at']}), "
                                                  f"max({record.parameters['at']}) from {table}")
            assert [pd.Timestamp(value) for value in rows[0]] == [pd.Timestamp(shape.first, tz="UTC"),
                                                                  pd.Timestamp(shape.last, tz="UTC")], rows
        if shape.partition_by is not None:
            assert questdb_server.client.table_layout(table)["partitionBy"] == shape.partition_by
            assert record.plan["partitioning"]["by"] == shape.partition_by
    finally:
        questdb_server.client.drop_table(table)


def _read(questdb, tmp_path, path, table, flags):
    out = io.StringIO()
    record = run_read(ReadOptions(check_against=path, table=table, host=questdb.host, http_port=questdb.http_port,
                                  pg_port=questdb.pg_port, server_metrics_port=questdb.min_port, reporting_period=0,
                                  sample_interval=0, results=str(tmp_path / "read.json"), **flags), out=out)
    return record, out.getvalue()


# --- what the reader makes of them, without a server ------------------------------------------------------------


def _frame(corpus, name, **flags) -> pd.DataFrame:
    data = DataFile(corpus[name], reading=Reading(**flags))
    return pd.concat(list(data.frames(1_000)), ignore_index=True)


def test_offsets_and_zones_become_the_instants_they_name(corpus):
    offsets = _frame(corpus, "iso_offsets_mixed")
    assert list(offsets.ts) == list(_seconds().tz_localize("UTC"))
    local = _frame(corpus, "local_dst", tz="Europe/Paris")
    texts = _dst_paris()
    # The spring gap's 02:00, 02:20, 02:40 move to 03:00 Paris (01:00 UTC); the autumn overlap's times are summer
    # time the first time round, winter time the second, in the file's order.
    spring = local.ts[:12].dt.tz_convert("Europe/Paris").dt.strftime("%H:%M").tolist()
    assert spring == ["00:00", "00:20", "00:40", "01:00", "01:20", "01:40", "03:00", "03:00", "03:00", "03:00",
                      "03:20", "03:40"]
    autumn = local.ts[12:24].reset_index(drop=True)
    expected = pd.date_range("2024-10-27 00:00", periods=12, freq="20min", tz="Europe/Paris").tz_convert("UTC")
    assert list(autumn) == list(expected) and autumn.is_monotonic_increasing and len(texts) == ROWS


def test_epoch_numbers_and_dates_land_on_the_right_instant(corpus):
    assert _frame(corpus, "epoch_ms", at="ts", at_unit="ms").ts[0] == START + pd.Timedelta("7ms")
    assert _frame(corpus, "epoch_float_s", at="ts", at_unit="s").ts[0] == START + pd.Timedelta("250ms")
    assert _frame(corpus, "epoch_ns", at="ts", at_unit="ns").ts[0] == START + pd.Timedelta("11ns")
    assert _frame(corpus, "date_only").day[1] == pd.Timestamp("2001-01-02")
    assert _frame(corpus, "iso_nanos").ts[0] == START + pd.Timedelta("123456789ns")
    # Formats pandas cannot guess from one value: a 12-hour clock, month first; a zone's name; digits.
    assert list(_frame(corpus, "twelve_hour_clock", at="Time").Time[:2]) == [START, START + pd.Timedelta("7h")]
    assert _frame(corpus, "zone_names", at="Time").Time[1] == (START + pd.Timedelta("1s")).tz_localize("UTC")
    assert _frame(corpus, "digits_date", at="day", at_format="%Y%m%d").day[31] == pd.Timestamp("2000-02-01")


def test_nulls_keep_one_dtype_in_every_piece(corpus):
    data = DataFile(corpus["nulls"])
    dtypes = {str(frame["count"].dtype) for frame in data.frames(10)}
    assert dtypes == {"Int64"}  # pieces without a null too: not int64 in one piece and float64 in the next


def test_inspect_names_every_conversion_and_every_new_name(corpus):
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(corpus["refused_names"]), at="Time (UTC)"), out)
    printed = out.getvalue()
    assert "comma-separated (sniffed), a header line (sniffed), utf-8" in printed
    assert "converted Time (UTC): text -> timestamp[us] (ISO 8601, read as UTC)" in printed
    assert "renamed 'price (USD)' -> 'price _USD_' (QuestDB refuses it: holds '(' ')')" in printed
    assert "renamed 'v' -> 'v_2'" in printed
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(corpus["month_names"]), at="Date"), out)
    assert "format '%b %d %Y' (inferred from its first values)" in out.getvalue()


def test_a_date_beside_a_time_is_joined_and_said_with_the_flags_that_pin_it(corpus, tmp_path):
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(corpus["household_power"])), out)
    printed = out.getvalue()
    assert "designated timestamp Date_Time" in printed, printed
    assert ("joined Date + Time into one timestamp column, Date_Time (found: a date beside a time of day; pin it: "
            "--at Date+Time --at-format '%d/%m/%Y')") in printed, printed
    frame = _frame(corpus, "date_beside_twelve_hour_time")
    assert list(frame.columns) == ["Date_Time", "load"] and frame.Date_Time.is_unique
    assert frame.Date_Time.iloc[12] == pd.Timestamp("2015-01-01 12:00")  # 12:00 PM is noon, 12:00 AM midnight
    # --at-dates-only: the dates alone, as meant; the time of day stays a column of its own.
    alone = _frame(corpus, "date_beside_twelve_hour_time", at="Date", at_dates_only=True)
    assert alone.Date.iloc[-1] == pd.Timestamp("2015-12-31") and "Time" in alone.columns
    # A real column named with a +: the name wins over the joined form.
    both = DataFile(_write(tmp_path / "plus.csv", _csv({
        "a+b": _texts(_seconds(), "%Y-%m-%d %H:%M:%S"), "a": ["2024-01-01"] * ROWS, "b": ["10:00"] * ROWS})),
        reading=Reading(at="a+b"))
    assert both.normalisation.join is None and both.sent_name("a+b") == "a_b"


def test_a_date_beside_a_time_and_placeholders_in_one_file_are_both_read(tmp_path):
    """The household power file as published: a date and a time of day joined, its measures' missing values ``?``
    read as nulls; a time of day written ``NA`` is a null, as a single timestamp column's is, not a value that does
    not parse."""
    rows = 2_000
    stamps = POWER[:rows]
    clocks = list(_texts(stamps, "%H:%M:%S"))
    clocks[5] = "NA"
    power = ["?" if index % 50 == 7 else f"{index / 100:.3f}" for index in range(rows)]
    path = _write(tmp_path / "power.csv", _csv({"Date": _texts(stamps, "%d/%m/%Y"), "Time": clocks,
                                                "Global_active_power": power}, delimiter=";"))
    data = DataFile(path)
    frame = pd.concat(list(data.frames(1_000)), ignore_index=True)
    assert list(frame.columns) == ["Date_Time", "Global_active_power"]
    assert frame.Date_Time.isna().tolist() == [index == 5 for index in range(rows)]
    assert list(frame.Date_Time.drop(5)) == list(stamps.delete(5))
    assert str(frame.Global_active_power.dtype) == "float64"
    assert frame.Global_active_power.isna().sum() == rows // 50
    lines = "\n".join(data.reading_lines())
    assert "joined Date + Time into one timestamp column, Date_Time" in lines, lines
    assert f"missing values read as nulls: Global_active_power '?' {rows // 50} times" in lines, lines


@pytest.mark.slow
def test_a_day_first_column_decided_past_the_first_pieces_is_read_day_first_throughout(tmp_path, monkeypatch):
    """Read in small blocks, the value that tells (13.01.2015) is met in a later piece than the first: every piece,
    the first ones too, is read day first, decided by the read before anything is sent."""
    from harness.own_data.readers import text

    monkeypatch.setattr(text, "INFER_BLOCK_BYTES", 4096)
    monkeypatch.setattr(text, "READ_BLOCK_BYTES", 4096)
    path = _write(tmp_path / "late.csv", _csv({"Datum": _texts(LATE_DAY, "%d.%m.%Y %H:%M"),
                                               "v": list(range(len(LATE_DAY)))}))
    data = DataFile(path)
    assert data.normalisation.undecided()  # the first 10,000 rows do not tell
    frame = pd.concat(list(data.frames(5_000)), ignore_index=True)
    assert list(frame.Datum) == list(LATE_DAY)
    assert "day first as '13.01.2015 00:00' tells" in "\n".join(data.reading_lines())


def test_placeholders_are_missing_numbers_and_a_label_na_stays_text(corpus):
    frame = _frame(corpus, "placeholders")
    dashes, questions = sum(index % 7 == 3 for index in range(ROWS)), sum(
        index % 11 == 5 and index % 7 != 3 for index in range(ROWS))
    assert str(frame.price.dtype) == "Int64" and frame.price.isna().sum() == dashes + questions
    assert str(frame.measure.dtype) == "float64" and frame.measure.isna().sum() == ROWS // 5
    assert list(frame.region[:3]) == ["EU", "NA", "APAC"] and frame.region.notna().all()
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(corpus["placeholders"])), out)
    printed = out.getvalue()
    assert "converted price: text -> int64 (numbers, '-', '?' read as missing)" in printed, printed
    assert (f"missing values read as nulls: price '-' {dashes} times, '?' {questions} times; measure '-' {ROWS // 5} "
            f"times") in printed, printed
    kept = _frame(corpus, "placeholders", keep_text=("price",))
    assert kept.price[3] == "-" and kept.price[0] == str(_values()["count"][0])


def test_a_column_of_numbers_mostly_that_stays_text_is_said(tmp_path):
    numbers = [str(index) if index % 3 else ["x", "y", "z", "w"][index % 4] for index in range(ROWS)]
    path = _write(tmp_path / "mostly.csv", _csv({"ts": _texts(_seconds(), "%Y-%m-%dT%H:%M:%SZ"), "v": numbers}))
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(path)), out)
    assert "kept as text v: numbers but for 4 other values" in out.getvalue(), out.getvalue()
    assert str(_frame({"mostly": path}, "mostly", na_values=("x", "y", "z", "w")).v.dtype) == "Int64"


@pytest.mark.slow
def test_a_later_placeholder_the_first_rows_did_not_hold_is_refused_in_one_line(tmp_path):
    """The placeholders are decided on the first rows: one seen only further on ends the read before anything is
    sent, naming its line and the flags that say what it is; with --na-values it is read as missing."""
    rows = 12_000
    values = ["-" if index % 9 == 0 else str(index) for index in range(rows)]
    values[11_000] = "?"
    path = _write(tmp_path / "late.csv", _csv({"ts": _texts(_seconds(rows), "%Y-%m-%dT%H:%M:%SZ"), "v": values}))
    result = run_cli("inspect", "--data", str(path))
    assert_one_line_error(result, 2, "line 11002, column 'v': '?' is neither a number nor a placeholder",
                          "--na-values -,?", "--keep-text v")
    data = DataFile(path, reading=Reading(na_values=("?",)))
    assert data.rows() == rows and data.described()["missing_values"] == {"v": {"-": 1334, "?": 1}}


def test_repeated_names_and_pandas_index_are_said_as_renames(corpus):
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(corpus["repeated_names"])), out)
    assert "renamed 'ISE' -> 'ISE_3' (the name repeats: column 3)" in out.getvalue(), out.getvalue()
    assert DataFile(corpus["repeated_fields"]).described()["renames"] == {"ISE (column 3)": "ISE_2"}
    indexed = DataFile(corpus["pandas_index_tz"])
    assert indexed.index_timestamp() == "index"
    assert indexed.described()["renames"] == {"__index_level_0__": "index"}
    frame = _frame(corpus, "pandas_index_tz")
    assert list(frame["index"][:2]) == list(_seconds()[:2].tz_localize("Asia/Kolkata"))
    ranged = DataFile(corpus["pandas_range_index"])
    assert ranged.schema.names == ["ts", "count", "load", "host", "ok"] and ranged.index_timestamp() is None


def test_lines_above_the_header_are_skipped_and_said(corpus, tmp_path):
    """The lines DuckDB's sniffer finds above the header are skipped and said, long ones cut, with the flag that
    pins them; a folder's files each skip the first file's; given, their number is taken as given."""
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(corpus["preamble_station"])), out)
    assert ("skipped 3 lines above the header: 'Weather export', 'Station,Zurich-Fluntern', 'Units,degC,hPa' "
            "(found as DuckDB's sniffer finds them; pin it: --skip-rows 3)") in out.getvalue(), out.getvalue()
    assert DataFile(corpus["preamble_tsv"]).described()["lines_above_header"] == {
        "lines": 1, "first": ["Exported from logger 7"], "given": False}
    folder = DataFile(corpus["preamble_folder"])
    assert "skipped 2 lines above the header of each of 3 files (the first file's)" in folder.reading_lines()[1]
    assert folder.rows() == 120
    long = _preamble("long.csv", ["x" * 100])(tmp_path)
    said = DataFile(long, reading=Reading(skip_rows=1)).reading_lines()[1]
    assert said == f"  skipped 1 line above the header: '{'x' * 57}...' (\u27e8skip_rows\u27e9 1)", said
    for name in ("iso_z", "tsv", "pipes_no_header", "household_power", "csv_folder"):  # no line above the header
        assert not DataFile(corpus[name]).preamble, name


@pytest.mark.slow
def test_lines_refused_around_the_header_are_named_in_one_line(corpus, tmp_path):
    result = run_cli("inspect", "--data", str(corpus["preamble_station"]), "--skip-rows", "500")
    assert_one_line_error(result, 2, "--skip-rows 500 skips every line of the file (it has 124)")
    # None skipped: the title is the header, and the station's line the first that does not fit it.
    result = run_cli("inspect", "--data", str(corpus["preamble_station"]), "--skip-rows", "0")
    assert_one_line_error(result, 2, "line 2 has 2 fields, the header 1: 'Station,Zurich-Fluntern'")
    result = run_cli("inspect", "--data", str(_ragged(tmp_path)))
    assert_one_line_error(result, 2, "ragged.csv: line 44 has 6 fields, the header 5")
    with pytest.raises(ParameterError, match="skip_rows: a number of lines, 0 or more, got -1"):
        DataFile(corpus["preamble_station"], reading=Reading(skip_rows=-1))
    result = run_cli("inspect", "--data", str(corpus["jsonl"]), "--skip-rows", "2")
    assert_one_line_error(result, 2, "--skip-rows: skips lines above a CSV's header", "events.jsonl is json")


def test_inspect_prints_the_flags_that_pin_its_reading(corpus):
    """One line of flags, quoted for a shell, the table's partitioning last, and a comment for what no flag gives."""
    def flags(name: str, **given) -> list[str]:
        out = io.StringIO()
        run_inspect(InspectOptions(data=str(corpus[name]), **given), out)
        return [line for line in out.getvalue().splitlines() if line.startswith(("flags: ", "# "))]

    assert flags("household_power") == ["flags: --at Date+Time --at-format %d/%m/%Y --csv-delimiter ';' "
                                         "--partition-by MONTH"]
    assert flags("placeholders") == ["flags: --at ts --na-values '-,?' --partition-by HOUR"]
    assert flags("preamble_station") == ["flags: --at ts --skip-rows 3 --partition-by HOUR"]
    assert flags("day_first_told_late") == ["flags: --at Datum --at-format '%d.%m.%Y %H:%M' "
                                             "--partition-by MONTH"]
    assert flags("renamed", at="Time (UTC)", rename="Time (UTC)=ts,price (USD)=price_usd") == [
        "flags: --at 'Time (UTC)' --rename 'Time (UTC)=ts,price (USD)=price_usd' --partition-by HOUR"]
    assert flags("repeated_names") == ["flags: --at ts --partition-by HOUR",
                                       "# renamed 'ISE' -> 'ISE_3' (the name repeats: column 3): no flag names it, "
                                       "every reading makes the same name"]


@pytest.mark.slow
def test_a_files_advice_is_a_flag_of_the_harness(tmp_path):
    path = tmp_path / "durations.parquet"
    pd.DataFrame({"ts": _seconds(), "took": pd.to_timedelta(np.arange(ROWS), unit="s")}).to_parquet(path)
    result = run_cli("inspect", "--data", str(path))
    assert_one_line_error(result, 2, "'took'", "convert it: send with --convert-dtypes, which applies")


@pytest.mark.slow
def test_a_bad_value_found_while_sending_ends_in_one_line_and_the_record_says_what_landed(questdb_server, tmp_path,
                                                                                         monkeypatch):
    """A value the scan before sending does not read (a CSV's float column: only timestamps, integers and booleans
    are read whole first) that its column's type cannot take ends the run when its block is read: one line, exit
    2, the record saying how many rows QuestDB holds."""
    from harness.own_data import files
    from harness.own_data.readers import text

    monkeypatch.setattr(text, "INFER_BLOCK_BYTES", 4096)  # the types inferred from the first lines alone
    # More rows than are read before sending (the first 10,000) and than a piece converts at once (100,000).
    loads = [repr(float(index)) for index in range(150_000)]
    loads[140_000] = "n.a."
    path = _write(tmp_path / "late_bad.csv", _csv({"ts": _texts(_seconds(150_000), "%Y-%m-%dT%H:%M:%SZ"),
                                                   "load": loads}))
    table = "as_they_come_late_bad"
    questdb_server.client.drop_table(table)
    results = tmp_path / "late.json"
    try:
        with pytest.raises(files.UsageError) as failed, open("/dev/null", "w") as devnull:
            run_bench(BenchOptions(data=str(path), table=table, send=True, transport="http", reporting_period=0,
                                   sample_interval=0, worker_chunk_row_count=5_000, results=str(results),
                                   **_server(questdb_server)), out=devnull)
        message = str(failed.value)
        assert "late_bad.csv: line 140002, column 'load': 'n.a.' is not double" in message, message
        assert "\n" not in message
        record = json.loads(results.read_text())
        assert record["status"] == "failed"
        # What was sent before the failure, and what QuestDB showed of it then (its WAL applies later): over HTTP
        # every row sent was acknowledged, and all of them, no more, become visible.
        said = re.search(rf"; (\d+) rows were sent \(flushed\) before the failure.*{table}: (\d+) rows visible",
                         record["error"])
        assert said is not None, record["error"]
        sent, visible = int(said[1]), int(said[2])
        assert 0 < sent < 150_000 and visible <= sent, record["error"]
        wait_for_count(questdb_server.client, table, sent, 60)
        assert questdb_server.client.count(table) == sent
    finally:
        questdb_server.client.drop_table(table)


@pytest.mark.slow
def test_tunes_code_reads_a_file_as_the_sweep_did(questdb_server, corpus):
    """The code tune prints, for a CSV whose timestamps need parsing and whose names QuestDB refuses, run as
    printed: every row lands, under the names the sweep sent."""
    from harness.run.tune import setting_code

    questdb = questdb_server
    options = BenchOptions(data=str(corpus["refused_names"]), at="Time (UTC)", rename="price (USD)=price_usd",
                           table="as_they_come_tune_code", host=questdb.host, ilp_port=questdb.ilp_port, send=True)
    table = options.table
    code = setting_code(options.plan(), options.host, options.ilp_port)
    assert "DataFile(PATH, reading=Reading(at='Time (UTC)', renames='price (USD)=price_usd'))" in code, code
    questdb.client.drop_table(table)
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
        wait_for_count(questdb.client, table, ROWS, 60)
        columns = dict(questdb.client.table_columns(table))
        assert "price_usd" in columns and "load _" in columns and questdb.client.count(table) == ROWS
    finally:
        questdb.client.drop_table(table)


@pytest.mark.slow
def test_a_column_whose_later_values_need_a_wider_type_is_widened_before_sending(questdb_server, tmp_path,
                                                                                 monkeypatch):
    """A CSV's types are inferred from its first 16 MiB; an integer column with a decimal further on becomes DOUBLE,
    a boolean column with other text VARCHAR, found by the read before sending: every row lands, every value read
    back equal, the widening named."""
    from harness.own_data.readers import text

    monkeypatch.setattr(text, "INFER_BLOCK_BYTES", 4096)
    rows = 3_000
    counts = [str(index) for index in range(rows)]
    flags = ["true" if index % 2 else "false" for index in range(rows)]
    counts[2_500], flags[2_900] = "2.5", "unknown"
    path = _write(tmp_path / "widened.csv", _csv({"ts": _texts(_seconds(rows), "%Y-%m-%dT%H:%M:%SZ"),
                                                  "count": counts, "flag": flags}))
    table = "as_they_come_widened"
    questdb_server.client.drop_table(table)
    try:
        with open("/dev/null", "w") as devnull:
            record = run_bench(BenchOptions(data=str(path), table=table, send=True, transport="http",
                                            reporting_period=0, sample_interval=0, results=str(tmp_path / "b.json"),
                                            **_server(questdb_server)), out=devnull)
        assert record.validation.visible_rows == rows
        assert dict(questdb_server.client.table_columns(table))["count"] == "DOUBLE"
        assert dict(questdb_server.client.table_columns(table))["flag"] == "VARCHAR"
        widened = [item for item in record.parameters["reading"]["conversions"] if "widened" in item["how"]]
        assert [(item["column"], item["from"], item["to"]) for item in widened] == [
            ("count", "int64", "double"), ("flag", "bool", "string")]
        read, printed = _read(questdb_server, tmp_path, str(path), table, {})
        assert read.status == "ok" and f"every value of {rows} rows equal" in printed, printed
    finally:
        questdb_server.client.drop_table(table)


# --- timestamps refused: one line, exit 2, nothing sent, no table left ----------------------------------------


def _refused_timestamps(folder: Path) -> dict[str, tuple[Path, list[str], tuple[str, ...]]]:
    """name -> (file, flags, fragments of the one error line)."""
    beside = _date_beside_time("beside.csv", POWER[:ROWS], "%d/%m/%Y", "%H:%M:%S")(folder)
    either_way = _write(folder / "either_way.csv", _csv({"Datum": _texts(pd.date_range("2015-01-01", periods=ROWS,
                                                                                       freq="h"), "%d.%m.%Y %H:%M"),
                                                         "v": list(range(ROWS))}))
    return {
        "dates alone beside a time of day": (beside, ["--at", "Date"], (
            "--at Date: the column beside it, 'Time', holds times of day ('17:24:00')", "--at Date+Time",
            "--at-dates-only")),
        "a day and month nothing tells": (either_way, [], (
            "column Datum: its day and month read either way in every value",
            "'02.01.2015 00:00' is 2015-02-01 month first, 2015-01-02 day first",
            "--at Datum --at-format '%d.%m.%Y %H:%M' (day first) or '%m.%d.%Y %H:%M' (month first)")),
        "a joined column the file lacks": (beside, ["--at", "Date+Hour"], ("--at", "no column 'Hour'",
                                                                           "columns: Date, Time, load")),
        "typed dates alone beside typed times of day": (_typed_date_and_time(folder), ["--at", "day"], (
            "--at day: the column beside it, 'clock', holds times of day (time64[us])", "--at day+clock",
            "--at-dates-only")),
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", ["dates alone beside a time of day", "a day and month nothing tells",
                                  "a joined column the file lacks", "typed dates alone beside typed times of day"])
def test_a_timestamp_that_would_land_wrong_is_refused_in_one_line(questdb_server, tmp_path, case):
    path, flags, fragments = _refused_timestamps(tmp_path)[case]
    table = "as_they_come_refused"
    questdb_server.client.drop_table(table)
    result = run_cli("bench", "--send", "--data", str(path), "--table", table, *flags, "--host", questdb_server.host,
                     "--http-port", str(questdb_server.http_port), "--ilp-port", str(questdb_server.ilp_port),
                     "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, *fragments)
    _, rows = questdb_server.client.query("select table_name from tables()")
    assert table not in {str(row[0]) for row in rows}


@pytest.mark.slow
@pytest.mark.parametrize("case", ["--skip-rows past the file's end", "a ragged line below the header"])
def test_lines_that_do_not_fit_are_refused_in_one_line_and_no_table_is_left(questdb_server, corpus, tmp_path, case):
    path, flags, fragment = {
        "--skip-rows past the file's end": (corpus["preamble_station"], ["--skip-rows", "124"],
                                            "--skip-rows 124 skips every line of the file (it has 124)"),
        "a ragged line below the header": (_ragged(tmp_path), [], "ragged.csv: line 44 has 6 fields, the header 5"),
    }[case]
    table = "as_they_come_lines_refused"
    questdb_server.client.drop_table(table)
    result = run_cli("bench", "--send", "--data", str(path), "--table", table, *flags, "--host", questdb_server.host,
                     "--http-port", str(questdb_server.http_port), "--ilp-port", str(questdb_server.ilp_port),
                     "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, fragment)
    _, rows = questdb_server.client.query("select table_name from tables()")
    assert table not in {str(row[0]) for row in rows}


@pytest.mark.slow
def test_inspects_flags_pasted_into_bench_land_the_same_table(questdb_server, tmp_path):
    """A logger's file with every decision the reader makes on its own: lines above the header, a semicolon, a
    date beside a time of day read day first, ``?`` for a missing value. The flags ``inspect`` prints, pasted into
    ``bench --send --data``, are taken by the command line and land the table the file lands without them."""
    stamps = POWER[:ROWS]
    text = _csv({"Date": _texts(stamps, "%d/%m/%Y"), "Time": _texts(stamps, "%H:%M:%S"),
                 "power": ["?" if index % 9 == 4 else f"{index / 8:.3f}" for index in range(ROWS)]}, delimiter=";")
    path = _write(tmp_path / "logger.csv", "Logger 7 export\nSite;Zurich\n" + text)
    printed = run_cli("inspect", "--data", str(path))
    assert printed.returncode == 0, printed.stderr
    line = next(line for line in printed.stdout.splitlines() if line.startswith("flags: "))
    assert line == ("flags: --at Date+Time --at-format %d/%m/%Y --csv-delimiter ';' --na-values '?' --skip-rows 2 "
                    "--partition-by DAY")
    server = ["--host", questdb_server.host, "--http-port", str(questdb_server.http_port), "--ilp-port",
              str(questdb_server.ilp_port), "--server-metrics-port", str(questdb_server.min_port)]
    tables = {"as_they_come_unpinned": [], "as_they_come_pinned": shlex.split(line[len("flags: "):])}
    landed = {}
    try:
        for table, flags in tables.items():
            questdb_server.client.drop_table(table)
            result = run_cli("bench", "--send", "--data", str(path), "--table", table, *flags, *server,
                             "--results", str(tmp_path / f"{table}.json"))
            assert result.returncode == 0, result.stderr
            wait_for_count(questdb_server.client, table, ROWS, 60)
            landed[table] = questdb_server.client.query(f"select * from {table} order by Date_Time")
        assert landed["as_they_come_pinned"] == landed["as_they_come_unpinned"]
        columns, rows = landed["as_they_come_pinned"]
        missing = sum(index % 9 == 4 for index in range(ROWS))
        assert len(rows) == ROWS and sum(row[columns.index("power")] is None for row in rows) == missing
    finally:
        for table in tables:
            questdb_server.client.drop_table(table)
