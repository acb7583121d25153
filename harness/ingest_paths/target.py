"""Where a path writes: the server (its PGWire and HTTP endpoints, ILP port, logins) and the table's schema."""

from __future__ import annotations

from dataclasses import dataclass

from harness.read.connection import Endpoint
from harness.tsbs.schema import TableSchema


@dataclass(frozen=True)
class PathTarget:
    """The table ``schema`` describes, on the server at ``endpoint`` (ILP over TCP at ``ilp_port``)."""

    endpoint: Endpoint
    schema: TableSchema
    ilp_port: int = 9009

    @property
    def table(self) -> str:
        return self.schema.table

    @property
    def column_names(self) -> list[str]:
        return [name for name, _ in self.schema.columns]
