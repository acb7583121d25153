"""HTTP ``/exp`` (over TLS where the endpoint says): QuestDB's export endpoint, as CSV parsed by pyarrow while
it streams in, or as Parquet (``fmt=parquet``, which QuestDB 9.3.4 serves) written to a temporary file and read
back row group by row group: a Parquet file's footer comes last, so nothing can be read before the whole file
has arrived.
"""

from __future__ import annotations

import http.client
import io
import json
import tempfile
import urllib.parse
from collections.abc import Iterator, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from harness.errors import RunError
from harness.frames.kinds import FrameKind
from harness.questdb.credentials import refused_http_login
from harness.questdb.tls import http_failure
from harness.read.connection import CONNECT_TIMEOUT_SECONDS, Endpoint
from harness.read.frames import BOOLEAN, DOUBLE, LONG, STRING, TIMESTAMP, TIMESTAMP_NS, ArrowChunks, Column, arrow_frame

# The CSV reader parses block by block and reads about twenty blocks ahead of what it hands over (22 MB of
# a 60 MB body at 1 MiB, all of it at 4 MiB): the block size bounds the CSV held ahead.
CSV_BLOCK_BYTES = 1 << 20
COPY_BYTES = 1 << 20
# A slow server (a big sort before the first byte) may take this long between two reads.
READ_TIMEOUT_SECONDS = 300.0
_CSV_TYPES = {STRING: pa.dictionary(pa.int32(), pa.string()), DOUBLE: pa.float64(), LONG: pa.int64(),
              BOOLEAN: pa.bool_(), TIMESTAMP: pa.timestamp("us", "UTC"), TIMESTAMP_NS: pa.timestamp("ns", "UTC")}


class _Body(io.RawIOBase):
    """An HTTP response body as a file, counting its bytes."""

    def __init__(self, response: http.client.HTTPResponse):
        self.response = response
        self.bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self.response.readinto(buffer)
        self.bytes += count
        return count


class _Export:
    """One keep-alive connection to ``/exp``."""

    def __init__(self, endpoint: Endpoint, frame: FrameKind = FrameKind.pandas):
        # pandas frames only (``protocols``): ``frame`` is always pandas here.
        self._headers = endpoint.http_headers()
        self._endpoint = endpoint
        self._connection = endpoint.http_tls.connection(endpoint.host, endpoint.http_port, CONNECT_TIMEOUT_SECONDS)
        self._received = 0
        self._body: _Body | None = None

    def _open(self, sql: str, **parameters: str) -> _Body:
        endpoint = self._endpoint
        path = "/exp?" + urllib.parse.urlencode({"query": sql, **parameters})
        try:
            self._connection.request("GET", path, headers=self._headers)
            self._connection.sock.settimeout(READ_TIMEOUT_SECONDS)
            response = self._connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            line = http_failure(endpoint.host, endpoint.http_port, endpoint.http_tls, exc)
            if line is None:
                raise
            raise RunError(line) from None
        if response.status in (401, 403):  # as /exec says it
            raise RunError(refused_http_login(f"{endpoint.host}:{endpoint.http_port}", response.status,
                                              endpoint.http))
        if response.status != 200:
            body = response.read()
            try:
                message = json.loads(body).get("error") or body[:200].decode(errors="replace")
            except ValueError:
                message = body[:200].decode(errors="replace")
            raise RunError(f"QuestDB's /exp at {endpoint.host}:{endpoint.http_port} answered HTTP "
                           f"{response.status}: {' '.join(str(message).split())}")
        self._body = _Body(response)
        return self._body

    def _done(self) -> None:
        if self._body is not None:
            self._received += self._body.bytes
            self._body = None

    def received_bytes(self) -> int | None:
        return self._received + (self._body.bytes if self._body is not None else 0)

    def close(self) -> None:
        self._connection.close()


class CsvReader(_Export):
    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[pd.DataFrame]:
        body = self._open(sql)
        types = {column.name: _CSV_TYPES[column.kind] for column in columns if column.kind in _CSV_TYPES}
        reader = pa_csv.open_csv(
            io.BufferedReader(body, CSV_BLOCK_BYTES),
            read_options=pa_csv.ReadOptions(block_size=CSV_BLOCK_BYTES, use_threads=False),
            # QuestDB writes a NULL string as an empty field and an empty string as "": only the first is NULL.
            convert_options=pa_csv.ConvertOptions(column_types=types, strings_can_be_null=True,
                                                  quoted_strings_can_be_null=False))
        try:
            for table in ArrowChunks(chunk_rows).tables(reader):
                yield arrow_frame(table, columns)
        finally:
            self._done()


class ParquetReader(_Export):
    def frames(self, sql: str, columns: Sequence[Column], chunk_rows: int) -> Iterator[pd.DataFrame]:
        with tempfile.TemporaryFile(prefix="harness-read-", suffix=".parquet") as spool:
            body = self._open(sql, fmt="parquet")
            try:
                while block := body.read(COPY_BYTES):
                    spool.write(block)
            finally:
                self._done()
            spool.seek(0)
            symbols = [column.name for column in columns if column.kind == STRING]
            # No pre-buffering: it would keep every row group read so far in memory.
            parquet = pq.ParquetFile(spool, read_dictionary=symbols, pre_buffer=False)
            for table in ArrowChunks(chunk_rows).tables(parquet.iter_batches(batch_size=chunk_rows)):
                yield arrow_frame(table, columns)
