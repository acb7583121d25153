"""The cross-check a run makes before sending (``bench --send --data``): DuckDB's reading and the run's of a sample of
the file, its head and its tail, compared (``harness.own_data.cross_check``), so that a wrong reading is caught
before anything lands, at a cost that does not grow with the file.

- A CSV or JSON lines file: its first ``SAMPLE_BYTES`` (decompressed) cut after their last whole line, and its last
  ``SAMPLE_BYTES`` from the first line that starts in them, a CSV's header put before them; each written to a
  temporary file that both readers read (the run's with every decision it made on the whole file). A compressed
  file is read front to back: its tail would cost decompressing all of it, so only its head is checked, said so.
  A file no larger than two samples is checked whole.
- A Parquet file: as many rows from its start and from its end as ``SAMPLE_BYTES`` of it hold, by their row
  numbers (DuckDB's ``file_row_number``; the run's reader the row groups that hold them); and the whole data's
  first and last instants, its designated timestamp's columns alone read by both (Parquet reads a column alone).
- An Arrow IPC file or stream: its first rows (DuckDB scans pyarrow's decoding of it).
- A dataset: the head of its first file and the tail of its last.

The first and last instants and the distinct instants are the sample's; rows are compared as each piece holds them.
"""

from __future__ import annotations

import copy
import dataclasses
import weakref
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from harness.errors import UsageError
from harness.own_data import duckdb_reading as duck
from harness.own_data.cross_check import CrossCheck, compared
from harness.own_data.formats import DataPart

SAMPLE_BYTES = 4 << 20
# An Arrow file's rows checked: its batches say nothing of their bytes before they are read.
ARROW_ROWS = 100_000
# A data's sample checked once, however many plans a sweep makes of it.
_CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sample_check(data, at: str) -> CrossCheck:
    """The sample of ``data`` (a ``DataFile``) read by DuckDB and by the run, ``at`` the designated timestamp."""
    if data in _CHECKED:
        return _CHECKED[data]
    notes: list[str] = []
    first = data.parts[0]
    with duck.scratch_folder() as scratch:
        if data.reader.infers_types:
            pieces = list(_text_pieces(data, scratch, notes))
        elif data.format == "parquet":
            pieces = list(_parquet_pieces(data))
            if pieces[0].rows is not None:
                pieces.append(_Piece("the whole file's first and last instants", first.path, first, data.kind,
                                     columns=True))
        else:
            pieces = [_arrow_head(data)]
        checks = [_checked(data, at, piece, scratch) for piece in pieces]
    found = _joined(checks, notes)
    _CHECKED[data] = found
    return found


@dataclasses.dataclass
class _Piece:
    """A piece of the data to check: what it is, said; the file both read (``path``: a temporary one or the
    part's own), the part it comes from, the kind of file it is, and the rows of it (``rows``: a Parquet or Arrow
    file's [start, stop); None: all); ``columns``: the designated timestamp alone, of the whole data."""

    what: str
    path: Path
    part: DataPart
    kind: object
    rows: tuple[int, int] | None = None
    columns: bool = False  # the designated timestamp's columns alone, of every part (a Parquet file's range)


def _text_pieces(data, scratch: Path, notes: list[str]) -> Iterator[_Piece]:
    first, last = data.parts[0], data.parts[-1]
    kind = dataclasses.replace(data.kind, compression=None)
    if data.kind.compression is None and len(data.parts) == 1 and first.path.stat().st_size <= 2 * SAMPLE_BYTES:
        yield _Piece("the whole file", first.path, first, kind)
        return
    with data.reader.stream(first.path) as stream:
        head = stream.read(SAMPLE_BYTES)
    if len(head) < SAMPLE_BYTES and len(data.parts) == 1:  # a small compressed file: all of it, decompressed
        (scratch / "whole").write_bytes(head)
        yield _Piece("the whole file", scratch / "whole", first, kind)
        return
    if len(head) == SAMPLE_BYTES and b"\n" in head:
        head = head[:head.rindex(b"\n") + 1]
    header = b"".join(head.splitlines(keepends=True)[:getattr(data.reader, "header_lines", 0)])
    (scratch / "head").write_bytes(head)
    yield _Piece(f"its first {len(head) / 2**20:.1f} MiB", scratch / "head", first, kind)
    if data.kind.compression is not None:
        notes.append(f"{data.kind.compression} is read front to back: the tail would cost decompressing the whole "
                     f"file, so only the head is checked")
        return
    size = last.path.stat().st_size
    with open(last.path, "rb") as file:
        file.seek(max(0, size - SAMPLE_BYTES))
        tail = file.read()
    if size > SAMPLE_BYTES:
        tail = tail[tail.index(b"\n") + 1:] if b"\n" in tail else b""
    (scratch / "tail").write_bytes(header + tail)
    yield _Piece(f"its last {len(tail) / 2**20:.1f} MiB", scratch / "tail", last, kind)


def _parquet_pieces(data) -> Iterator[_Piece]:
    first, last = data.parts[0], data.parts[-1]
    if len(data.parts) == 1 and first.path.stat().st_size <= 2 * SAMPLE_BYTES:
        yield _Piece("the whole file", first.path, first, data.kind)
        return
    for part, end in ((first, "first"), (last, "last")):
        rows = data.reader.rows(part.path)
        take = max(1, int(rows * SAMPLE_BYTES / max(part.path.stat().st_size, 1)))
        span = (0, min(take, rows)) if end == "first" else (max(0, rows - take), rows)
        yield _Piece(f"its {end} {span[1] - span[0]:,} rows", part.path, part, data.kind, span)


