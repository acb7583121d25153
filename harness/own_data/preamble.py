"""The lines above a CSV's header (a title, a station's name and place, units: lines with fewer fields than the table),
skipped and said (``Preamble``). How many: as many as ``skip_rows`` gives (0: none), else as DuckDB's sniffer finds
them (its ``SkipRows``; a head whose every line has its first line's width has none, unasked), sniffed on the file's
head decoded (so a compressed file or one in another encoding is sniffed alike) and written to a file of its own as
UTF-8. A head DuckDB finds no table of more than one column in (its sniff failed, or it read every line as one
field) has no preamble it can tell: none is skipped, and a line of another width is refused by the reader, named by
its line, as it was. A dataset's files are read as its first file is: the lines found there are skipped in every
file (``harness.own_data.readers.csv``)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import named

# A skipped line as a message shows it, and the lines a message shows.
SHOWN_CHARACTERS = 60
SHOWN_LINES = 5
# The fewest lines of a head sniffed again where the whole head showed no table: a line above the header, the
# header and two rows.
SHORTEST_HEAD = 4


@dataclass(frozen=True)
class Preamble:
    """The lines skipped above the header (``lines``, as the file has them), whether ``skip_rows`` gave their
    number (``given``) and whether a header follows them (``header``)."""

    lines: tuple[str, ...] = ()
    given: bool = False
    header: bool = True

    def __len__(self) -> int:
        return len(self.lines)

    def said(self, files: int = 1) -> str:
        """``skipped 2 lines above the header: 'Station: ...', 'Units: ...'`` (long lines cut; ``files``: the
        dataset's, each skipping as many, the first file's shown), and how their number was known."""
        above = "the header" if self.header else "the first row"
        above += f" of each of {files} files (the first file's)" if files > 1 else ""
        shown = ", ".join(repr(_cut(line)) for line in self.lines[:SHOWN_LINES])
        more = f" and {len(self.lines) - SHOWN_LINES} more" if len(self.lines) > SHOWN_LINES else ""
        how = f"{named('skip_rows')} {len(self.lines)}" if self.given else \
            f"found as DuckDB's sniffer finds them; pin it: {named('skip_rows')} {len(self.lines)}"
        noun = "line" if len(self.lines) == 1 else "lines"
        return f"skipped {len(self.lines)} {noun} above {above}: {shown}{more} ({how})"

    def stored(self) -> dict:
        """The record's: how many lines, the first of them, and whether their number was given."""
        return {"lines": len(self.lines), "first": [_cut(line) for line in self.lines[:SHOWN_LINES]],
                "given": self.given}


def _cut(line: str) -> str:
    return line if len(line) <= SHOWN_CHARACTERS else line[:SHOWN_CHARACTERS - 3] + "..."


def sniffed_skip(lines: list[str], delimiter: str | None) -> int:
    """The lines above the header DuckDB's sniffer finds in ``lines`` (the file's head, decoded; ``delimiter``:
    where the user or the file's suffix gave one); 0 where it finds no table of more than one column. A line of
    another width past the header spoils its sniff of the lines around it: where the head shows no table, its
    first half is sniffed, and so on down to ``SHORTEST_HEAD`` lines, so that the reader still skips what is above
    the header and names that line by its place in the file."""
    if _uniform(lines, delimiter):
        return 0
    import duckdb

    connection = duckdb.connect()
    try:
        with tempfile.TemporaryDirectory(prefix="harness-sniff-") as folder:
            head = Path(folder) / "head.csv"
            while len(lines) >= SHORTEST_HEAD:
                found = _sniffed(connection, head, lines, delimiter)
                if found is not None:
                    return found
                lines = lines[:len(lines) // 2]
    finally:
        connection.close()
    return 0


def _uniform(lines: list[str], delimiter: str | None) -> bool:
    """Whether every line of the head has as many fields as its first, two or more, by one delimiter: a table from
    its first line, with nothing above it for DuckDB's sniffer to find (asking it costs a run about half a second).
    Any line of another width, a blank one, a quoted value over two lines: not uniform, and DuckDB decides."""
    import csv

    for candidate in [delimiter] if delimiter is not None else [",", "\t", ";", "|"]:
        widths = {len(row) for row in csv.reader(lines, delimiter=candidate)}
        if len(widths) == 1 and widths.pop() >= 2:
            return True
    return False


def _sniffed(connection, head: Path, lines: list[str], delimiter: str | None) -> int | None:
    """DuckDB's ``SkipRows`` of ``lines`` written to ``head``, or None where it finds no table of more than one
    column in them."""
    import duckdb

    head.write_text("\n".join(lines) + "\n", encoding="utf-8")
    given = ", delim=?" if delimiter is not None else ""
    params = [str(head), len(lines) + 1, *([delimiter] if delimiter is not None else [])]
    try:
        skip, columns = connection.execute(f"SELECT SkipRows, len(Columns) FROM sniff_csv(?, sample_size=?{given})",
                                           params).fetchone()
    except duckdb.Error:
        return None  # no dialect found in these lines
    return int(skip) if columns > 1 and skip < len(lines) else None
