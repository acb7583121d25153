"""Parquet files (``.parquet``, ``.pq``), read a row group at a time; their metadata counts their rows, and their
row groups' statistics say a column's nulls and least value without reading it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from harness.own_data.frames import CONVERT_ROWS
from harness.own_data.readers.base import FileReader, Statistics


class ParquetReader(FileReader):
    format = "parquet"
    script_batches = "pq.ParquetFile(PATH, pre_buffer=False).iter_batches(batch_size=CHUNK_ROWS)"
    script_imports = ("import pyarrow.parquet as pq",)

    def schema(self, path: Path) -> pa.Schema:
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).schema_arrow

    def batches(self, path: Path, columns: list[str] | None = None,
                types: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        # Row group by row group: never more than one group and one batch in memory (pyarrow's pre-buffering
        # would keep every row group read so far: memory growing with the file).
        return pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=CONVERT_ROWS, columns=columns,
                                                                   use_pandas_metadata=True)

    def rows(self, path: Path) -> int:
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows

    def statistics(self, path: Path, column: str) -> list[Statistics]:
        """Each row group's; unknown for a group without them, or where ``column`` is no leaf of the file's."""
        import pyarrow.parquet as pq

        metadata = pq.ParquetFile(path).metadata
        leaves = [metadata.schema.column(leaf).path for leaf in range(metadata.num_columns)]
        index = leaves.index(column) if column in leaves else None
        found = []
        for group in range(metadata.num_row_groups):
            kept = None if index is None else metadata.row_group(group).column(index).statistics
            found.append(Statistics(kept.null_count if kept is not None and kept.has_null_count else None,
                                    kept.min if kept is not None and kept.has_min_max else None))
        return found
