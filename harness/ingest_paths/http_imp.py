"""HTTP ``/imp``: each batch uploaded as CSV (``multipart/form-data``) into the existing table, with its columns'
types and the designated timestamp's pattern stated in the upload's schema, and ``atomicity=abort``. The answer
says how many rows were imported and rejected; a rejected row is an error here. ``atomicity=abort`` does not make
an upload whole: a row the table refuses (a designated timestamp before 1970) is rejected and the others imported
(``harness.ingest_paths.probe`` measures it)."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import pandas as pd

from harness.errors import RunError
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.target import PathTarget

TIMEOUT_SECONDS = 120.0
# How the CSV writes a timestamp, and the pattern /imp reads it with: microseconds, UTC.
CSV_TIMESTAMP = "%Y-%m-%dT%H:%M:%S.%fZ"
IMP_TIMESTAMP = "yyyy-MM-ddTHH:mm:ss.SSSUUUZ"


def csv_bytes(frame: pd.DataFrame, columns: list[tuple[str, str]]) -> bytes:
    """``frame``'s columns as CSV with a header; timestamps in UTC to the microsecond; a null left empty."""
    out = frame[[name for name, _ in columns]].copy()
    for name, _ in columns:
        if pd.api.types.is_datetime64_any_dtype(out[name].dtype):
            out[name] = pd.to_datetime(out[name], utc=True).dt.tz_localize(None)
    return out.to_csv(index=False, date_format=CSV_TIMESTAMP).encode()


class ImpWriter:
    @staticmethod
    def installed() -> bool:
        return True  # the standard library's HTTP client

    def __init__(self, path: IngestPath, target: PathTarget):
        self._target = target
        endpoint = target.endpoint
        query = urllib.parse.urlencode({"name": target.table, "timestamp": target.schema.timestamp,
                                        "partitionBy": target.schema.partition_by, "overwrite": "false",
                                        "atomicity": "abort", "fmt": "json"})
        self._path = f"/imp?{query}"
        self._schema = json.dumps([{"name": name, "type": sql_type, **({"pattern": IMP_TIMESTAMP}
                                                                       if sql_type.startswith("TIMESTAMP") else {})}
                                   for name, sql_type in target.schema.columns])
        self._connection = endpoint.http_tls.connection(endpoint.host, endpoint.http_port, TIMEOUT_SECONDS)
        self._headers = endpoint.http_headers()

    def write(self, frame: pd.DataFrame) -> None:
        boundary = uuid.uuid4().hex
        body = b"".join([
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"schema\"\r\n\r\n{self._schema}\r\n".encode(),
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"{self._target.table}.csv\""
            f"\r\nContent-Type: text/csv\r\n\r\n".encode(),
            csv_bytes(frame, self._target.schema.columns),
            f"\r\n--{boundary}--\r\n".encode()])
        headers = {**self._headers, "Content-Type": f"multipart/form-data; boundary={boundary}"}
        try:
            self._connection.request("POST", self._path, body=body, headers=headers)
            response = self._connection.getresponse()
            answer = response.read()
        except OSError as exc:
            raise RunError(f"/imp into {self._target.table} failed: {exc}") from None
        try:
            result = json.loads(answer)
        except ValueError:
            result = {}
        if response.status != 200 or result.get("status") != "OK":
            text = result.get("status") or answer[:300].decode(errors="replace")
            raise RunError(f"/imp into {self._target.table} failed (HTTP {response.status}): {' '.join(text.split())}")
        rejected = result.get("rowsRejected", 0)
        if rejected or result.get("rowsImported") != len(frame):
            raise RunError(f"/imp into {self._target.table}: {result.get('rowsImported')} of {len(frame)} rows "
                           f"imported, {rejected} rejected")

    def close(self) -> None:
        self._connection.close()
