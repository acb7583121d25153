"""An ILP file (ours or ``tsbs_generate_data``'s, gzip'd or not) read in bounded pieces of whole lines.

Owns reading for ``replay`` (``IlpFile``). A plain file is mapped into memory: its pieces are views of the
page cache, cut after a newline, never copied before they are written (unless renamed: ``replay --table``);
a written piece's pages leave the process (``release``), so memory stays a few pieces whatever the file's
size. A gzip'd file is unzipped into a
fixed pool of buffers, each piece cut at its last newline and the partial line after it carried into the next
piece. Lines are counted on the way (``count_lines``: newlines, and lines per table only where the file's
use case has several tables). The first piece is read before anything else happens: its first line tells the
fields' type and, with the tables it names, the use case; the last line is checked when the file ends,
without holding the file. A sender hands each piece back (``release``) once written.
"""

from __future__ import annotations

import collections
import mmap
import os
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from isal import igzip, isal_zlib

from harness.errors import UsageError

# One ILP line as TSBS writes it: measurement[,tag=value...] field=value[,field=value...] timestamp
ILP_LINE = re.compile(rb"^[^ ,=]+(,[^ ,=]+=[^ ,]+)* [^ ,=]+=[^ ,]+(,[^ ,=]+=[^ ,]+)* \d+$")
NEWLINE = ord("\n")
# How often a reader waiting for a free buffer looks whether the send has stopped.
WAIT_SECONDS = 0.1


@dataclass
class Piece:
    """Whole lines at the start of ``buffer``: ``size`` bytes, ``rows`` lines, split by table where the file's
    use case has several tables."""

    buffer: bytearray | memoryview
    size: int
    rows: int
    table_rows: dict[str, int] | None = None
    start: int = 0  # where the piece begins in a mapped file
    renamed: bytes | None = None  # the lines as written where they name another table (``IlpFile.rename``)

    def payload(self) -> bytes | memoryview:
        """The bytes a sender writes."""
        return self.renamed if self.renamed is not None else memoryview(self.buffer)[: self.size]


_MEASUREMENT = re.compile(rb"[^ ,]*")


def measurement(line: bytes | bytearray) -> str:
    """The table an ILP line names: its text before the first comma or space."""
    return bytes(_MEASUREMENT.match(line).group()).decode(errors="replace")


def rename_lines(lines: bytes | bytearray | memoryview, old: bytes, new: bytes) -> bytes:
    """Whole ILP lines with each that names table ``old`` naming ``new`` instead (a line's table is its text
    before the first comma or space); other lines as they are."""
    text = bytes(lines)
    for separator in (b",", b" "):
        text = text.replace(b"\n" + old + separator, b"\n" + new + separator)
        if text.startswith(old + separator):
            text = new + text[len(old):]
    return text


def count_lines(buffer: bytearray, size: int, tables: tuple[str, ...] = ()) -> tuple[int, dict[str, int] | None]:
    """Lines of the whole lines at the start of ``buffer`` and, for ``tables`` (where given), lines per table
    (one table: all of them). numpy compares the bytes several times faster than ``bytearray.count`` and
    lets the senders' threads run meanwhile; a table's lines are those whose first bytes are its name and a
    comma."""
    data = np.frombuffer(buffer, np.uint8, size)
    if len(tables) < 2:
        rows = int(np.count_nonzero(data == NEWLINE))
        return rows, ({tables[0]: rows} if tables else None)
    ends = np.flatnonzero(data == NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1))
    prefixes = [np.frombuffer(table.encode() + b",", np.uint8) for table in tables]
    width = max(len(prefix) for prefix in prefixes)
    heads = data[np.minimum(starts[:, None] + np.arange(width), size - 1)]  # each line's first bytes
    return len(ends), {table: int(np.count_nonzero((heads[:, :len(prefix)] == prefix).all(axis=1)))
                       for table, prefix in zip(tables, prefixes)}


