"""Run records: phase figures, the machine and software a run used, results JSON files, comparisons.

Like ClickBench's result files, every run leaves one JSON document that names the machine, the date,
the versions and all parameters, so figures can be compared and re-run years later.
"""

from __future__ import annotations

import json
import os
import platform
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from harness.errors import UsageError

MIB = 1024 * 1024


@dataclass(frozen=True)
class PhaseResult:
    """One timed phase: rows and bytes (of ILP) handled in seconds of wall-clock time."""

    rows: int
    bytes: int
    seconds: float

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    @property
    def mib_per_second(self) -> float:
        return self.bytes / MIB / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return {
            "rows": self.rows,
            "bytes": self.bytes,
            "seconds": self.seconds,
            "rows_per_second": self.rows_per_second,
            "mib_per_second": self.mib_per_second,
        }


def format_phase(title: str, phase: PhaseResult) -> str:
    """The original py-tsbs-benchmark's two-line report of a phase."""
    return (
        f"{title}:\n"
        f"  {phase.rows} rows in {phase.seconds:.2f}s: {phase.rows_per_second / 1e6:.2f} mil rows/sec.\n"
        f"  ILP Buffer size: {phase.bytes / MIB:.2f} MiB: {phase.mib_per_second:.2f} MiB/sec."
    )


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_total_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def system_info() -> dict:
    """The machine and software of this process, as a results file records them."""
    return {
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "os": platform.system(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        # The cores this process may run on (taskset, cgroup cpusets): what the figures really had.
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
        "memory_total_bytes": _memory_total_bytes(),
        "in_container": os.path.exists("/.dockerenv"),
        "versions": {
            "python": platform.python_version(),
            "pandas": _version("pandas"),
            "pyarrow": _version("pyarrow"),
            "numpy": _version("numpy"),
            "numba": _version("numba"),
            "questdb_client": _version("questdb"),
        },
    }


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


def write_results(record: dict, path: str | Path | None = None, mode: str = "bench",
                  results_dir: str | Path = "results") -> Path:
    """Write one run record as indented JSON; returns where it went (creating the folder)."""
    target = Path(path) if path else default_results_path(mode, results_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=2, default=str) + "\n")
    return target


def load_results(paths: list[str | Path]) -> list[dict]:
    """Read results files (each record gets its path under ``_path``); UsageError names a bad file."""
    records = []
    for path in paths:
        try:
            record = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read results file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not isinstance(record, dict) or not isinstance(record.get("phases"), dict):
            raise UsageError(f"{path} is not a harness results file (no phases)")
        record["_path"] = str(path)
        records.append(record)
    return records


def _rate(phase: dict | None) -> float | None:
    return phase.get("rows_per_second") if phase else None


def _ratio(value: float | None, baseline: float | None) -> str | None:
    return f"{value / baseline:.2f}x" if value and baseline else None


def comparison_table(records: list[dict]) -> str:
    """A plain-text table, one row per results file: what ran (date, mode, target, op, fields, transport,
    protocol, workers, the CPUs the process could use, rows) and its figures (serialize and send rates in
    million rows/s, the client's busy cores while sending, MiB/s of the send phase or else the serialize
    phase, time-to-visible). The last column gives the serialize and send rates as ratios to the first
    file's."""
    header = ("file", "date", "mode", "target", "op", "fields", "transport", "proto", "workers", "cpus", "rows",
              "serialize Mrows/s", "send Mrows/s", "send cores", "MiB/s", "visible s", "status", "vs first")
    table = []
    first_serialize = first_send = None
    for index, record in enumerate(records):
        parameters = record.get("parameters") or {}
        phases = record.get("phases") or {}
        serialize, send = phases.get("serialize"), phases.get("send")
        main = send or serialize
        if index == 0:
            first_serialize, first_send = _rate(serialize), _rate(send)
        ratios = [f"{name} {ratio}" for name, ratio in (("ser", _ratio(_rate(serialize), first_serialize)),
                                                         ("send", _ratio(_rate(send), first_send))) if ratio]
        visible = record.get("time_to_visible_seconds")
        table.append((
            Path(record["_path"]).name if "_path" in record else "-",
            str(record.get("started_at") or "-")[:19],
            str(record.get("mode") or "-"),
            str(parameters.get("target") or "-"),
            str(parameters.get("op") or "-"),
            str(parameters.get("fields") or "-"),
            str(parameters.get("transport") or "-"),
            str(parameters.get("protocol_version") or "-"),
            str(parameters.get("workers") or 1),
            str(len((record.get("system") or {}).get("cpu_affinity") or []) or "-"),
            str(main["rows"]) if main else "-",
            f"{serialize['rows_per_second'] / 1e6:.2f}" if serialize else "-",
            f"{send['rows_per_second'] / 1e6:.2f}" if send else "-",
            f"{send['client_cpu_cores']:.2f}" if send and "client_cpu_cores" in send else "-",
            f"{main['mib_per_second']:.1f}" if main else "-",
            f"{visible:.2f}" if visible is not None else "-",
            str(record.get("status") or "-"),
            " ".join(ratios) or "-",
        ))
    widths = [max(len(cell) for cell in column) for column in zip(header, *table)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in (header, *table)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