def _arrow_head(data) -> _Piece:
    part = data.parts[0]
    return _Piece(f"its first {ARROW_ROWS:,} rows at most", part.path, part, data.kind, (0, ARROW_ROWS))


def _checked(data, at: str, piece: _Piece, scratch: Path) -> CrossCheck:
    if piece.columns:  # DuckDB reads the column alone, a Parquet file's other columns left unread
        scan = duck.duck_scan(data.kind, [part.path for part in data.parts], None,
                              any(part.partitions for part in data.parts), scratch)
        # Its first and last instants: distinct ones would cost a hash of every row.
        return compared(data, at, scan, lambda: data._normalised([data.normalisation.raw_name(at)]), piece.what,
                        distinct=False)
    view = _viewed(data, piece)
    arrow_batches = view.reader.batches if piece.kind.format.startswith("arrow") else None
    scan = duck.duck_scan(piece.kind, [piece.path], data.dialect, bool(piece.part.partitions), scratch,
                          arrow_batches=arrow_batches,
                          arrow_schema=view.reader.schema(piece.path) if arrow_batches else None)
    if piece.rows is not None and piece.kind.format == "parquet":
        start, stop = piece.rows
        inner = scan.source[:-1] + ", file_row_number=true)"
        scan = duck.DuckScan(f"(SELECT * EXCLUDE (file_row_number) FROM {inner} WHERE file_row_number >= {start} "
                             f"AND file_row_number < {stop})", scan.how, scan.arrow)
    try:
        return compared(view, at, scan, view._normalised, piece.what)
    except UsageError as problem:  # a tail cut inside a quoted value that holds a line end, say
        return CrossCheck(piece.what, scan.how, why_not=f"the run's reader could not read the piece alone: {problem}")


def _viewed(data, piece: _Piece):
    """``data`` as the run reads it (every decision made on the whole) over the piece alone."""
    view = copy.copy(data)
    view.parts = [DataPart(piece.path, piece.part.partitions)]
    reader = copy.copy(data.reader)
    reader.kind = piece.kind
    if piece.rows is not None:
        reader = _RowSpan(reader, *piece.rows)
    view.reader = reader
    view.kind = piece.kind
    view._read_names = {piece.path: names for names in [data._read_names.get(piece.part.path)] if names}
    view._own_names = {piece.path: names for names in [data._own_names.get(piece.part.path)] if names}
    view._rows, view.skipped_rows = None, 0
    return view


class _RowSpan:
    """A Parquet or Arrow reader whose batches hold only rows [start, stop) of a file (a Parquet file's row groups
    outside them never read)."""

    def __init__(self, reader, start: int, stop: int):
        self._reader, self.start, self.stop = reader, start, stop

    def __getattr__(self, name):
        return getattr(self._reader, name)

    def batches(self, path: Path, columns: list[str] | None = None, types=None) -> Iterator[pa.RecordBatch]:
        batches, at = self._groups(path, columns) if self._reader.format == "parquet" else \
            (self._reader.batches(path, columns, types), 0)
        for batch in batches:
            low, high = max(self.start - at, 0), min(self.stop - at, batch.num_rows)
            at += batch.num_rows
            if high > low:
                yield batch.slice(low, high - low)
            if at >= self.stop:
                return

    def _groups(self, path: Path, columns: list[str] | None) -> tuple[Iterator[pa.RecordBatch], int]:
        """The batches of the row groups that hold the span, as the run's Parquet reader reads them, and the row
        the first starts at."""
        import pyarrow.parquet as pq

        from harness.own_data.frames import CONVERT_ROWS

        file = pq.ParquetFile(str(path), pre_buffer=False)
        starts, at = [], 0
        for index in range(file.metadata.num_row_groups):
            rows = file.metadata.row_group(index).num_rows
            if at < self.stop and at + rows > self.start:
                starts.append((index, at))
            at += rows
        if not starts:
            return iter(()), 0
        return file.iter_batches(batch_size=CONVERT_ROWS, row_groups=[index for index, _ in starts], columns=columns,
                                 use_pandas_metadata=True), starts[0][1]


def _joined(checks: list[CrossCheck], notes: list[str]) -> CrossCheck:
    """The pieces' checks as one: their disagreements each named with its piece."""
    whats = [check.what for check in checks]
    joined = CrossCheck(" and ".join(whats) if whats[0] != "the whole file" else whats[0], checks[0].how,
                        seconds=sum(check.seconds for check in checks), columns=max(check.columns for check in checks),
                        cpu_seconds=sum(check.cpu_seconds for check in checks))
    many = len(checks) > 1
    for check in checks:
        if check.why_not is not None:
            notes.append(f"{check.what}: not checked: {check.why_not}")
        joined.differences += [f"{check.what}: {line}" if many else line for line in check.differences]
        joined.notes += [line for line in check.notes if line not in joined.notes]
    if all(check.why_not is not None for check in checks):
        joined.why_not, notes = checks[0].why_not, []
    joined.notes += notes
    return joined
