"""What the text formats' readers share (``TextReader``: CSV and JSON lines): read front to back, compressed or
not, their types inferred from their first block alone, then read a small block at a time, a value's place its
line."""

from __future__ import annotations

from pathlib import Path

from harness.own_data.readers.base import FileReader

# Bytes at the start of a CSV or JSON lines file whose values decide its columns' types (pyarrow's inference).
INFER_BLOCK_BYTES = 16 << 20
# Bytes of CSV and JSON lines parsed at a time, the types given. pyarrow's streaming readers read up to 32 blocks
# ahead on a thread of their own, whatever their threads option says: with 16 MiB blocks, 512 MiB more memory for
# a large file than for a small one; with these, 32 MiB at most. Parsing 1 MiB blocks also takes less than half the
# CPU 16 MiB blocks take (they stay in the cache; measured: benchmarks/file_formats.py).
READ_BLOCK_BYTES = 1 << 20


class TextReader(FileReader):
    """A text format's reader; ``header_lines``: the lines before the first row."""

    infers_types = True
    streamed = True
    header_lines = 0

    def place(self, row: int) -> str:
        return f"line {row + 1 + self.header_lines}"

    def first_block(self, path: Path) -> bytes:
        """The file's first ``INFER_BLOCK_BYTES`` bytes, cut after their last whole line: what its types are
        inferred from, read here (a reader on the whole file would read up to 32 blocks ahead before its schema is
        asked for)."""
        with self.stream(path) as stream:
            sample = stream.read(INFER_BLOCK_BYTES)
        if len(sample) == INFER_BLOCK_BYTES and b"\n" in sample:
            sample = sample[:sample.rindex(b"\n") + 1]
        return sample
