"""Where records live: each written as one JSON file that appears whole or not at all, and read back through
one loader that knows both records by their schema and brings an older version up to date.

Both records follow one versioning scheme: a document names its schema (a benchmark record by its
``"schema"``; a run record, whose documents predate that key, by its absence) and its ``schema_version``
(a run record of version 1 has none). Reading one applies the ``MIGRATIONS`` from its version to the
current one, each a function from one version's document to the next's, then builds the record with the
codec (``harness.records.codec``); the record keeps the version it was read as. A newer version than this
harness writes, a document of neither schema, or one the codec cannot build is refused in one line naming
the file.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import UsageError
from harness.output_file import cannot_write, whole_file
from harness.records.benchmark_record import BENCHMARK_SCHEMA, BENCHMARK_SCHEMA_VERSION, BenchmarkRecord, Comparison
from harness.records.codec import from_dict, to_dict
from harness.records.intervals import summarize
from harness.records.run_record import SCHEMA_VERSION, RunRecord

RUN = "results file"
BENCHMARK = "benchmark record"
# What each schema's documents are built into, and the version this harness writes.
CURRENT = {RUN: (RunRecord, SCHEMA_VERSION), BENCHMARK: (BenchmarkRecord, BENCHMARK_SCHEMA_VERSION)}


def _run_from_version_1(values: dict) -> dict:
    """A run record from before schema versions: rates stored beside the counts, per-worker splits apart,
    the validation as two top-level keys, and a copy of the counters under ``metrics``."""
    workers = values.get("workers") or {}
    phases = {name: {"rows": phase["rows"], "bytes": phase["bytes"], "seconds": phase["seconds"],
                     "client_cpu_seconds": phase.get("client_cpu_seconds"), "flushes": phase.get("flushes", 0),
                     "workers": [{"rows": w["rows"], "bytes": w["bytes"]} for w in workers.get(name, [])]}
              for name, phase in values["phases"].items()}
    validation = None
    if values.get("validated_row_count") is not None:
        validation = {"expected_rows": values["validated_row_count"], "visible_rows": values["validated_row_count"],
                      "time_to_visible_seconds": values.get("time_to_visible_seconds")}
    mode = values.get("mode") or "-"
    return {"kind": "replay" if mode == "replay" else "bench", "mode": mode,
            "parameters": values.get("parameters") or {}, "seed": values.get("seed"), "schema_version": 2, "harness_version": values.get("harness_version", "-"),
            "run_id": values.get("run_id", "-"), "started_at": values.get("started_at", "-"),
            "system": values.get("system") or {}, "server": values.get("server"), "phases": phases,
            "validation": validation, "status": values.get("status", "-"), "error": values.get("error")}


def _run_from_version_2(values: dict) -> dict:
    """Version 3 added fields (a read run's figures, an ingest run's arrival, a merged run's clients) that a
    version-2 document lacks and their defaults fill."""
    return {**values, "schema_version": 3}


def _run_from_version_3(values: dict) -> dict:
    """Version 4 added open-loop runs (``open_loop``), which a version-3 document lacks and its default fills."""
    return {**values, "schema_version": 4}


def _run_from_version_4(values: dict) -> dict:
    """Version 5 added profiled runs (``profile``), which a version-4 document lacks and its default fills."""
    return {**values, "schema_version": 5}


def _run_from_version_5(values: dict) -> dict:
    """Version 6 added an ingest run's resolved plan (``plan``), which a version-5 document lacks and its default
    fills."""
    return {**values, "schema_version": 6}


def _benchmark_from_version_1(values: dict) -> dict:
    """Version 2 added each paired ratio's interval to the summaries; a version-1 document's rounds give it."""
    comparisons = []
    for values_of_one in values["comparisons"]:
        comparison = from_dict(Comparison, values_of_one)
        comparison.summary = summarize(comparison)
        comparisons.append(to_dict(comparison))
    return {**values, "comparisons": comparisons, "schema_version": 2}


# (schema, version) -> the function that makes a document of that version one of the next.
MIGRATIONS: dict[tuple[str, int], Callable[[dict], dict]] = {
    (RUN, 1): _run_from_version_1,
    (RUN, 2): _run_from_version_2,
    (RUN, 3): _run_from_version_3,
    (RUN, 4): _run_from_version_4,
    (RUN, 5): _run_from_version_5,
    (BENCHMARK, 1): _benchmark_from_version_1,
}


def _read(path: str | Path, schema: str) -> object:
    """The JSON in ``path``; ``schema`` names what the file was expected to be in the one-line error."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise UsageError(f"cannot read {schema} {path}: {reason}") from None


def _document(path: str | Path, schema: str, values: object = None) -> dict:
    """The JSON document in ``path`` (read already: ``values``) if it is one of ``schema``'s."""
    if values is None:
        values = _read(path, schema)
    if schema_of(values) != schema:
        raise UsageError(f"{path} is not a benchmark record (no \"schema\": \"{BENCHMARK_SCHEMA}\")"
                         if schema == BENCHMARK else f"{path} is not a harness results file (no phases)")
    return values


def schema_of(values: object) -> str | None:
    """Which record a JSON document is: a benchmark record names its schema; a run record has phases."""
    if not isinstance(values, dict):
        return None
    if values.get("schema") == BENCHMARK_SCHEMA:
        return BENCHMARK
    return RUN if "schema" not in values and isinstance(values.get("phases"), dict) else None


def _built(values: dict, schema: str, path: str | Path) -> RunRecord | BenchmarkRecord:
    """The record of ``values`` (a document of ``schema``), brought up to the current version."""
    cls, current = CURRENT[schema]
    version = values.get("schema_version", 1 if schema == RUN else None)
    if isinstance(version, int) and version > current:
        raise UsageError(f"{path} is a {schema} of schema version {version}, newer than this harness reads "
                         f"(versions 1 to {current})")
    if not isinstance(version, int) or version < 1:
        raise UsageError(f"{path} is a {schema} of schema version {version!r}; this harness reads versions 1 to "
                         f"{current}")
    try:
        document = values
        for step in range(version, current):
            document = MIGRATIONS[(schema, step)](document)
        record = from_dict(cls, document)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"{path} is not a well-formed {schema} (schema version {version}): {reason}") from None
    record.schema_version = version
    record.path = Path(path)
    return record


