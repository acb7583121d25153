"""The QuestDB server jar of a release, fetched from Maven Central through Maven once into ``.cache/questdb/``:
the whole server, run on this machine's Java; and any other artifact the harness takes from Maven Central the same
way (``maven_artifact``: async-profiler's)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from harness.errors import RunError
from harness.versions import questdb_version

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = PROJECT_ROOT / ".cache"
JAR_DIR = CACHE_DIR / "questdb"
NATIVE_DIR = CACHE_DIR / "native"


def jar_path(version: str | None = None) -> Path:
    """The server jar, fetched from Maven Central through Maven on first use."""
    return maven_artifact("org.questdb", "questdb", version or questdb_version(), JAR_DIR)


def maven_artifact(group: str, artifact: str, version: str, folder: Path) -> Path:
    """``folder/artifact-version.jar``, fetched from Maven Central through Maven on first use."""
    jar = folder / f"{artifact}-{version}.jar"
    if jar.exists():
        return jar
    coordinates = f"{group}:{artifact}:{version}"
    if shutil.which("mvn") is None:
        raise RunError(f"{coordinates} ({jar}) is missing and Maven (mvn) is not installed to fetch it")
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        # -B: batch mode, no colours or progress in the output we may quote.
        ["mvn", "-B", "-q", "dependency:copy", f"-Dartifact={coordinates}", f"-DoutputDirectory={folder}"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0 or not jar.exists():
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        errors = [line for line in lines if "ERROR" in line] or lines or ["no output"]
        reason = re.sub(r"\x1b\[[0-9;]*m", "", errors[0]).replace("[ERROR] ", "").strip()
        raise RunError(f"could not fetch {coordinates} with Maven: {reason[:300]}")
    return jar