class IlpFile:
    """An ILP file opened for reading in pieces of whole lines of at most ``piece_size`` bytes (a longer line is
    a piece of its own): views of the mapped file, or, gzip'd, buffers of a pool of ``buffers`` (a buffer
    that a longer line does not fit doubles until it does). ``first_piece`` reads the first one, ``pieces``
    yields it and then the rest. Read errors, an empty file, a file that shrinks while it is read and a first
    or last line that is not ILP are UsageErrors naming the file."""

    def __init__(self, path: str, piece_size: int, buffers: int):
        self.path = path
        self.gzipped = path.endswith(".gz")
        self._map: mmap.mmap | None = None
        self._size = 0
        try:
            if self.gzipped:
                # ISA-L's gzip: the same format and errors as the standard library's, decompressed about three
                # times as fast.
                self._source = igzip.open(path, "rb")
            else:
                self._source = open(path, "rb", buffering=0)
                self._size = os.fstat(self._source.fileno()).st_size
                if self._size:
                    # Mapped, not read: the pieces are the page cache's own pages, counted and written without
                    # a copy into a buffer first (a third of the client's CPU time, measured).
                    self._map = mmap.mmap(self._source.fileno(), self._size, prot=mmap.PROT_READ)
                    self._map.madvise(mmap.MADV_SEQUENTIAL)
        except OSError as exc:
            raise UsageError(f"cannot read ILP file {path!r}: {exc.strerror or exc}") from None
        self._view = memoryview(self._map) if self._map is not None else None
        self._next = 0  # where the mapped file's next piece begins
        # The pool: buffers made as they are first needed (a small file touches one), at most ``buffers``.
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        self._piece_size = piece_size
        self._unmade = buffers
        self._carry = b""
        self._ended = False
        self._first: tuple[bytearray | memoryview, int, int] | None = None
        self._last_line = b""
        # The file's use case, told from its first piece, and its tables: counted per piece where there
        # are several. ``widen`` is asked when a later piece names a table beyond them (TSBS's devops file
        # at a large scale begins with more cpu lines than a piece holds): it returns the tables of the use
        # case that holds them all, made ready, or raises.
        self.use_case = ""
        self.tables: tuple[str, ...] = ()
        self.widen: Callable[[str], tuple[str, ...]] | None = None
        self._rename: tuple[bytes, bytes] | None = None
        self.stopped = threading.Event()

    def __enter__(self) -> IlpFile:
        return self

    def __exit__(self, *exc_info) -> None:
        self._source.close()
        if self._map is not None:
            try:
                self._view.release()
                self._map.close()
            except BufferError:
                pass  # a worker left behind (Ctrl-C) still holds a piece: the map goes with the last view

    def release(self, piece: Piece) -> None:
        """A piece is done with (its bytes were written, or never will be): its buffer back to the pool, or its
        pages out of the process (they stay in the page cache; a page shared with a piece still in flight is
        mapped again from there when that piece reads it)."""
        if self._map is None:
            self._free.put(piece.buffer)
            return
        first = piece.start - piece.start % mmap.PAGESIZE
        self._map.madvise(mmap.MADV_DONTNEED, first, min(piece.start + piece.size, self._size) - first)

    def rename(self, old: str, new: str) -> None:
        """Pieces written from now on name table ``new`` where their lines name ``old`` (``replay --table``
        of a one-table file: TSBS's lines all name cpu). The renamed lines are a copy, made per piece; ``new``
        is written escaped as ILP writes a measurement (a space or comma after a backslash)."""
        escaped = new.replace(",", "\\,").replace(" ", "\\ ")
        self._rename = (old.encode(), escaped.encode()) if old != new else None

    def stop(self) -> None:
        """Stop reading: ``pieces`` ends instead of waiting for a buffer."""
        self.stopped.set()

    def first_piece(self) -> bytes:
        """Read the first piece (before anything is sent, so that a small file is checked whole before a table
        is touched); its first line, checked to be ILP."""
        if self._map is not None:
            buffer, start, size = self._map_piece()
        elif self.gzipped:
            buffer, start = self._take(), 0
            size = self._read(buffer)
        else:
            raise UsageError(f"ILP file {self.path!r} is empty")
        lines = bytes(buffer[:size])
        if not lines.strip() and not self._carry.strip():
            raise UsageError(f"ILP file {self.path!r} is empty")
        first_line = lines[: lines.find(b"\n")] if size else self._carry
        self._check("first", first_line)
        if self._ended:
            self._check_end()
        self._first = buffer, size, start
        return first_line

    def first_table_lines(self) -> dict[str, int]:
        """Lines per table the first piece names (told from its lines alone, so that telling a cpu-only
        file imports no other use case)."""
        buffer, size, _ = self._first
        return dict(collections.Counter(measurement(line) for line in bytes(buffer[:size]).split(b"\n") if line))

    def pieces(self) -> Iterator[Piece]:
        """The file's pieces in order, the first included, lines counted (per table of ``tables``); ends early
        once ``stop`` was called."""
        buffer, size, start = self._first
        while size:
            self._check_tables(buffer)
            piece = Piece(buffer, size, *count_lines(buffer, size, self.tables), start=start)
            if self._rename is not None:
                piece.renamed = rename_lines(piece.payload(), *self._rename)  # a view: one copy, in rename_lines
            yield piece
            if self._ended or self.stopped.is_set():
                return
            if self._map is not None:
                buffer, start, size = self._map_piece()
            else:
                buffer = self._take()
                if buffer is None:
                    return
                size = self._read(buffer)
            if self._ended:
                self._check_end()
        if self._map is None:
            self._free.put(buffer)

    def _map_piece(self) -> tuple[memoryview, int, int]:
        """The mapped file's next piece: a view of it, where it starts and its size (whole lines; 0 at the end,
        where the bytes after the last newline are carried: a last line cut short)."""
        start = self._next
        if os.fstat(self._source.fileno()).st_size < self._size:
            # Reading a page past the file's new end would kill the process (SIGBUS): stop before.
            raise UsageError(f"ILP file {self.path!r} shrank while it was read")
        limit = start + self._piece_size
        if limit < self._size:
            end = self._map.rfind(b"\n", start, limit) + 1 or self._map.find(b"\n", limit) + 1
        else:
            end = self._map.rfind(b"\n", start) + 1
        if limit >= self._size or not end:
            # The piece reaches the end: bytes after its last newline are a line cut short, carried (their first
            # MiB is enough to show it).
            self._carry = bytes(self._map[max(end, start): min(self._size, max(end, start) + (1 << 20))])
            self._ended = True
        if not end:
            return self._view[start:start], start, 0
        self._next = end
        stop = end - 1  # the piece's last line that is not empty: the file's last line if the file ends here
        while stop > start and self._map[stop - 1] == 0x0A:
            stop -= 1
        self._last_line = bytes(self._map[max(self._map.rfind(b"\n", start, stop) + 1, start): stop])
        return self._view[start:end], start, end - start

    def _take(self) -> bytearray | None:
        """A free buffer, made if the pool has fewer than its number; None once stopped."""
        try:
            return self._free.get_nowait()
        except queue.Empty:
            if self._unmade:
                self._unmade -= 1
                return bytearray(self._piece_size)
        while not self.stopped.is_set():
            try:
                return self._free.get(timeout=WAIT_SECONDS)
            except queue.Empty:
                continue
        return None

    def _read(self, buffer: bytearray) -> int:
        """Fill ``buffer`` with the carried partial line and what follows it; the size of the whole lines at
        its start (the rest is carried; 0 at the end of the file). A line longer than the buffer grows it
        (no view of it is alive while reading)."""
        filled = len(self._carry)
        while not self._ended:
            buffer[:filled] = self._carry
            filled = self._fill(buffer, filled)
            end = buffer.rfind(b"\n", 0, filled) + 1
            if end or self._ended:
                break
            self._carry = bytes(buffer[:filled])
            buffer.extend(bytes(len(buffer)))  # one line fills the buffer: make room for the rest of it
        else:
            return 0
        self._carry = bytes(buffer[end:filled])
        if end:
            # The piece's last line that is not empty: the file's last line if the file ends here.
            stop = end - 1
            while stop > 0 and buffer[stop - 1] == 0x0A:
                stop -= 1
            self._last_line = bytes(buffer[buffer.rfind(b"\n", 0, stop) + 1: stop])
        return end

    def _fill(self, buffer: bytearray, filled: int) -> int:
        try:
            with memoryview(buffer) as view:
                while filled < len(buffer):
                    window = view[filled:]
                    got = self._source.readinto(window)
                    window.release()
                    if not got:
                        self._ended = True
                        break
                    filled += got
        except (OSError, EOFError, zlib.error, isal_zlib.error) as exc:
            raise UsageError(f"cannot read ILP file {self.path!r}: {getattr(exc, 'strerror', None) or exc}") from None
        return filled

    def _check_end(self) -> None:
        """At the end of the file: its last line is ILP and ends with a newline."""
        if self._carry.strip():
            self._check("last", self._carry)
            raise UsageError(f"ILP file {self.path!r} does not end with a newline: truncated?")
        self._check("last", self._last_line)

    def _check_tables(self, buffer: bytearray) -> None:
        """A piece's first and last lines name tables of the file's use case, else the use case is widened
        before the piece goes out. TSBS writes a measurement's lines for every host together, so a table
        that appears shows at a piece's end (a file laid out otherwise fails its validation, counts read
        back)."""
        for line in (buffer[:256], self._last_line):
            table = measurement(line)
            if self.tables and table not in self.tables:
                if self.widen is None:
                    raise UsageError(f"ILP file {self.path!r} names table {table!r} after its first piece, which "
                                     f"told a {self.use_case} file (tables {', '.join(self.tables)})")
                self.tables = self.widen(table)

    def _check(self, which: str, line: bytes) -> None:
        if not ILP_LINE.match(line):
            raise UsageError(f"ILP file {self.path!r}: its {which} line is not ILP ({line[:80]!r})")
