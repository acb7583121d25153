"""A file's reading pinned: the user's ``Reading`` with every decision the reader made on its own filled in
(``pinned``: the designated timestamp and its columns joined, its format inferred, the placeholders of missing
numbers found, the lines skipped above a CSV's header, a delimiter or a header's absence sniffed), and said as the
parameters that give it (``flags_lines``), so that the same file read with them is read the same way whatever a
later sniff or inference would find. What no parameter gives is said as a comment line (a repeated name's column
made unique). Each of ``Reading``'s fields is a parameter here: one more field, one more flag on the line."""

from __future__ import annotations

import dataclasses
import shlex

from harness.errors import named
from harness.own_data.files import DataFile
from harness.own_data.joined_times import JoinedTime
from harness.own_data.reading import Reading

# Reading's fields whose parameter has another name.
_PARAMETERS = {"renames": "rename"}


def pinned(data: DataFile, at: str | None) -> Reading:
    """``data``'s reading as the user gave it, with the decisions its reader made on its own filled in; ``at``:
    the designated timestamp as sent (the run's choice)."""
    reading, found = data.reading, {}
    raw = _raw_at(data, at)
    if reading.at is None and raw is not None:
        found["at"] = raw
    if reading.at_format is None and (fmt := _format(data, raw)) is not None:
        found["at_format"] = fmt
    tokens = [token for numbers in data.normalisation.placeholders.values() for token in numbers.tokens]
    tokens += [token for counts in data.missing_counts.values() for token in counts]
    if tokens := [token for token in dict.fromkeys(tokens) if token not in reading.na_values]:
        found["na_values"] = (*reading.na_values, *tokens)
    if reading.skip_rows is None and data.preamble:
        found["skip_rows"] = len(data.preamble)
    dialect = data.dialect
    if dialect is not None and "delimiter" in dialect.sniffed and dialect.delimiter not in (",", "\t"):
        found["csv_delimiter"] = dialect.delimiter  # a comma is the default, a tab a .tsv's or found alike
    if dialect is not None and "header" in dialect.sniffed and not dialect.header:
        found["csv_no_header"] = True
    return dataclasses.replace(reading, **found)


def _raw_at(data: DataFile, at: str | None) -> str | None:
    """The designated timestamp as the file names it: columns joined as ``--at`` joins them."""
    if at is None or at not in data.normalisation.names:
        return None
    raw = data.normalisation.raw_name(at)
    join = data.normalisation.join
    return join.spec if join is not None and raw == join.name else raw


def _format(data: DataFile, raw: str | None) -> str | None:
    """The designated timestamp's format (a joined date's), where its text is read by one."""
    join = data.normalisation.join
    parser = join.date if join is not None and raw == join.spec else data.normalisation.parsers.get(raw)
    if isinstance(parser, JoinedTime) or parser is None or parser.kind != "format":
        return None
    return parser.format


def flags_lines(reading: Reading, data: DataFile, partition_by: str | None = None) -> list[str]:
    """``flags: ⟨at⟩ Date+Time ⟨at_format⟩ '%d/%m/%Y' ...``: every parameter of ``reading`` not at its default,
    its value quoted for a shell, and the table's partitioning (``partition_by``, chosen or given); then a comment
    line for each rename no parameter gives."""
    defaults, said = Reading(), []
    for item in dataclasses.fields(reading):
        value = getattr(reading, item.name)
        if value == getattr(defaults, item.name):
            continue
        parameter = named(_PARAMETERS.get(item.name, item.name))
        said.append(parameter if value is True else f"{parameter} {_quoted(value)}")
    if partition_by is not None:
        said.append(f"{named('partition_by')} {partition_by}")
    lines = ["flags: " + (" ".join(said) if said else "none: nothing to pin")]
    lines += [f"# renamed {line}: no flag names it, every reading makes the same name"
              for line in data.read_renames()]
    return lines


def _quoted(value) -> str:
    if isinstance(value, tuple):
        value = ",".join(value)
    if value == "\t":
        return "$'\\t'"  # a tab, as a shell takes it
    return shlex.quote(str(value))
