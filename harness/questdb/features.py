"""What a running QuestDB offers that a benchmark may ask for, read from the server itself rather than from its
version number: ILP over HTTP (its ``/write`` endpoint), the ILP protocol versions it accepts (``/settings``;
a server without that endpoint speaks version 1 only), WAL tables and DEDUP (columns of ``tables()``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from harness.questdb.http import QuestDBSql

ILP_OVER_HTTP = "ILP over HTTP"
DEDUP = "DEDUP UPSERT KEYS"
WAL = "WAL tables"


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

    def offers(self, feature: str) -> bool:
        offered = {ILP_OVER_HTTP: self.ilp_over_http, WAL: self.wal, DEDUP: self.dedup}
        offered.update({protocol_feature(version): True for version in self.protocol_versions})
        return offered.get(feature, False)

    def missing(self, needed) -> list[str]:
        """Those of the ``needed`` features this server lacks, in the order given."""
        return [feature for feature in needed if not self.offers(feature)]


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
    columns, _ = questdb.query("select * from tables() limit 0")
    return ServerFeatures(version=questdb.server_version(), ilp_over_http=write_status != 404,
                          protocol_versions=versions, wal="walEnabled" in columns, dedup="dedup" in columns)
