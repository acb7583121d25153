"""ILP through the official client: ``Sender.dataframe()`` and a flush per batch, over HTTP (each flush one
request, answered and committed as one transaction) or TCP (a stream of lines, never answered)."""

from __future__ import annotations

import pandas as pd

from harness.ingest.senders import SenderSettings, open_sender, one_line
from harness.errors import RunError
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.target import PathTarget


class IlpWriter:
    @staticmethod
    def installed() -> bool:
        return True  # the client is the harness's own dependency

    def __init__(self, path: IngestPath, target: PathTarget):
        endpoint = target.endpoint
        transport = "http" if path == IngestPath.ilp_http else "tcp"
        settings = SenderSettings(transport=transport, host=endpoint.host, ilp_port=target.ilp_port,
                                  http_port=endpoint.http_port)
        self._sender = open_sender(settings)
        self._schema = target.schema

    def write(self, frame: pd.DataFrame) -> None:
        from questdb import QuestDBError

        try:
            self._sender.dataframe(frame, table_name=self._schema.table, symbols=list(self._schema.tags),
                                   at=self._schema.timestamp)
            self._sender.flush()
        except QuestDBError as exc:
            raise RunError(f"ILP write into {self._schema.table} failed: {one_line(exc)}") from None

    def close(self) -> None:
        self._sender.close(flush=False)
