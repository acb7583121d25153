"""Arrow IPC files (``.arrow``, ``.feather``, ``.ipc``: their batches' lengths counting their rows) and streams
(``.arrows``, compressed or not: read front to back), a record batch at a time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from harness.own_data.readers.base import FileReader


class ArrowFileReader(FileReader):
    format = "arrow"
    script_batches = "pa.ipc.open_file(pa.memory_map(PATH)).read_all().to_batches(max_chunksize=CHUNK_ROWS)"

    def schema(self, path: Path) -> pa.Schema:
        return pa.ipc.open_file(pa.memory_map(str(path))).schema

    def batches(self, path: Path, columns: list[str] | None = None,
                types: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
        # Read, not memory-mapped: a mapped file's pages would stay in the process's memory as they are read.
        with pa.OSFile(str(path)) as source:
            reader = pa.ipc.open_file(source)
            for index in range(reader.num_record_batches):
                batch = reader.get_batch(index)
                yield batch if columns is None else batch.select(columns)

    def rows(self, path: Path) -> int:
        reader = pa.ipc.open_file(pa.memory_map(str(path)))
        return sum(reader.get_batch(index).num_rows for index in range(reader.num_record_batches))


class ArrowStreamReader(FileReader):
    format = "arrow stream"
    script_batches = "pa.ipc.open_stream(pa.OSFile(PATH))"
    streamed = True

    def schema(self, path: Path) -> pa.Schema:
        with self.stream(path) as source:
            return pa.ipc.open_stream(source).schema

    def batches(self, path: Path, columns: list[str] | None = None,
                types: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
        with self.stream(path) as source:
            for batch in pa.ipc.open_stream(source):
                yield batch if columns is None else batch.select(columns)
