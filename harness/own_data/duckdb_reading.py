"""DuckDB's own reading of a user's file, the second reading the cross-check (``harness.own_data.cross_check``) holds
the run's against, and the figures of a reading in SQL aggregates (``Figures``: rows, each column's type family and
nulls, the designated timestamp's first, last and distinct instants), which both readings are measured by.

DuckDB reads every value itself: a CSV by ``read_csv`` with its own sniffer (``auto_detect``; only the delimiter,
the header and the encoding the run decided are handed to it), JSON lines by ``read_json`` (newline-delimited),
Parquet by ``read_parquet`` (a file, or a dataset's parts with their Hive folders). What DuckDB cannot open here is
handed to it another way: a CSV or JSON lines file compressed by bz2, lz4, xz or a zip is decompressed to a temporary
file in 1 MiB pieces (DuckDB 2.0.1 opens gzip and zstd itself, no extension can be loaded here); an Arrow IPC file or
stream is decoded by pyarrow and scanned by DuckDB batch by batch (DuckDB has no reader of its own for it), so there
only the run's conversions are checked, not the decoding. Memory stays bounded: DuckDB spills to a temporary folder
past ``MEMORY_LIMIT``.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from harness.own_data.compression import open_stream
from harness.own_data.csv_dialect import Dialect
from harness.own_data.readers.base import FileKind

# Compressions DuckDB opens itself (no extension loads here); the others are decompressed for it.
NATIVE_COMPRESSIONS = {None: "none", "gzip": "gzip", "zstd": "zstd"}
PIECE_BYTES = 1 << 20
MEMORY_LIMIT = "512MB"
# The name an Arrow source is registered under for a query.
ARROW_SOURCE = "arrow_source"


def family(duck_type: str) -> str:
    """A DuckDB type's family as the cross-check compares them: number, text, time, bool, or the type itself. An
    ENUM (an Arrow dictionary of strings) is text; an INTERVAL (an Arrow duration, which Parquet stores as the
    integers DuckDB reads) a number."""
    upper = duck_type.upper()
    if upper.startswith("ENUM"):
        return "text"
    if upper == "INTERVAL":
        return "number"
    if upper.startswith(("TIMESTAMP", "DATE", "TIME")):
        return "time"
    if upper in ("VARCHAR", "JSON") or upper.startswith("VARCHAR"):
        return "text"
    if upper == "BOOLEAN":
        return "bool"
    if re.match(r"(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL|NUMERIC)\b", upper):
        return "number"
    return upper.split("(")[0].lower()


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Measured:
    """A column a reading is measured on: its name (the run's), the SQL of its values, its DuckDB type, and the text
    tokens counted apart in it (the run's placeholders of missing numbers); ``numbers``: whether to count its values
    that are no numbers (of a text column the other reading reads as numbers)."""

    name: str
    sql: str
    duck_type: str
    tokens: tuple[str, ...] = ()
    numbers: bool = False


@dataclass(frozen=True)
class ColumnFigures:
    duck_type: str
    nulls: int
    tokens: int = 0  # values that are one of the run's placeholders
    not_numbers: int | None = None  # values that cast to no number (None: not counted)

    @property
    def family(self) -> str:
        return family(self.duck_type)


@dataclass
class Figures:
    """What a reading says of the data: its rows, each column's figures (by the run's names), and the designated
    timestamp's first and last instants (epoch microseconds) and distinct instants (None: not read as instants)."""

    rows: int
    columns: dict[str, ColumnFigures] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()  # columns this reading has that stand in no place of the other's
    first: int | None = None
    last: int | None = None
    distinct: int | None = None


def connect(scratch: Path):
    """A DuckDB connection whose memory is bounded, spilling into ``scratch`` (without ICU, as here, its
    TIMESTAMPTZ is UTC)."""
    import duckdb

    return duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "temp_directory": str(scratch),
                                  "preserve_insertion_order": False})


def describe(con, source: str, arrow: Callable | None = None) -> list[tuple[str, str]]:
    """The columns of ``source`` (a FROM clause), names and DuckDB types, in order."""
    with registered(con, arrow):
        return [(row[0], row[1]) for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]


