"""The index a pandas DataFrame wrote into a Parquet or Arrow file (``df.to_parquet()``: pandas' metadata, the
schema's ``b'pandas'`` key), read as a column under the name pandas' ``reset_index`` gives it: a named index its
name, an unnamed one (stored as ``__index_level_0__``) ``index``, a MultiIndex's unnamed levels ``level_0``,
``level_1`` ... (``harness.own_data.read_names`` makes a name a column already takes free). A RangeIndex, which
pandas keeps as metadata alone, is no column. The metadata is then made to say the frame has no index, so that the
frames made of the file's batches hold the index as a column, not as their index; its columns' dtypes are kept.
"""

from __future__ import annotations

import json

import pyarrow as pa

PANDAS_KEY = b"pandas"


def _pandas_metadata(schema: pa.Schema) -> dict | None:
    if not schema.metadata or PANDAS_KEY not in schema.metadata:
        return None
    try:
        found = json.loads(schema.metadata[PANDAS_KEY])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def index_columns(schema: pa.Schema) -> dict[str, str]:
    """The file's fields that hold the frame's index, each to the name pandas gives it as a column, in order; none
    where pandas wrote no index column (a RangeIndex, or no pandas metadata)."""
    found = _pandas_metadata(schema)
    if found is None:
        return {}
    stored = [name for name in found.get("index_columns", []) if isinstance(name, str) and name in schema.names]
    given = {item.get("field_name"): item.get("name") for item in found.get("columns", []) if isinstance(item, dict)}
    result = {}
    for level, field_name in enumerate(stored):
        name = given.get(field_name)
        if not isinstance(name, str) or not name:
            name = "index" if len(stored) == 1 else f"level_{level}"
        result[field_name] = name
    return result


def without_index(schema: pa.Schema, renamed: dict[str, str]) -> dict[bytes, bytes]:
    """``schema``'s metadata with pandas' saying the frame has no index, its index fields named as ``renamed``
    says (each field's name to the name it is read under)."""
    found = _pandas_metadata(schema)
    metadata = dict(schema.metadata)
    found["index_columns"] = []
    for item in found.get("columns", []):
        if isinstance(item, dict) and item.get("field_name") in renamed:
            item["name"] = item["field_name"] = renamed[item["field_name"]]
    metadata[PANDAS_KEY] = json.dumps(found).encode()
    return metadata
