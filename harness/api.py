"""The notebook API: the user's data (a path; a pandas or Polars DataFrame or a pyarrow Table; frames in a list)
measured, tuned and audited by the same functions the command line's ``bench --data``, ``tune`` and ``inspect`` call
(frames in memory handed to the client as the kind they are, unless ``frame=`` says another), returning their typed
records (``RunRecord``, ``BenchmarkRecord``, with ``to_frame()`` for a pandas view of the figures) and the
audit (``ColumnAudit`` per column). Every keyword is an option of the command, by its field name
(``workers=2``, ``target="sink"``, ``ilp_port=9010``); errors are the commands' (``UsageError``, ``RunError``)::

    import harness
    harness.inspect(df)                                    # per column: dtype, ILP's path and type, QWP's, fix
    harness.inspect(df, transport="qwp")                   # ... a column QWP refuses raises
    record = harness.measure(df, workers=2)                # sent into QuestDB at localhost, counted back
    record.to_frame()                                      # rows/s, MiB/s, client CPU per phase
    sweep = harness.tune("trades.parquet", budget=120)     # into the no-op sink: ranked settings, code
    print(sweep.extra["recommendation"]["text"]); print(sweep.extra["code"])
    ways = harness.paths(df, rounds=3)                     # every path into QuestDB, against ILP over HTTP
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import sys
import tempfile
from pathlib import Path

from harness.commands.bench import run_bench
from harness.commands.inspect import InspectOptions, run_inspect
from harness.commands.paths import PathsOptions, run_paths
from harness.commands.tune import TuneOptions, run_tune
from harness.errors import HarnessError, keyword_of, spoken
from harness.own_data.audit import ColumnAudit
from harness.own_data.files import open_data
from harness.own_data.source import data_source
from harness.records.benchmark_record import BenchmarkRecord
from harness.records.run_record import RunRecord
from harness.run.bench_options import BenchOptions

__all__ = ["inspect", "measure", "paths", "tune"]


def _keywords(function):
    """``function``, the parameters its errors name said as its keywords (``at_format=``), not as flags."""
    @functools.wraps(function)
    def spoken_as_keywords(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except HarnessError as exc:  # a parameter it names said as the keyword it was given by
            exc.args = (spoken(str(exc), keyword_of), *exc.args[1:])
            raise
    return spoken_as_keywords


def _is_path(data) -> bool:
    return isinstance(data, (str, os.PathLike))


def _call(run, options_class, data, *, table: str | None = None, at: str | None = None, symbols=None,
          convert_dtypes: bool = False, strict: bool = True, out=None, **values):
    """``run`` (a command's function) for ``data``: a path by its flags (--data, --table, --at, --symbols,
    --convert-dtypes); DataFrames by the source made of them (``harness.own_data.source.data_source``), judged by the
    way in the options choose (QWP or ILP), handed to the command beside its options."""
    if table is not None:
        values["table"] = table
    if _is_path(data):
        symbols_text = ",".join(symbols) if isinstance(symbols, (list, tuple)) else symbols
        own = {"convert_dtypes": True} if convert_dtypes else {}
        return run(options_class(data=str(data), at=at, symbols=symbols_text, **own, **values), out)
    chosen = tuple(symbols) if isinstance(symbols, (list, tuple)) else symbols
    frames = open_data(data)
    if "frame" in {field.name for field in dataclasses.fields(options_class)}:
        # Frames in memory go to the client as the kind they are, unless ``frame=`` says otherwise.
        values.setdefault("frame", frames.kind)
    options = options_class(**values)
    source = data_source(frames, table, at, chosen, convert_dtypes, strict, path=options.send_path(),
                         partition_by=options.partition_by, limit=options.map_limit())
    return run(options, out, source=source)


@_keywords
def measure(data, *, table: str | None = None, at: str | None = None, symbols=None, convert_dtypes: bool = False,
            send: bool = True, quiet: bool = False, **options) -> RunRecord:
    """Send ``data`` (``bench --send --data``; ``send=False`` only serializes) and return the run's record:
    rows counted back on the server, phases timed, the dtype audit in its parameters. ``symbols``: None (the
    client's choice), "auto" or column names. ``target="sink"``: where nothing listens at ``host:ilp_port`` on this
    machine, a private no-op sink is started for the run and stopped after it (``parameters["private_sink"]``)."""
    return _call(run_bench, BenchOptions, data, table=table, at=at, symbols=symbols, convert_dtypes=convert_dtypes,
                 send=send, out=io.StringIO() if quiet else sys.stdout, **options)


@_keywords
def tune(data, *, at: str | None = None, symbols=None, quiet: bool = False, **options) -> BenchmarkRecord:
    """Sweep the settings of sending ``data`` (``tune``) and return the benchmark record: the ranked
    comparison, ``extra["recommendation"]`` and ``extra["code"]``. Into the no-op sink at ``host:sink_port`` by
    default, a private one started for the sweep where nothing listens there (``target="questdb"``: a scratch
    table)."""
    return _call(run_tune, TuneOptions, data, at=at, symbols=symbols, out=io.StringIO() if quiet else sys.stdout,
                 **options)


@_keywords
def inspect(data, *, at: str | None = None, symbols=None, quiet: bool = False, **options) -> list[ColumnAudit]:
    """The dtype audit of ``data`` (``inspect``), printed unless ``quiet``: ILP's, QWP's beside it
    (``ColumnAudit.qwp``); a column the way in of ``transport=`` (ILP over "tcp" or "http", or "qwp") would refuse
    raises ``UsageError`` naming it, its dtype and the fix."""
    return _call(run_inspect, InspectOptions, data, at=at, symbols=symbols, strict=False,
                 out=io.StringIO() if quiet else sys.stdout, **options).audits


@_keywords
def paths(data=None, *, quiet: bool = False, **options) -> BenchmarkRecord:
    """Every path into QuestDB for ``data`` (``harness paths --data``), or without it a TSBS data set
    (``row_count=``, ``scale=``, ``seed=``); returns the benchmark record. A DataFrame (or DataFrames, one table's
    pieces) is written to a temporary Parquet file first: every path's values are read back against it."""
    out = io.StringIO() if quiet else sys.stdout
    if data is None or _is_path(data):
        return run_paths(PathsOptions(data=None if data is None else str(data), **options), out)
    import pandas as pd

    frame = data if isinstance(data, pd.DataFrame) else pd.concat(list(data), ignore_index=True)
    with tempfile.TemporaryDirectory(prefix="harness-paths-") as folder:
        path = Path(folder) / "data.parquet"
        frame.to_parquet(path, index=False)
        return run_paths(PathsOptions(data=str(path), **options), out)
