"""What a data file (``harness.own_data.files.DataFile``) says of how it was read: the lines ``inspect`` and
``bench --data`` print (the decisions on the timestamp among them, ``harness.own_data.time_columns.stated``), the
record's ``reading`` (format, dialect, the lines skipped above a CSV's header, conversions, renames: those of the
file's names as read, ``harness.own_data.read_names``, and QuestDB's, the placeholders of missing numbers counted,
the columns of numbers, mostly, left text), and the column that was pandas' index, the designated timestamp where
none is named."""

from __future__ import annotations

import pyarrow as pa

from harness.errors import named
from harness.own_data import time_columns


class ReadingSaid:
    """How the data was read, said: a DataFile's part, from what opening and reading it found."""

    def index_timestamp(self) -> str | None:
        read = self._read_names.get(self.parts[0].path)
        index = None if read is None or read.index is None else self.sent_name(read.index)
        return index if index is not None and pa.types.is_timestamp(self.schema.field(index).type) else None

    def described(self) -> dict:
        """How the data was read, for messages and the record: format, files, dialect, conversions, names, the
        placeholders of missing numbers counted and the columns of numbers, mostly, left text."""
        described = {"format": self.kind.describe(), "files": len(self.parts)}
        if self.dialect is not None:
            described["dialect"] = self.dialect.describe()
        if self.preamble:
            described["lines_above_header"] = self.preamble.stored()
        described["conversions"] = [conversion.stored() for conversion in
                                    self.widened + self.normalisation.conversions]
        read = self._read_names.get(self.parts[0].path)
        described["renames"] = {**(read.stored() if read is not None else {}), **self.normalisation.renames}
        if self.normalisation.placeholders:
            described["missing_values"] = {name: self.missing_counts.get(name, {})
                                           for name in self.normalisation.placeholders}
        if self.kept_as_text:
            described["kept_as_text"] = list(self.kept_as_text)
        described["skipped_rows"] = self.skipped_rows
        return described

    def read_renames(self) -> list[str]:
        """The file's names changed as read (a repeated name made unique, pandas' index named), a line each."""
        read = self._read_names.get(self.parts[0].path)
        return read.lines() if read is not None else []

    def reading_lines(self) -> list[str]:
        files = f" ({len(self.parts)} files)" if self.dataset else ""
        dialect = f", {self.dialect.describe()}" if self.dialect is not None else ""
        lines = [f"Read as {self.kind.describe()}{files}{dialect}"]
        if self.preamble:
            lines.append(f"  {self.preamble.said(len(self.parts))}")
        lines += time_columns.stated(self.normalisation)
        lines += [f"  converted {conversion.line()}" for conversion in self.widened + self.normalisation.conversions]
        lines += [f"  renamed {line}" for line in self.read_renames()]
        lines += [f"  renamed {line}" for line in self.normalisation.rename_lines()]
        if (index := self.index_timestamp()) is not None:
            lines.append(f"  pandas' index is column {index!r}: the designated timestamp unless {named('at')} names "
                         f"another")
        if self.normalisation.placeholders:
            lines.append("  missing values read as nulls: " + "; ".join(
                f"{name} " + ", ".join(f"{token!r} {_times(count)}" for token, count in counts.items())
                if (counts := self.missing_counts.get(name)) else f"{name} {', '.join(map(repr, numbers.tokens))}"
                for name, numbers in self.normalisation.placeholders.items()))
        lines += [f"  kept as text {why}" for why in self.kept_as_text]
        if self.skipped_rows:
            lines.append(f"  skipped {self.skipped_rows} rows whose timestamp did not parse "
                         f"({named('on_bad_timestamp')} skip)")
        return lines


def _times(count: int) -> str:
    return f"{count} time" + ("" if count == 1 else "s")
