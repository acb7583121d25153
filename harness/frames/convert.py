"""Frames of each kind (``harness.frames.kinds``) made from a pandas frame (``from_pandas``) or from Arrow record
batches (``from_arrow``), what ILP's ``Sender.dataframe()`` takes of them (pandas only: ``as_pandas`` is the
conversion its user must write), a frame's kind (``kind_of``), its rows sliced (``sliced``) and a column of any kind
read and replaced (``column_of``, ``with_column``), whatever its kind; ``len()`` counts any kind's rows.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from harness.frames.kinds import FrameKind


def from_pandas(frame: pd.DataFrame, kind: FrameKind) -> object:
    """``frame`` as a frame of ``kind``: its columns and dtypes carried over as pyarrow carries them (a categorical
    becomes a dictionary column, Polars' ``Categorical``)."""
    if kind == FrameKind.pandas:
        return frame
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return from_arrow(table, kind)


def from_arrow(table: pa.Table, kind: FrameKind, to_pandas=None) -> object:
    """``table`` as a frame of ``kind``; a NumPy-backed pandas frame as ``to_pandas(table)`` makes it (default:
    ``Table.to_pandas()``, as ``pd.read_parquet`` gives it)."""
    if kind == FrameKind.arrow:
        return table
    if kind == FrameKind.polars:
        import polars as pl

        return pl.from_arrow(table, rechunk=False)
    if kind == FrameKind.pandas_arrow:
        return table.to_pandas(types_mapper=pd.ArrowDtype)
    return to_pandas(table) if to_pandas is not None else table.to_pandas()


def sliced(frame: object, start: int, rows: int) -> object:
    """``rows`` rows of ``frame`` from ``start``, without a copy, whatever its kind."""
    if isinstance(frame, pd.DataFrame):
        return frame.iloc[start:start + rows]
    return frame.slice(start, rows)  # pyarrow's and Polars' alike


def kind_of(frame: object) -> FrameKind:
    """The kind of ``frame`` (a pandas frame Arrow-backed when every column is)."""
    if isinstance(frame, pd.DataFrame):
        arrow_backed = len(frame.columns) > 0 and all(isinstance(dtype, pd.ArrowDtype) for dtype in frame.dtypes)
        return FrameKind.pandas_arrow if arrow_backed else FrameKind.pandas
    if isinstance(frame, pa.Table):
        return FrameKind.arrow
    if type(frame).__module__.startswith("polars"):
        return FrameKind.polars
    raise TypeError(f"not a frame the harness hands the client: {type(frame).__name__}")


def column_of(frame: object, name: str) -> object:
    """The column ``name`` of ``frame`` as its kind holds it: a pandas Series, a pyarrow ChunkedArray, a Polars
    Series."""
    return frame[name]


def with_column(frame: object, name: str, values: object) -> object:
    """``frame`` with its column ``name`` replaced by ``values`` (of its kind): in place for a pandas frame (a copy
    of the caller's), a new frame for the others."""
    if isinstance(frame, pd.DataFrame):
        frame[name] = values
        return frame
    if isinstance(frame, pa.Table):
        return frame.set_column(frame.schema.get_field_index(name), name, values)
    return frame.with_columns(values.alias(name))


def as_pandas(frame: object) -> pd.DataFrame:
    """``frame`` as ILP's ``Sender.dataframe()`` takes it: a pandas frame as it is, an Arrow or Polars frame
    converted (``to_pandas()``), as its user must."""
    if isinstance(frame, pd.DataFrame):
        return frame
    return frame.to_pandas()

