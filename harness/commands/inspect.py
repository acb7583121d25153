"""The ``inspect`` command: the dtype audit of the user's data, before anything is sent. Per column: the dtype
pandas gives it, how the client takes it, the QuestDB type it becomes, whether worker threads run in parallel
on it, and the conversion that makes it faster or accepted; a column the client would refuse ends the
command in one line naming it, its dtype and the fix (exit 2). ``run_inspect(InspectOptions(...))`` is what
``python -m harness inspect`` and ``harness.inspect()`` call.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from harness.errors import UsageError
from harness.options.declare import CommandOptions, command
from harness.options.groups import OwnDataOptions
from harness.sources import DATA, get


@dataclass
class InspectOptions(OwnDataOptions, CommandOptions):
    """The data to audit (--data) and its designated timestamp and symbols as a run would choose them."""

    def check_values(self) -> None:
        super().check_values()
        if self.data is None and "sent_source" not in self.__dict__:
            raise UsageError("inspect audits the user's data: --data PATH")

    def data_source(self):
        """The data as a run would send it, its refusal kept rather than raised."""
        if "sent_source" in self.__dict__:
            return self.__dict__["sent_source"]
        return get(DATA, self.data, at=self.at, symbols=self.symbol_choice(), convert_dtypes=self.convert_dtypes,
                   strict=False, object_strings=self.object_strings, reading=self.reading())

    def sending(self, source) -> InspectOptions:
        """These options, auditing ``source`` (the notebook API's DataFrames)."""
        self.__dict__["sent_source"] = source
        return self


@command
def run_inspect(options: InspectOptions, out: TextIO | None = None):
    """Print the audit; return the data source (its ``audits``). Raises UsageError when the client would refuse
    a column."""
    from harness.own_data.audit import audit_table

    out = out or sys.stdout
    source = options.data_source()
    print(f"{source.data.name}: {source.data.rows()} rows into table {source.table_name}, designated timestamp "
          f"{source.at}; symbols: {', '.join(source.symbol_columns) or 'none'}; QuestDB types under ILP protocol "
          f"version {source.protocol_version}", file=out)
    for line in source.data.reading_lines():
        print(line, file=out)
    print(audit_table(source.audits, source.data.is_file()), file=out, flush=True)
    if source.refusal is not None:
        raise UsageError(source.refusal)
    return source
