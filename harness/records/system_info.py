"""The machine and software a run ran on, as its record (and a benchmark record) keeps them: host, kernel,
CPU model and the CPUs the process could use, memory, and the versions of the libraries that shape the
figures."""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import sys
from datetime import datetime, timezone

import psutil

# The packages whose versions a record keeps, by its key.
PACKAGES = {"pandas": "pandas", "pyarrow": "pyarrow", "numpy": "numpy", "numba": "numba", "questdb_client": "questdb"}


def _normalized(project: str) -> str:
    return re.sub(r"[-_.]+", "_", project).lower()


def _versions(packages: dict[str, str]) -> dict[str, str | None]:
    """Installed versions, by key: read from the names of the wheels' ``{name}-{version}.dist-info`` directories
    on ``sys.path``, and from ``importlib.metadata`` for a package not found that way (installed otherwise).
    Importing ``importlib.metadata`` costs every command 10-25 ms of start-up before its first row."""
    wanted = {_normalized(package): key for key, package in packages.items()}
    found: dict[str, str | None] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            project, _, version = name.removesuffix(".dist-info").partition("-")
            key = wanted.get(_normalized(project))
            if key and key not in found:
                found[key] = version
    missing = [key for key in packages if key not in found]
    if missing:
        from importlib import metadata
        for key in missing:
            try:
                found[key] = metadata.version(packages[key])
            except metadata.PackageNotFoundError:
                found[key] = None
    return {key: found[key] for key in packages}


def _cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo or (where that has none, as on ARM) lscpu (util-linux) reports
    it, else what the platform module knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    import subprocess  # here: only where /proc/cpuinfo names no model does a run pay for the import

    try:
        answer = subprocess.run(["lscpu", "--json"], capture_output=True, text=True, timeout=5, check=True)
        for entry in json.loads(answer.stdout)["lscpu"]:
            if entry.get("field") == "Model name:":
                return entry["data"]
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        pass
    return platform.processor() or platform.machine()


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
        "memory_total_bytes": psutil.virtual_memory().total,
        "in_container": os.path.exists("/.dockerenv"),
        "versions": {"python": platform.python_version(), **_versions(PACKAGES)},
    }
