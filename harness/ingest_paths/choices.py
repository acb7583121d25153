"""The ingestion paths' names: what ``--paths`` takes and every record says."""

from __future__ import annotations

from enum import StrEnum


class IngestPath(StrEnum):
    ilp_http = "ilp-http"
    ilp_tcp = "ilp-tcp"
    qwp = "qwp"
    asyncpg = "asyncpg"
    asyncpg_copy = "asyncpg-copy"
    psycopg = "psycopg"
    to_sql = "to-sql"
    http_imp = "http-imp"
    copy = "copy"
    read_parquet = "read-parquet"