def measure(con, source: str, columns: list[Measured], instant: str | None, arrow: Callable | None = None,
            distinct: bool = True) -> Figures:
    """``columns`` of ``source`` measured in one pass: count(*), count of each column (its nulls), the tokens in
    each, and min, max and (``distinct``) count(distinct) of ``instant`` (SQL of a TIMESTAMP or TIMESTAMPTZ) as
    epoch microseconds."""
    parts = ["count(*)"]
    for column in columns:
        parts.append(f"count({column.sql})")
        if column.tokens:
            listed = ", ".join(sql_text(token) for token in column.tokens)
            parts.append(f"count(*) FILTER (WHERE trim(trim(CAST({column.sql} AS VARCHAR)), '\"') IN ({listed}))")
        if column.numbers:
            parts.append(f"count(*) FILTER (WHERE {column.sql} IS NOT NULL AND "
                         f"TRY_CAST(trim(CAST({column.sql} AS VARCHAR)) AS DOUBLE) IS NULL)")
    if instant is not None:
        micros = f"epoch_us({instant})"
        parts += [f"min({micros})", f"max({micros})", f"count(DISTINCT {micros})" if distinct else "NULL"]
    query = f"SELECT {', '.join(parts)} FROM {source}"
    with registered(con, arrow):
        values = list(con.execute(query).fetchall()[0])
    rows = values.pop(0)
    figures = Figures(rows)
    for column in columns:
        counted = values.pop(0)
        tokens = values.pop(0) if column.tokens else 0
        not_numbers = values.pop(0) if column.numbers else None
        figures.columns[column.name] = ColumnFigures(column.duck_type, rows - counted, tokens, not_numbers)
    if instant is not None:
        figures.first, figures.last, figures.distinct = values
    return figures


@contextlib.contextmanager
def registered(con, arrow: Callable | None) -> Iterator[None]:
    """``arrow()`` (a fresh RecordBatchReader: a query reads it once) registered as ``ARROW_SOURCE`` for a query."""
    if arrow is None:
        yield
        return
    con.register(ARROW_SOURCE, arrow())
    try:
        yield
    finally:
        con.unregister(ARROW_SOURCE)


@dataclass
class DuckScan:
    """How DuckDB reads the files of one kind: the FROM clause (``source``), an Arrow reader where DuckDB scans
    pyarrow's decoding (``arrow``), and what was done for it, said (``how``)."""

    source: str
    how: str
    arrow: Callable | None = None


def duck_scan(kind: FileKind, paths: list[Path], dialect: Dialect | None, hive: bool, scratch: Path,
              arrow_batches: Callable[[Path], Iterator[pa.RecordBatch]] | None = None,
              arrow_schema: pa.Schema | None = None) -> DuckScan:
    """DuckDB's reading of ``paths`` (files of ``kind``): a file DuckDB cannot open decompressed into ``scratch``;
    an Arrow file read by pyarrow (``arrow_batches`` of a path, ``arrow_schema``)."""
    if kind.format.startswith("arrow"):
        def reader() -> pa.RecordBatchReader:
            return pa.RecordBatchReader.from_batches(arrow_schema, (batch for path in paths
                                                                    for batch in arrow_batches(path)))
        return DuckScan(ARROW_SOURCE, "Arrow IPC decoded by pyarrow, scanned by DuckDB (DuckDB has no Arrow IPC "
                                      "reader here)", reader)
    how, compression = "", kind.compression
    if compression not in NATIVE_COMPRESSIONS:
        paths = [decompressed(path, compression, scratch / f"part-{index}") for index, path in enumerate(paths)]
        how, compression = f" ({compression} decompressed for it: DuckDB here opens gzip and zstd only)", None
    listed = "[" + ", ".join(sql_text(str(path)) for path in paths) + "]"
    options = [f"compression={sql_text(NATIVE_COMPRESSIONS[compression])}"] if compression else []
    if hive:
        options.append("hive_partitioning=true")
    if len(paths) > 1 and kind.format == "parquet":
        options.append("union_by_name=true")  # a dataset's files may widen a column, a later one typing it
    if kind.format == "parquet":
        return DuckScan(f"read_parquet({', '.join([listed, *options])})", "DuckDB's read_parquet")
    if kind.format == "json":
        options.append("format='newline_delimited'")
        return DuckScan(f"read_json({', '.join([listed, *options])})", "DuckDB's read_json" + how)
    options += ["auto_detect=true", f"delim={sql_text(dialect.delimiter)}", f"header={str(dialect.header).lower()}"]
    if dialect.encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        options.append(f"encoding={sql_text(dialect.encoding)}")
    return DuckScan(f"read_csv({', '.join([listed, *options])})", "DuckDB's read_csv, its own sniffer" + how)


def decompressed(path: Path, compression: str, target: Path) -> Path:
    """``path`` decompressed into ``target`` in pieces of PIECE_BYTES (memory never holds more)."""
    with open_stream(path, compression) as stream, open(target, "wb") as out:
        while piece := stream.read(PIECE_BYTES):
            out.write(piece)
    return target


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A temporary folder for decompressed files, samples and DuckDB's spills, removed however the block ends."""
    folder = Path(tempfile.mkdtemp(prefix="harness-cross-check-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
