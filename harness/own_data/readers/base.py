"""What a format's reader is (``FileReader``), what it is given (``FileKind``: the format, compression and tabs a
file's suffixes name) and what it says of a file: its schema, record batches, rows where its metadata counts them,
columns' statistics where it keeps them (``Statistics``), and the problems it finds in it (``PartError``,
``WrongValue``), said without the file's name: the dataset (``harness.own_data.files``) names the file, and the
parameter that named the data, where it turns them into one line.

The traits in which formats differ are the reader's: whether a value's place is a line or a row (``place``), whether
its types are inferred from text (``infers_types``), whether it is read front to back (``streamed``: it may come
compressed, and only reading it counts its rows), and a CSV's dialect and the lines above its header.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pyarrow as pa

from harness.errors import UsageError
from harness.own_data.compression import open_stream
from harness.own_data.csv_dialect import Dialect
from harness.own_data.preamble import Preamble
from harness.own_data.reading import Reading

@dataclass(frozen=True)
class FileKind:
    """A file's format, its compression (None: none) and whether it is tab-separated (``.tsv``)."""

    format: str
    compression: str | None = None
    tabs: bool = False

    def describe(self) -> str:
        return self.format + (f" ({self.compression})" if self.compression else "")


class PartError(UsageError):
    """A problem a reader finds in one file of the data, said as what follows the file's name (``line 4 has 2
    fields, the header 3: ...``): the dataset names the file."""


class WrongValue(Exception):
    """A value of a text file's column that the type its reader was given cannot take: the column's position in
    the file, where the value is (``line 7``), the value and the type."""

    def __init__(self, position: int, where: str, value: str, arrow_type: str):
        super().__init__(f"{where}: {value!r} is not {arrow_type}")
        self.position, self.where, self.value, self.type = position, where, value, arrow_type


@dataclass(frozen=True)
class Statistics:
    """What one block of a file (a Parquet row group) says of a column without reading it: its nulls and its least
    value, each None where it does not say."""

    nulls: int | None
    least: object | None


class FileReader:
    """Reads the files of one format, a file (a part of the data) at a time, as pyarrow's readers do; made for a
    kind of file and the user's ``Reading``, set up on the data's first file (a CSV's dialect is sniffed there).

    - ``schema(path)``: the file's columns (a text format's types as inferred from its first block);
    - ``batches(path, columns, types)``: its record batches, only ``columns`` where given (the file's own names),
      a text format's columns read as ``types`` (its own names, every column of the file);
    - ``rows(path)``: its rows where its metadata counts them, else None (the dataset counts them by reading);
    - ``statistics(path, column)``: each block's ``Statistics`` of a column where the format keeps them, else None
      (unknown: the dataset reads the column).

    Its traits: ``place`` names a row (counted from 0 in its file) as a message does, ``infers_types`` (types
    inferred from text, which the dataset reads as text where it parses them), ``streamed`` (read front to back,
    compressed or not), ``dialect`` (a CSV's, else None), ``preamble`` (the lines a CSV's reader skips above its
    header, else None), and how a user's script reads a file of it with pyarrow
    alone (``script_batches``, ``script_imports``: ``harness.own_data.code``)."""

    format: ClassVar[str]
    infers_types: ClassVar[bool] = False
    streamed: ClassVar[bool] = False
    # A file's record batches in a user's script, ``PATH`` the file and ``CHUNK_ROWS`` a piece's rows, and the
    # imports beside ``import pyarrow as pa`` that reads them; None: such a script reads it with the harness's reader.
    script_batches: ClassVar[str | None] = None
    script_imports: ClassVar[tuple[str, ...]] = ()
    dialect: Dialect | None = None
    preamble: Preamble | None = None

    def __init__(self, kind: FileKind, reading: Reading, first: Path):
        self.kind, self.reading = kind, reading

    def place(self, row: int) -> str:
        """Where ``row`` (from 0 in its file) is, as a message names it."""
        return f"row {row + 1}"

    def unreadable(self, text: str) -> PartError:
        """The file not readable in this format, as the reader's error ``text`` says."""
        return PartError(f"not a readable {self.kind.describe()} file: {text}")

    def schema(self, path: Path) -> pa.Schema:
        raise NotImplementedError

    def batches(self, path: Path, columns: list[str] | None = None,
                types: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def rows(self, path: Path) -> int | None:
        return None

    def statistics(self, path: Path, column: str) -> list[Statistics] | None:
        return None

    def stream(self, path: Path):
        """The file's bytes, decompressed as its suffix says (``harness.own_data.compression``)."""
        return open_stream(path, self.kind.compression)
