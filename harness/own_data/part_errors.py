"""A data file's errors (``harness.own_data.files.DataFile``), each in one line that names the file it was met in
(``_where``: the data as the user named it, or the dataset's file) after the parameter that named the data
(``_named``), and its place: a problem its reader found, a value that does not parse, a value not of its column's
type (``WrongType``: the scan may widen the column and read again), a value a column of numbers with placeholders
does not take (``harness.own_data.placeholders``), pyarrow's own errors."""

from __future__ import annotations

import contextlib

import pyarrow as pa

from harness.errors import UsageError, named
from harness.own_data import normalise, placeholders
from harness.own_data.formats import DataPart
from harness.own_data.readers.base import PartError, WrongValue


class WrongType(UsageError):
    """A value of a text file's column that the column's type, decided on the file's first lines, cannot take (the
    scan may widen the column and read again)."""

    def __init__(self, message: str, column: str, value: str):
        super().__init__(message)
        self.column, self.value = column, value


class PartErrors:
    """The errors of reading a DataFile's parts, said in one line: a DataFile's part."""

    def _named(self, where: str) -> str:
        """The data at ``where`` (a file of it, or the data as the user named it) as a message names it: after the
        parameter that named the data."""
        return f"{named(self.parameter)} {where}"

    def _where(self, part: DataPart) -> str:
        return str(part.path) if self.dataset else self.name

    @contextlib.contextmanager
    def _errors(self, part: DataPart, first_row: int = 0):
        """The block's errors in reading ``part`` in one line naming it: a problem its reader found, a value that
        does not parse (named by its place: ``first_row`` is the part's row the batch starts at), a value not of
        its column's type (``WrongType``), and pyarrow's errors (corrupt footer, a truncated stream)."""
        try:
            yield
            return
        except PartError as found:
            problem = str(found)
        except normalise.BadRow as bad:
            advice = f" ({named('on_bad_timestamp')} skip skips such rows)" \
                if self.reading.on_bad_timestamp == "fail" else ""
            problem = f"{self.reader.place(first_row + bad.position)}, column {bad.column!r}: {bad.value!r} is " \
                      f"{bad.why}{advice}"
        except WrongValue as wrong:
            column = self._read_types.names[wrong.position] if self._read_types is not None else "?"
            advice = f": {named('na_values')} {wrong.value} reads it as missing, {named('keep_text')} {column} " \
                     f"keeps the column as text" if wrong.type in ("int64", "double") else ""
            raise WrongType(f"{self._named(self._where(part))}: {wrong.where}, column {column!r}: {wrong.value!r} is "
                            f"not {wrong.type}, the column's type as its first lines gave it{advice}", column,
                            wrong.value) from None
        except placeholders.Unexpected as unexpected:
            problem = f"{self.reader.place(first_row + unexpected.position)}, {unexpected}"
            if unexpected.decimal:  # the scan widens its int64 column to double
                raise WrongType(f"{self._named(self._where(part))}: {problem}", unexpected.column,
                                unexpected.value) from None
        except UsageError:
            raise
        except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
            problem = str(self.reader.unreadable(" ".join(str(exc).split())))
        raise UsageError(f"{self._named(self._where(part))}: {problem}")
