"""The official client's paths, each a batch at a time over the harness's wire of it (``harness.ingest.wire``): ILP
through ``Sender.dataframe()`` and a commit per batch, over HTTP (each commit one request, answered and committed as
one transaction) or TCP (a stream of lines, never answered); QWP through ``QuestDB.dataframe()``, a call per batch,
committed when it returns."""

from __future__ import annotations

import pandas as pd

from harness.errors import RunError
from harness.ingest.choices import Transport
from harness.ingest.wire.registry import wire_for
from harness.ingest.wire.settings import SenderSettings
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.target import PathTarget


# The transport of each of the client's paths.
TRANSPORTS = {IngestPath.ilp_http: Transport.http, IngestPath.ilp_tcp: Transport.tcp, IngestPath.qwp: Transport.qwp}


class ClientWriter:
    @staticmethod
    def installed() -> bool:
        return True  # the client is the harness's own dependency

    def __init__(self, path: IngestPath, target: PathTarget):
        endpoint = target.endpoint
        settings = SenderSettings(transport=TRANSPORTS[path], host=endpoint.host, ilp_port=target.ilp_port,
                                  http_port=endpoint.http_port)
        self._name = str(path)
        self._connection = wire_for(settings).connect()
        self._schema = target.schema

    def write(self, frame: pd.DataFrame) -> None:
        try:
            self._connection.frame(self._schema.table, frame, tuple(self._schema.tags), self._schema.timestamp)
            self._connection.commit()
        except RunError as exc:
            raise RunError(f"{self._name} write into {self._schema.table} failed: {exc}") from None

    def close(self) -> None:
        self._connection.close()
