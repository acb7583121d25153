"""JSON lines files (``.jsonl``, ``.ndjson``, ``.json``, compressed or not), read by pyarrow's streaming JSON
reader: the types inferred from the first block, then read with them a small block at a time; a file that holds one
JSON array is refused, with the command that makes JSON lines of it; a line that is not JSON is named by its
line (pyarrow's own error counts rows in a block)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from harness.own_data.readers import text
from harness.own_data.readers.base import PartError


class JsonLinesReader(text.TextReader):
    format = "json"

    def schema(self, path: Path) -> pa.Schema:
        from pyarrow import json as pa_json

        sample = self.first_block(path)
        if sample[:1 << 10].lstrip()[:1] == b"[":
            raise PartError(f"a JSON array, not JSON lines (one object a line): make JSON lines of it first, e.g. "
                            f"jq -c '.[]' {path.name} > {path.stem}.jsonl")
        with self._lines_named(path):
            return pa_json.read_json(pa.BufferReader(sample), read_options=pa_json.ReadOptions(
                use_threads=False, block_size=text.INFER_BLOCK_BYTES)).schema

    def batches(self, path: Path, columns: list[str] | None = None,
                types: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
        from pyarrow import json as pa_json

        with self._lines_named(path):
            for batch in pa_json.open_json(self.stream(path), read_options=pa_json.ReadOptions(
                    use_threads=False, block_size=text.READ_BLOCK_BYTES), parse_options=pa_json.ParseOptions(
                    explicit_schema=types, unexpected_field_behavior="error")):
                yield batch if columns is None else batch.select(columns)

    @contextlib.contextmanager
    def _lines_named(self, path: Path):
        """pyarrow's parse error said by the file's first line that is not JSON, where one is."""
        try:
            yield
        except pa.ArrowInvalid as exc:
            if "JSON parse error" not in " ".join(str(exc).split()) or (line := self._first_not_json(path)) is None:
                raise
            raise self.unreadable(line) from None

    def _first_not_json(self, path: Path) -> str | None:
        with self.stream(path) as stream:
            for number, line in enumerate(_lines(stream), 1):
                if not line.strip():
                    continue
                try:
                    json.loads(line)
                except ValueError as exc:
                    return f"line {number} is not JSON ({exc.msg}): {line[:80].decode(errors='replace')!r}"
        return None


def _lines(stream) -> Iterator[bytes]:
    pending = b""
    while chunk := stream.read(1 << 20):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending
