"""The readers by the name of the format they read (``FileKind.format``): the one place a format is found. A new
format is a reader module and its entry here (and its suffixes in ``harness.own_data.formats``)."""

from __future__ import annotations

from harness.own_data.readers.arrow_ipc import ArrowFileReader, ArrowStreamReader
from harness.own_data.readers.base import FileReader
from harness.own_data.readers.csv import CsvReader
from harness.own_data.readers.json_lines import JsonLinesReader
from harness.own_data.readers.parquet import ParquetReader

READERS: dict[str, type[FileReader]] = {reader.format: reader for reader in (
    ParquetReader, ArrowFileReader, ArrowStreamReader, CsvReader, JsonLinesReader)}
