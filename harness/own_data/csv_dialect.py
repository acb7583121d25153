"""A CSV file's dialect, found by sniffing its first lines (past those above its header,
``harness.own_data.preamble``) as DuckDB's and Python's sniffers do, or set by the user: the delimiter, whether the
first line is a header, and the encoding (the sample decoded, ``decoded``, before the lines above the header are
found in it).

- Delimiter: of ``,`` tab ``;`` ``|``, the one that splits the most of the first lines into the same number of
  fields, more than one (a ``.tsv`` file: tab, unless ``--csv-delimiter`` says otherwise).
- Header: the first line is one unless ``--csv-no-header``, or unless it looks like the lines after it: every
  cell of it of the kind of its column's cells below (a number, a date, text), and some column not text. A
  file without a header names its columns ``column0``, ``column1`` ... (``harness.own_data.names``).
- Encoding: UTF-8 (a byte-order mark skipped) unless ``--encoding`` names another; a sample that is not UTF-8 is
  refused in one line that names the first byte that is not, and the parameter to give.
- Quoting: ``"``, doubled inside a quoted field; CRLF and LF line ends alike.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass

from harness.errors import ParameterError, UsageError, named

DELIMITERS = (",", "\t", ";", "|")
# Bytes of the file's start sniffed, and at most this many lines of them.
SAMPLE_BYTES = 1 << 16
SAMPLE_LINES = 200
_NUMBER = re.compile(r"^\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|nan|inf)\s*$", re.IGNORECASE)
_DATE = re.compile(r"^\s*\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}([T ].*)?$")
_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}


class NotText(UsageError):
    """A sample its encoding cannot decode, said without the file's name (its reader names the file)."""


@dataclass(frozen=True)
class Dialect:
    """How a CSV file is read; ``width``: the fields of its first line (a file without a header names that many
    columns); ``sniffed``: which of delimiter and header were found rather than given."""

    delimiter: str = ","
    header: bool = True
    encoding: str = "utf-8"
    width: int = 1
    sniffed: tuple[str, ...] = ()

    def describe(self) -> str:
        delimiter = _DELIMITER_NAMES.get(self.delimiter, repr(self.delimiter))
        parts = [f"{delimiter}-separated" + (" (sniffed)" if "delimiter" in self.sniffed else ""),
                 ("a header line" if self.header else "no header line") + (" (sniffed)" if "header" in self.sniffed
                                                                           else ""),
                 self.encoding]
        return ", ".join(parts)


def _kind(cell: str) -> str:
    if not cell.strip():
        return "empty"
    if _NUMBER.match(cell):
        return "number"
    if _DATE.match(cell):
        return "date"
    return "text"


def checked_encoding(encoding: str | None, delimiter: str | None) -> str:
    """The encoding a CSV file is read in (UTF-8 unless given), refused in one line where Python knows no such
    encoding, as a delimiter that is not one character is."""
    encoding = encoding or "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ParameterError("encoding", f"unknown encoding {encoding!r} (e.g. utf-8, latin-1, cp1252, "
                                         f"utf-16)") from None
    if delimiter is not None and len(delimiter) != 1:
        raise ParameterError("csv_delimiter", f"one character, got {delimiter!r} (a tab: $'\\t')")
    return encoding


def decoded(sample: bytes, encoding: str, whole: bool) -> str:
    """The sample as text, cut at its last line end unless it is the whole file (a character cut in two
    at the sample's end is not the file's fault); a sample its encoding cannot decode is refused in one line
    (``NotText``)."""
    if not whole and b"\n" in sample:
        sample = sample[:sample.rindex(b"\n") + 1]
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    try:
        return sample.decode(codec)
    except UnicodeDecodeError as exc:
        raise NotText(f"not {encoding} text (byte 0x{sample[exc.start]:02x} at offset {exc.start}): give its "
                      f"encoding with {named('encoding')} (e.g. latin-1, cp1252)") from None


def sniff(text: str, delimiter: str | None = None, header: bool | None = None, encoding: str = "utf-8",
          tabs: bool = False) -> Dialect:
    """The dialect of a CSV file whose first lines (past those above its header) are ``text``; what the user gave
    (``delimiter``, ``header``, ``encoding``) is taken as given."""
    lines = text.splitlines()[:SAMPLE_LINES]
    sniffed = []
    if delimiter is None:
        delimiter = "\t" if tabs else _sniff_delimiter(lines)
        sniffed.append("delimiter")
    if header is None:
        header = _sniff_header(lines, delimiter)
        sniffed.append("header")
    first = _rows(lines[:1], delimiter)
    return Dialect(delimiter, header, encoding, max(1, len(first[0]) if first else 1), tuple(sniffed))


def _rows(lines: list[str], delimiter: str) -> list[list[str]]:
    try:
        return [row for row in csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter) if row]
    except csv.Error:
        return []


def _sniff_delimiter(lines: list[str]) -> str:
    best, best_score = ",", (0, 0)
    for candidate in DELIMITERS:
        rows = _rows(lines, candidate)
        if not rows or len(rows[0]) < 2:
            continue
        width = len(rows[0])
        score = (sum(len(row) == width for row in rows), width)
        if score > best_score:
            best, best_score = candidate, score
    return best


def _sniff_header(lines: list[str], delimiter: str) -> bool:
    rows = _rows(lines, delimiter)
    if len(rows) < 2:
        return True
    first, rest = rows[0], [row for row in rows[1:] if len(row) == len(rows[0])]
    if not rest:
        return True
    typed = False
    for column, cell in enumerate(first):
        kinds = {_kind(row[column]) for row in rest} - {"empty"}
        if len(kinds) != 1 or kinds == {"text"}:
            continue  # mixed or text below: says nothing of the first line
        typed = True
        if _kind(cell) not in kinds:
            return True  # a name above numbers or dates
    return not typed
