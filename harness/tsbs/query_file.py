"""Query files: generated TSBS queries as JSON lines, one query a line (``.gz`` read and written too).

The keys are those of the reference files in shared/tsbs-golden: ``query_type``, ``label``,
``description``, ``sql`` and ``params`` (a list whose items are host-name lists or strings, or null).
Reading checks every line and names the first bad one in a single ``UsageError`` line.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from harness.errors import UsageError
from harness.output_file import whole_file
from harness.tsbs.query_types import Query

_KEYS = ("query_type", "label", "description", "sql", "params")


def write_jsonl(queries: Iterable[Query], out: str | Path | IO[str]) -> int:
    """Write one JSON line per query to a text stream or a path (gzip'd if it ends in ``.gz``).

    Returns how many were written. Lines are laid out as in the reference files.
    """
    if isinstance(out, (str, Path)):
        path = Path(out)
        if not path.name.endswith(".gz"):
            with whole_file(path, "the query file", "w") as stream:
                return write_jsonl(queries, stream)
        with whole_file(path, "the query file") as raw, gzip.open(raw, "wt", encoding="utf-8") as stream:
            return write_jsonl(queries, stream)
    count = 0
    for query in queries:
        out.write(json.dumps(query.to_json_dict()) + "\n")
        count += 1
    return count


def _param(value, where: str):
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(host, str) for host in value):
        return tuple(value)
    raise UsageError(f"{where}: each of 'params' must be a string or a list of strings, got {json.dumps(value)[:80]}")


def _parse_line(text: str, where: str) -> Query:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise UsageError(f"{where}: expected a JSON object with keys {', '.join(_KEYS)}")
    if set(record) != set(_KEYS):
        missing = [key for key in _KEYS if key not in record]
        extra = sorted(set(record) - set(_KEYS))
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown {', '.join(extra)}"] if extra else []
        )
        raise UsageError(f"{where}: keys must be {', '.join(_KEYS)} ({'; '.join(problems)})")
    for key in ("query_type", "label", "description", "sql"):
        if not isinstance(record[key], str):
            raise UsageError(f"{where}: {key!r} must be a string")
    params = record["params"]
    if params is not None:
        if not isinstance(params, list):
            raise UsageError(f"{where}: 'params' must be a list or null")
        params = tuple(_param(value, where) for value in params)
    return Query(record["query_type"], record["label"], record["description"], record["sql"], params)


def _lines(source: IO[str], name: str) -> Iterator[Query]:
    try:
        for number, text in enumerate(source, start=1):
            if text.strip():
                yield _parse_line(text, f"{name}:{number}")
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError, OSError) as exc:
        raise UsageError(f"{name}: cannot read the query file ({exc})") from None


def read_jsonl(path_or_file: str | Path | IO[str]) -> list[Query]:
    """All queries of a file (a path, ``.gz`` unzipped, or an open text stream), checked line by line."""
    if isinstance(path_or_file, (str, Path)):
        path = Path(path_or_file)
        try:
            raw = path.open("rb")
        except OSError as exc:
            raise UsageError(f"{path}: cannot open the query file ({exc.strerror})") from None
        with raw:
            binary = gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw
            return list(_lines(io.TextIOWrapper(binary, encoding="utf-8"), str(path)))
    return list(_lines(path_or_file, getattr(path_or_file, "name", "<queries>")))
