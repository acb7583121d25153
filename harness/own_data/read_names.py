"""The names a file's columns are read under where they are not the file's own: each repeat of a name made unique
(``harness.own_data.names.unique_names``: ``ISE``, ``ISE_2``) and the index pandas wrote made a column
(``harness.own_data.pandas_index``). One ``ReadNames`` for a file renames its schema and record batches, position
by position, and says each change as a rename, for the lines a run prints and its record."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from harness.own_data import pandas_index
from harness.own_data.names import unique_names


@dataclass(frozen=True)
class ReadNames:
    """The file's columns' names as read, position by position; the changes (position, the file's name, the name
    read, why); its metadata as read; the column pandas' index is read as (None: none, or a MultiIndex)."""

    names: tuple[str, ...]
    changes: tuple[tuple[int, str, str, str], ...]
    metadata: dict | None
    index: str | None

    @classmethod
    def of(cls, schema: pa.Schema) -> ReadNames | None:
        """The names ``schema``'s columns are read under, or None where they are the file's own."""
        index = pandas_index.index_columns(schema)
        wanted = unique_names([index.get(name, name) for name in schema.names])
        if not index and wanted == schema.names:
            return None
        changes = []
        for position, (old, new) in enumerate(zip(schema.names, wanted)):
            if old in index and old != new:
                why = "pandas' index, a column" + ("" if index[old] == new else f" ({index[old]!r} is taken)")
                changes.append((position, old, new, why))
            elif old != new:
                changes.append((position, old, new, f"the name repeats: column {position + 1}"))
        renamed = {old: new for old, new in zip(schema.names, wanted) if old in index}
        metadata = pandas_index.without_index(schema, renamed) if index else schema.metadata
        return cls(tuple(wanted), tuple(changes), metadata, renamed[next(iter(index))] if len(index) == 1 else None)

    @property
    def by_name(self) -> bool:
        """Whether a column can be read by the file's name for it: no name repeats (pandas' index alone renamed)."""
        return all(why.startswith("pandas") for *_, why in self.changes)

    def schema(self, schema: pa.Schema) -> pa.Schema:
        return pa.schema([item.with_name(name) for item, name in zip(schema, self.names)], metadata=self.metadata)

    def batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` under the names read: one a reader read under them (a CSV's, given them) as it is, one of some
        columns by name (``by_name``), else one of every column of the file, position by position."""
        names = batch.schema.names
        if len(set(names)) == len(names) and set(names) <= set(self.names):
            return batch.replace_schema_metadata(self.metadata)
        if self.by_name:
            renamed = {old: new for _, old, new, _ in self.changes}
            return pa.RecordBatch.from_arrays(batch.columns, schema=pa.schema(
                [item.with_name(renamed.get(item.name, item.name)) for item in batch.schema], metadata=self.metadata))
        return pa.RecordBatch.from_arrays(batch.columns, schema=self.schema(batch.schema))

    def file_name(self, name: str) -> str:
        """The file's own name of the column read as ``name``."""
        return next((old for _, old, new, _ in self.changes if new == name), name)

    def lines(self) -> list[str]:
        return [f"{old!r} -> {new!r} ({why})" for _, old, new, why in self.changes]

    def stored(self) -> dict[str, str]:
        """The changes as the record keeps renames: a repeated name keyed by its column too."""
        return {(old if why.startswith("pandas") else f"{old} (column {position + 1})"): new
                for position, old, new, why in self.changes}
