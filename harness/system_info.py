"""The machine and software a run ran on, as its record (and a benchmark record) keeps them: host, kernel,
CPU model and the CPUs the process could use, memory, and the versions of the libraries that shape the
figures."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
from datetime import datetime, timezone
from importlib import metadata

import psutil


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    """The CPU's model name as lscpu reports it (util-linux), else what the platform module knows."""
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
        "versions": {
            "python": platform.python_version(),
            "pandas": _version("pandas"),
            "pyarrow": _version("pyarrow"),
            "numpy": _version("numpy"),
            "numba": _version("numba"),
            "questdb_client": _version("questdb"),
        },
    }
