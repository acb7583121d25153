"""The kinds of frame a run hands the client (``--frame``): pandas with NumPy-backed columns (``pandas``: what
``pd.read_csv`` and TSBS's generator give), pandas with Arrow-backed columns (``pandas-arrow``: ``pd.ArrowDtype``
throughout), a pyarrow ``Table`` (``arrow``) and a Polars ``DataFrame`` (``polars``); and which of them ILP's
``Sender.dataframe()`` takes (pandas only). QWP's ``QuestDB.dataframe()`` takes every kind as it is: NumPy-backed
pandas through the client's NumPy planner, the others through the Arrow C stream. Imports no frame library: the
flags name a kind before any frame is made (``harness.frames.convert`` makes and converts them).
"""

from __future__ import annotations

from enum import StrEnum


class FrameKind(StrEnum):
    pandas = "pandas"
    pandas_arrow = "pandas-arrow"
    arrow = "arrow"
    polars = "polars"


# The kinds ILP's ``Sender.dataframe()`` takes: a pandas DataFrame (its columns NumPy- or Arrow-backed).
PANDAS_KINDS = frozenset({FrameKind.pandas, FrameKind.pandas_arrow})
