"""What a running QuestDB offers that a benchmark may ask for, read from the server itself rather than from its
version number: ILP over HTTP (its ``/write`` endpoint), the ILP protocol versions it accepts (``/settings``;
a server without that endpoint speaks version 1 only), QWP (its WebSocket endpoints for ingest, ``/write/v4``, and
queries, ``/read/v1``), WAL tables and DEDUP (columns of ``tables()``). A feature's ``SINCE`` says which server has it,
for the line refusing a run that needs it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from harness.questdb.http import QuestDBSql

ILP_OVER_HTTP = "ILP over HTTP"
DEDUP = "DEDUP UPSERT KEYS"
WAL = "WAL tables"
QWP = "QWP ingest"
QWP_QUERIES = "QWP queries"
# Which servers have a feature, where it is not every server the harness runs.
SINCE = {QWP: "QuestDB 10.0 (or a build of its QWP line)", QWP_QUERIES: "QuestDB 10.0 (or a build of its QWP line)"}
# The endpoints of QWP's WebSocket upgrade: a plain GET on one is a bad request (400) where it exists, 404 where not.
QWP_PATHS = {QWP: "/write/v4", QWP_QUERIES: "/read/v1"}


def protocol_feature(version: int) -> str:
    return f"ILP protocol version {version}"


@dataclass(frozen=True)
class ServerFeatures:
    """One server's release and what it offers."""

    version: str
    ilp_over_http: bool
    protocol_versions: tuple[int, ...]
    wal: bool
    dedup: bool
    qwp: bool = False
    qwp_queries: bool = False

    def offers(self, feature: str) -> bool:
        offered = {ILP_OVER_HTTP: self.ilp_over_http, WAL: self.wal, DEDUP: self.dedup, QWP: self.qwp,
                   QWP_QUERIES: self.qwp_queries}
        offered.update({protocol_feature(version): True for version in self.protocol_versions})
        return offered.get(feature, False)

    def missing(self, needed) -> list[str]:
        """Those of the ``needed`` features this server lacks, in the order given."""
        return [feature for feature in needed if not self.offers(feature)]

    def lacking(self, needed, where: str) -> str | None:
        """The line refusing a run that needs ``needed`` of the server at ``where``, naming its version and which
        server has what it lacks; None where it lacks nothing."""
        missing = self.missing(needed)
        if not missing:
            return None
        since = "; ".join(f"{feature} needs {SINCE[feature]}" for feature in missing if feature in SINCE)
        return (f"QuestDB {self.version} at {where} lacks {', '.join(missing)}" + (f": {since}" if since else ""))


def detect(questdb: QuestDBSql) -> ServerFeatures:
    """Ask the server at ``questdb``."""
    status, body = questdb.get("/settings")
    versions = (1,)
    if status == 200:
        try:
            versions = tuple(json.loads(body)["config"]["line.proto.support.versions"])
        except (ValueError, KeyError, TypeError):
            pass
    # A server with ILP over HTTP answers a GET on /write as a wrong method (405); one without, as a missing
    # file (404).
    write_status, _ = questdb.get("/write")
    qwp = {feature: questdb.get(path)[0] != 404 for feature, path in QWP_PATHS.items()}
    columns, _ = questdb.query("select * from tables() limit 0")
    return ServerFeatures(version=questdb.server_version(), ilp_over_http=write_status != 404,
                          protocol_versions=versions, wal="walEnabled" in columns, dedup="dedup" in columns,
                          qwp=qwp[QWP], qwp_queries=qwp[QWP_QUERIES])
