"""The server-side imports: the rows written into a file under the server's import root
(``cairo.sql.copy.root``, on this machine), then loaded by the server itself: ``COPY t FROM 'file.csv'`` (CSV;
asynchronous, followed in ``sys.text_import_log`` until it ends) or ``INSERT INTO t SELECT * FROM
read_parquet('file.parquet')``. The file is the user's own preparation and is not timed (``stage``); the load
is (``load``).

The import root is the server's setting, resolved against the server's root directory (its ``-d``), which is
read from the process listening on the HTTP port: so only a server on this machine, whose process this user may
read, can take these paths (``import_root`` says why not, otherwise).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from harness.errors import RunError
from harness.ingest_paths.choices import IngestPath
from harness.ingest_paths.http_imp import IMP_TIMESTAMP, csv_bytes
from harness.ingest_paths.target import PathTarget
from harness.questdb.http import QuestDBSql
from harness.questdb.process import LOCAL_HOSTS

COPY_ROOT_SETTING = "cairo.sql.copy.root"
# How long a COPY may run, and how often its log is asked.
COPY_TIMEOUT_SECONDS = 600.0
COPY_POLL_SECONDS = 0.02


def import_root(questdb: QuestDBSql, host: str, http_port: int) -> tuple[Path | None, str]:
    """The server's import root on this machine and "", or None and why it cannot be used."""
    if host not in LOCAL_HOSTS:
        return None, f"the server at {host} is not on this machine: its import root is not ours to write into"
    try:
        _, rows = questdb.query(f"select value from (show parameters) where property_path = '{COPY_ROOT_SETTING}'")
    except RunError as exc:
        return None, f"the server does not say its {COPY_ROOT_SETTING} ({exc})"
    if not rows or not rows[0][0]:
        return None, f"the server has no {COPY_ROOT_SETTING}"
    root = Path(rows[0][0])
    if not root.is_absolute():
        server_root = _server_root(http_port)
        if server_root is None:
            return None, (f"{COPY_ROOT_SETTING} is {rows[0][0]!r}, relative to the server's root, which its process "
                          f"(listening on {http_port}) does not show to this user")
        root = server_root / root
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".harness-paths-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        return None, f"the server's import root {root} cannot be written here: {exc.strerror or exc}"
    return root, ""


def _server_root(http_port: int) -> Path | None:
    """The ``-d ROOT`` of the QuestDB process listening on ``http_port``."""
    from harness.questdb.process import listening_process

    process = listening_process(http_port)
    if process is None:
        return None
    try:
        arguments = process.cmdline()
    except Exception:  # psutil.Error: gone, or another user's
        return None
    for flag, value in zip(arguments, arguments[1:]):
        if flag == "-d":
            return Path(value)
    return None


class ServerSideWriter:
    @staticmethod
    def installed() -> bool:
        return True  # pyarrow writes the Parquet file, the standard library asks the server

    def __init__(self, path: IngestPath, target: PathTarget):
        self._path, self._target = path, target
        endpoint = target.endpoint
        self._questdb = QuestDBSql(endpoint.host, endpoint.http_port, timeout=COPY_TIMEOUT_SECONDS,
                                   login=endpoint.http, tls=endpoint.http_tls)
        root, why = import_root(self._questdb, endpoint.host, endpoint.http_port)
        if root is None:
            raise RunError(f"{path}: {why}")
        suffix = "csv" if path == IngestPath.copy else "parquet"
        self._file = root / f"{target.table}.{suffix}"

    def stage(self, frames: Iterable[pd.DataFrame]) -> None:
        """Every frame into the file under the import root, in order (not timed: the user's file)."""
        columns = self._target.schema.columns
        if self._path == IngestPath.copy:
            with open(self._file, "wb") as out:
                for index, frame in enumerate(frames):
                    text = csv_bytes(frame, columns)
                    out.write(text if index == 0 else text.split(b"\n", 1)[1])
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        writer = None
        try:
            for frame in frames:
                table = pa.Table.from_pandas(_parquet_frame(frame, columns), preserve_index=False)
                writer = writer or pq.ParquetWriter(self._file, table.schema)
                writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()

    def load(self) -> None:
        """The server loads the file: COPY, followed until its log says it ended; or INSERT ... read_parquet()."""
        table, schema = self._target.table, self._target.schema
        if self._path == IngestPath.read_parquet:
            names = ", ".join(f'"{name}"' for name, _ in schema.columns)
            self._questdb.exec(f"insert into '{table}' ({names}) select {names} from read_parquet('{self._file.name}')")
            return
        answer = self._questdb.exec(f"copy '{table}' from '{self._file.name}' with header true timestamp "
                                    f"'{schema.timestamp}' format '{IMP_TIMESTAMP}' on error abort")
        import_id = answer["dataset"][0][0]
        deadline = time.monotonic() + COPY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            _, rows = self._questdb.query(f"select phase, status, message, rows_imported, errors from "
                                          f"sys.text_import_log where id = '{import_id}' order by ts")
            failed = [row for row in rows if row[1] in ("failed", "cancelled")]
            if failed:
                phase, status, message = failed[-1][:3]
                raise RunError(f"COPY into {table} {status}{f' in {phase}' if phase else ''}: {message or 'no message'}")
            if any(row[0] is None and row[1] == "finished" for row in rows):
                return
            time.sleep(COPY_POLL_SECONDS)
        raise RunError(f"COPY into {table} did not end in {COPY_TIMEOUT_SECONDS:.0f}s")

    def write(self, frame: pd.DataFrame) -> None:
        self.stage([frame])
        self.load()

    def close(self) -> None:
        self._questdb.close()
        self._file.unlink(missing_ok=True)


def _parquet_frame(frame: pd.DataFrame, columns: list[tuple[str, str]]) -> pd.DataFrame:
    """The table's columns in its order, as read_parquet() reads them into it: timestamps in UTC to the
    microsecond, categories as their strings."""
    out = frame[[name for name, _ in columns]].copy()
    for name, _ in columns:
        series = out[name]
        if pd.api.types.is_datetime64_any_dtype(series.dtype):
            out[name] = pd.to_datetime(series, utc=True).dt.tz_localize(None).astype("datetime64[us]")
        elif isinstance(series.dtype, pd.CategoricalDtype):
            out[name] = series.astype(object).where(series.notna(), None)
    return out
