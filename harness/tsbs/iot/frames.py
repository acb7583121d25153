"""TSBS's iot lines as pandas DataFrames, one per table, from the simulation's records (``harness.tsbs.iot.use_case``):
the same numbers the text printer prints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from harness.tsbs.choices import FieldType, SymbolDtype, choice
from harness.tsbs.hosts import symbol_column, utc_timestamps
from harness.tsbs.iot.kernels import _CLEARED_FIELD, _CLEARED_TAG, _EPOCH, _KIND, _TRUCK, _VALUES
from harness.tsbs.iot.schema import (
    DEVICE_VERSIONS,
    DRIVERS,
    FIELDS,
    FLEETS,
    MODELS,
    NUMERIC_TAGS,
    STRING_TAGS,
    TABLES,
    truck_name,
)
from harness.tsbs.iot.simulator import DEFAULT_CHUNK_ROWS, IotSimulator, record_chunks
from harness.tsbs.params import DatasetSpec
from harness.tsbs.schema import TIMESTAMP_COLUMN

# pandas is imported where frames are made: generating text never needs it.
if TYPE_CHECKING:
    import pandas as pd


def chunks(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS, fields: str = "long",
           symbol_dtype: str = "category", first_chunk_rows: int | None = None) -> Iterator[dict[str, pd.DataFrame]]:
    """Chunks of ``chunk_rows`` consecutive lines of both tables together (the last may be shorter; the first
    of ``first_chunk_rows`` if given and smaller), each mapping every table with lines in it to a DataFrame of
    them in TSBS's order. Tags are ``symbol_dtype`` columns (a cleared tag: null), the model's numbers and
    the values float64 (a cleared one: NaN), ``status`` nullable Int64, ``timestamp`` UTC without a zone
    (``hosts.utc_timestamps``).

    ``fields`` is accepted for the other use cases' sake: TSBS's iot values are decimals truncated to a
    fixed precision, the same for ``long`` and ``double``."""
    choice(FieldType, fields, "fields")
    symbol_dtype = choice(SymbolDtype, symbol_dtype, "symbol_dtype")
    simulator = IotSimulator(spec)
    dtypes = _tag_dtypes(spec.scale)
    for records in record_chunks(simulator, chunk_rows, first_chunk_rows):
        chunk = {}
        for kind, table in enumerate(TABLES):
            rows = records[records[:, _KIND] == kind]
            if len(rows):
                chunk[table] = _frame(simulator, table, rows, dtypes, symbol_dtype)
        yield chunk


def _tag_dtypes(scale: int) -> dict[str, pd.CategoricalDtype]:
    """Each string tag's values as a categorical dtype of Arrow strings (read by the client without the GIL)."""
    import pandas as pd

    values = {"name": [truck_name(truck) for truck in range(scale)], "fleet": FLEETS, "driver": DRIVERS,
              "model": [model for model, *_ in MODELS], "device_version": DEVICE_VERSIONS}
    return {tag: pd.CategoricalDtype(pd.Index(list(values[tag]), dtype="string[pyarrow]")) for tag in STRING_TAGS}


def _frame(simulator: IotSimulator, table: str, records: np.ndarray, dtypes: dict, symbol_dtype: str) -> pd.DataFrame:
    import pandas as pd

    truck = records[:, _TRUCK]
    cleared_tag = records[:, _CLEARED_TAG]
    cleared_field = records[:, _CLEARED_FIELD]
    model = simulator.model[truck]
    codes = {"name": truck, "fleet": simulator.fleet[truck], "driver": simulator.driver[truck], "model": model,
             "device_version": simulator.device_version[truck]}
    columns: dict[str, object] = {}
    for tag_index, tag in enumerate(STRING_TAGS):
        tag_codes = np.where(cleared_tag == tag_index, -1, codes[tag])
        columns[tag] = symbol_column(tag_codes, dtypes[tag], symbol_dtype)
    for position, tag in enumerate(NUMERIC_TAGS):
        numbers = np.array([float(row[1 + position]) for row in MODELS])[model]
        columns[tag] = np.where(cleared_tag == len(STRING_TAGS) + position, np.nan, numbers)
    for field, (key, decimals) in enumerate(FIELDS[table]):
        digits = records[:, _VALUES + field]
        cleared = cleared_field == field
        if decimals is None:
            columns[key] = pd.arrays.IntegerArray(digits.copy(), cleared)
        else:
            # TSBS's float64(int(x * 10**d)) / 10**d, the same double.
            columns[key] = np.where(cleared, np.nan, digits.astype(np.float64) / 10.0 ** decimals)
    timestamps = simulator.spec.start_ns + records[:, _EPOCH] * simulator.spec.interval_ns
    columns[TIMESTAMP_COLUMN] = utc_timestamps(timestamps)
    return pd.DataFrame(columns, copy=False)
