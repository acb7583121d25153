"""What a ``bench`` run sends, by name, behind one interface (``harness.tsbs.use_case.UseCase``): TSBS's use
cases (``harness.tsbs.use_cases``) and the user's own data (``harness.own_data.source``, named ``data``). The
one place a run's source is chosen: the run asks here for its tables, schemas, chunks and rows, never
branching on which source it has.
"""

from __future__ import annotations

from harness.errors import UsageError
from harness.tsbs import use_cases
from harness.tsbs.use_case import UseCase

DATA = "data"
NAMES = (*use_cases.NAMES, DATA)


def get(name: str, data=None, table: str | None = None, at: str | None = None,
        symbols: str | tuple[str, ...] | None = None, convert_dtypes: bool = False, strict: bool = True,
        object_strings: bool = False, protocol_version: int | None = None, reading=None) -> UseCase:
    """The source called ``name``: a TSBS use case, or (``data``) the user's ``data``: a path, a DataFrame or
    DataFrames, its ``table``, designated timestamp ``at``, ``symbols``, and whether each piece is sent with the
    audit's dtype conversions (``harness.own_data.source``); without ``strict`` a column the client refuses is
    left to the source's ``refusal`` rather than raised (the audit shows it). ``object_strings``: a file's strings
    read as Python objects, as pandas 2 reads them; ``protocol_version``: the ILP version the run sends with;
    ``reading``: how a file is read (``harness.own_data.files.Reading``: timestamps, dialect, names)."""
    if name != DATA:
        return use_cases.get(name)
    if data is None:
        raise UsageError("the data source needs its data: --data PATH")
    from harness.own_data.files import open_data  # pyarrow's readers: only for a run of the user's data
    from harness.own_data.source import DataSource

    protocol = {} if protocol_version is None else {"protocol_version": protocol_version}
    return DataSource(open_data(data, object_strings, reading=reading), table, at, symbols, convert_dtypes,
                      strict=strict, **protocol)
