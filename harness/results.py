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

MIB = 1024 * 1024


@dataclass(frozen=True)
class PhaseResult:
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
        "hostname": socket.gethostname(),
        "os": platform.system(),
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
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


def default_results_path(mode: str, results_dir: str = "results") -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    return Path(results_dir) / f"{stamp}-{mode}.json"


def write_results(record: dict, path: str | None = None, mode: str = "bench", results_dir: str = "results") -> Path:
    target = Path(path) if path else default_results_path(mode, results_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    return target


def load_results(paths: list[str]) -> list[dict]:
    from harness.errors import UsageError

    records = []
    for path in paths:
        try:
            record = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read results file {path}: {exc}") from None
        if not isinstance(record, dict) or "phases" not in record:
            raise UsageError(f"{path} is not a harness results file")
        record["_path"] = path
        records.append(record)
    return records


def _main_phase(record: dict) -> tuple[str, dict] | tuple[None, None]:
    for name in ("send", "serialize"):
        if name in record.get("phases", {}):
            return name, record["phases"][name]
    return None, None


def comparison_table(records: list[dict]) -> str:
    """One row per results file: what ran and its figures; the last column is the ratio of the main
    phase's rows/s to the first file's."""
    header = ("file", "date", "mode", "transport", "proto", "workers", "rows", "serialize Mr/s", "send Mr/s",
              "MiB/s", "visible s", "status", "vs first")
    rows = []
    baseline = None
    for record in records:
        parameters = record.get("parameters", {})
        phase_name, main = _main_phase(record)
        rate = main["rows_per_second"] if main else None
        if baseline is None and rate:
            baseline = rate
        serialize = record["phases"].get("serialize")
        send = record["phases"].get("send")
        visible = record.get("time_to_visible_seconds")
        rows.append((
            Path(record["_path"]).name if "_path" in record else "-",
            record.get("started_at", "-")[:19],
            record.get("mode", "-"),
            str(parameters.get("transport", "-")),
            str(parameters.get("protocol_version", "-")),
            str(parameters.get("workers") or 1),
            str(main["rows"]) if main else "-",
            f"{serialize['rows_per_second'] / 1e6:.2f}" if serialize else "-",
            f"{send['rows_per_second'] / 1e6:.2f}" if send else "-",
            f"{main['mib_per_second']:.1f}" if main else "-",
            f"{visible:.2f}" if visible is not None else "-",
            record.get("status", "-"),
            f"{rate / baseline:.2f}x" if rate and baseline else "-",
        ))
    widths = [max(len(str(item)) for item in column) for column in zip(header, *rows)]
    lines = ["  ".join(str(item).ljust(width) for item, width in zip(line, widths)) for line in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
