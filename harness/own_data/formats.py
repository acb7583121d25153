"""What a path names, told by its name: the file formats the user's data comes in, their compression, and a
folder or glob of files read as one dataset, Hive partition folders (``key=value``) among its path's parts.

Formats: Parquet (``.parquet``, ``.pq``), Arrow IPC (``.arrow``, ``.feather``, ``.ipc``; a stream: ``.arrows``),
CSV (``.csv``; ``.tsv``: tab-separated) and JSON lines (``.jsonl``, ``.ndjson``; ``.json`` when it holds JSON lines: one
that holds a JSON array is refused, the command that makes JSON lines of it named). A format read front to back (CSV,
JSON lines, an Arrow stream: its reader's ``streamed``, ``harness.own_data.readers``) may be compressed, told by a
further suffix: ``.gz``, ``.bz2``, ``.zst``, ``.lz4`` (the lz4 frame format), ``.xz``, or ``.zip`` holding one file
(``harness.own_data.compression``; ``data.zip``: its format its one file's). A dataset's files are every file of a
known format below the folder (or matching the glob), those whose names start with ``.`` or ``_`` (``_SUCCESS``,
``.crc``) left out, read in the order of their paths; they must share one format.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from harness.errors import UsageError, named
from harness.own_data.compression import COMPRESSIONS, NotOneFile, zip_member
from harness.own_data.readers.base import FileKind
from harness.own_data.readers.registry import READERS

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
           ".arrows": "arrow stream", ".csv": "csv", ".tsv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json"}
KNOWN = ("Parquet: .parquet/.pq, Arrow IPC: .arrow/.feather/.ipc, Arrow stream: .arrows, CSV: .csv/.tsv, JSON lines: "
         ".jsonl/.ndjson/.json; compressed CSV, JSON lines or Arrow stream: + .gz/.bz2/.zst/.lz4/.xz/.zip; or a folder "
         "of them")


def kind_of(path: Path) -> FileKind | None:
    """The kind ``path``'s suffixes name (a ``.zip`` whose name names no format: its one file's), or None when
    they name none of the formats; a ``.zip`` that does not hold one file raises NotOneFile."""
    suffixes = [suffix.lower() for suffix in path.suffixes]
    compression = COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    if compression is not None:
        suffixes = suffixes[:-1]
    if compression == "zip":
        member = zip_member(path)
        if not suffixes or suffixes[-1] not in FORMATS:
            suffixes = [suffix.lower() for suffix in Path(member).suffixes]
    form = FORMATS.get(suffixes[-1]) if suffixes else None
    if form is None or (compression is not None and not READERS[form].streamed):
        return None
    return FileKind(form, compression, suffixes[-1] == ".tsv")


@dataclass(frozen=True)
class DataPart:
    """One file of the data: its path, and the Hive partition values its folders carry (``key=value``)."""

    path: Path
    partitions: tuple[tuple[str, str], ...] = ()


def _is_glob(text: str) -> bool:
    return any(char in text for char in "*?[")


def locate(path: str | os.PathLike, parameter: str) -> tuple[list[DataPart], FileKind, bool]:
    """The files ``path`` names (a file, a folder, or a glob), their one kind, and whether it is a dataset (a
    folder or a glob); refused in one line starting with the ``parameter`` that named it: no such path, an
    unknown file type, an empty folder, files of two formats."""
    text = str(path)
    prefix = f"{named(parameter)} {text}"
    if os.path.isfile(text):
        try:
            kind = kind_of(Path(text))
        except NotOneFile as problem:
            raise UsageError(f"{prefix}: {problem}") from None
        if kind is None:
            suffix = "".join(Path(text).suffixes[-2:]) or "(no suffix)"
            raise UsageError(f"{prefix}: unknown file type {suffix!r} ({KNOWN})")
        return [DataPart(Path(text))], kind, False
    if os.path.isdir(text):
        root = Path(text)
        found = sorted(candidate for candidate in root.rglob("*") if candidate.is_file()
                       and not any(part.startswith((".", "_")) and "=" not in part
                                   for part in candidate.relative_to(root).parts))
    elif _is_glob(text):
        found = sorted(Path(name) for name in glob.glob(text, recursive=True) if os.path.isfile(name))
        root = Path(os.path.commonpath([str(name.parent) for name in found])) if found else Path(".")
    elif not os.path.exists(text):
        raise UsageError(f"{prefix}: no such file or folder")
    else:
        raise UsageError(f"{prefix}: not a file or a folder")
    parts = []
    for candidate in found:
        try:
            parts.append((candidate, kind_of(candidate)))
        except NotOneFile as problem:
            raise UsageError(f"{prefix}: {candidate}: {problem}") from None
    known = [(candidate, kind) for candidate, kind in parts if kind is not None]
    if not known:
        what = "no files" if not parts else f"no file of a known type (the first: {parts[0][0].name})"
        raise UsageError(f"{prefix}: {what} to read ({KNOWN})")
    first, first_kind = known[0]
    for candidate, kind in known[1:]:
        if kind.format != first_kind.format:
            raise UsageError(f"{prefix}: {first} is {first_kind.describe()}, {candidate} {kind.describe()}: a "
                             f"dataset's files share one format")
    return [DataPart(candidate, _partitions(candidate, root)) for candidate, _ in known], first_kind, True


def _partitions(path: Path, root: Path) -> tuple[tuple[str, str], ...]:
    """The ``key=value`` folders between ``root`` and ``path``, in order."""
    try:
        folders = path.relative_to(root).parts[:-1]
    except ValueError:
        folders = path.parts[:-1]
    return tuple(tuple(folder.split("=", 1)) for folder in folders if "=" in folder and not folder.startswith("="))


def _partition_type(values: list[str]) -> pa.DataType:
    try:
        [int(value) for value in values]
        return pa.int64()
    except ValueError:
        return pa.string()


def partition_schema(schema: pa.Schema, parts: list[DataPart], parameter: str, name: str) -> pa.Schema:
    """``schema`` with a column per Hive partition key, typed int64 where every value is an integer; parts in
    folders of other keys, or a key that is also a column, are refused in one line starting with the
    ``parameter`` that named the data."""
    prefix = f"{named(parameter)} {name}"
    keys = [key for key, _ in parts[0].partitions]
    for part in parts[1:]:
        if [key for key, _ in part.partitions] != keys:
            raise UsageError(f"{prefix}: {parts[0].path} and {part.path} lie in different partition folders "
                             f"({', '.join(keys) or 'none'}; {', '.join(key for key, _ in part.partitions) or 'none'})")
    for key in keys:
        if key in schema.names:
            raise UsageError(f"{prefix}: the partition folders' key {key!r} is also a column of the files")
    fields = [pa.field(key, _partition_type([dict(part.partitions)[key] for part in parts])) for key in keys]
    return pa.schema(list(schema) + fields, metadata=schema.metadata)


def with_partitions(batch: pa.RecordBatch, part: DataPart, wanted: pa.Schema) -> pa.RecordBatch:
    """``batch`` of ``part`` with its partition values as columns, in ``wanted``'s order."""
    values = dict(part.partitions)
    arrays = []
    for item in wanted:
        if item.name in values:
            value = values[item.name]
            arrays.append(pa.array([int(value) if pa.types.is_integer(item.type) else value] * batch.num_rows,
                                   item.type))
        else:
            arrays.append(batch.column(item.name))
    return pa.RecordBatch.from_arrays(arrays, schema=wanted)