def load_results(paths: list[str | Path]) -> list[RunRecord]:
    """Read run records (results files) of any version this harness reads; UsageError names a file it cannot
    read."""
    return [_built(_document(path, RUN), RUN, path) for path in paths]


def load_benchmark_record(path: str | Path) -> BenchmarkRecord:
    """Read a benchmark record of any version this harness reads; UsageError, in one line naming the file,
    for a file that cannot be read, is not a benchmark record, or has another schema version (named)."""
    return _built(_document(path, BENCHMARK), BENCHMARK, path)


def load_records(paths: list[str | Path]) -> tuple[list[RunRecord], list[BenchmarkRecord]]:
    """The run records and the benchmark records among ``paths``, each in the order given, each file read
    once: what ``compare`` and ``report`` take. A file that is neither is refused as a results file."""
    runs, benchmarks = [], []
    for path in paths:
        values = _read(path, RUN)
        if schema_of(values) == BENCHMARK:
            benchmarks.append(_built(values, BENCHMARK, path))
        else:
            runs.append(_built(_document(path, RUN, values), RUN, path))
    return runs, benchmarks


def is_benchmark_record(path: str | Path) -> bool:
    """Whether the file is a JSON document that names the benchmark record's schema (of any version)."""
    try:
        values = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return False
    return schema_of(values) == BENCHMARK


@dataclass(frozen=True)
class Recording:
    """Where a run's record goes: ``results`` (a path), or a file of its own in ``results_dir`` named by the run's
    mode; and whether its HTML report is written beside it."""

    results: str | None = None
    results_dir: str = "results"
    report: bool = False

    def path(self, mode: str) -> Path:
        """The record's path: ``results``, or a new file of ``results_dir`` named for ``mode``."""
        return Path(self.results) if self.results else default_results_path(mode, self.results_dir)


def default_results_path(mode: str, results_dir: str | Path = "results") -> Path:
    """``results/<UTC time>-<mode>.json``, e.g. ``results/20261122T110501Z-bench.json``; a second run in the
    same second gets ``-2``, ``-3`` ... rather than overwriting the first."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe_mode = "".join(char if char.isalnum() or char in "-_." else "_" for char in mode) or "run"
    candidate = Path(results_dir) / f"{stamp}-{safe_mode}.json"
    serial = 2
    while candidate.exists():
        candidate = Path(results_dir) / f"{stamp}-{safe_mode}-{serial}.json"
        serial += 1
    return candidate


def reserve_results_path(record: RunRecord, path: str | Path | None = None,
                         results_dir: str | Path = "results") -> Path:
    """Decide where the record goes and check, before the run touches anything, that it can be written
    there (the folder is created); UsageError names the path otherwise."""
    target = Path(path) if path else default_results_path(record.mode, results_dir)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            raise UsageError(f"results path {target} is a directory")
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=True):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write results to {target}: {exc.strerror or exc}") from None
    record.path = target
    return target


def write_results(record: RunRecord, path: str | Path | None = None, results_dir: str | Path = "results") -> Path:
    """Write one run record; returns where it went (creating the folder)."""
    target = Path(path) if path else record.path or default_results_path(record.mode, results_dir)
    record.path = write_json_whole(record.to_dict(), target)
    return target


def write_benchmark_record(record: BenchmarkRecord, path: str | Path) -> Path:
    """Write a benchmark record (creating the folder); returns the path."""
    record.path = write_json_whole(record.to_dict(), Path(path))
    return record.path


def write_json_whole(document: dict, target: Path) -> Path:
    """``document`` as indented JSON in ``target`` (creating the folder). The file appears whole or not at
    all (``harness.output_file``); a write that fails is one RunError line."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write("the results file", target, exc) from None
    with whole_file(target, "the results file", "w") as out:
        out.write(json.dumps(document, indent=2, default=str) + "\n")
    return target
