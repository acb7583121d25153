"""The QuestDB server jar of a release, fetched from Maven Central through Maven once into ``.cache/questdb/``:
the whole server, run on this machine's Java; the pinned QWP server's (``qwp_jar``: a release where Maven serves
one, else a jar beside the checkout, checked against its pinned sha256); a server jar as the user names it
(``server_jar``: a path, a release, or ``qwp``; ``server_named``: the flag's value, else ``$HARNESS_QUESTDB_JAR``), its
version (``jar_version``: its manifest's) and how a line names it (``describe_jar``); and any other artifact the
harness takes from Maven Central the same way (``maven_artifact``: async-profiler's)."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from harness.errors import RunError, UsageError
from harness.versions import qwp_server, questdb_version

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = PROJECT_ROOT / ".cache"
JAR_DIR = CACHE_DIR / "questdb"
NATIVE_DIR = CACHE_DIR / "native"


def jar_path(version: str | None = None) -> Path:
    """The server jar, fetched from Maven Central through Maven on first use."""
    return maven_artifact("org.questdb", "questdb", version or questdb_version(), JAR_DIR)


# What names the pinned QWP server where a server jar is asked for (``--questdb-jar qwp``, a matrix's column).
QWP_SERVER = "qwp"
# The server jar the native commands run where no flag names one (a path, a release, or qwp).
QUESTDB_JAR_ENV = "HARNESS_QUESTDB_JAR"
RELEASE = re.compile(r"\d+(?:\.\d+){0,3}")
_MANIFEST = "META-INF/MANIFEST.MF"


def qwp_jar() -> Path:
    """The pinned QWP server's jar (``.env``'s ``QUESTDB_QWP``)."""
    return qwp_jar_of(*qwp_server())


def qwp_jar_of(pin: str, sha256: str | None) -> Path:
    """The QWP server's jar as ``.env`` pins it: fetched through Maven where ``pin`` is a release, else the jar at
    that path from the project root, its ``sha256`` (where given) checked once. A missing or changed jar is the
    project's, not the user's: a RunError."""
    if RELEASE.fullmatch(pin):
        return jar_path(pin)
    jar = (PROJECT_ROOT / pin).resolve()
    if not jar.is_file():
        raise RunError(f"the QWP server's jar {jar} is missing (.env's QUESTDB_QWP): QWP needs QuestDB 10.0+, or a "
                       f"build of its QWP line there")
    if sha256 is not None:
        _check_sha256(jar, sha256)
    return jar


@functools.cache
def _check_sha256(jar: Path, sha256: str) -> None:
    digest = hashlib.sha256()
    with open(jar, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != sha256:
        raise RunError(f"{jar}: its sha256 is {digest.hexdigest()}, not the pinned {sha256} (.env's "
                       f"QUESTDB_QWP_SHA256)")


def server_named(flag: str | None) -> str | None:
    """The server the user names for the native commands: the flag's value, else ``$HARNESS_QUESTDB_JAR``, else None
    (the pinned release)."""
    return flag or os.environ.get(QUESTDB_JAR_ENV) or None


def server_jar(name: str, given_as: str) -> Path:
    """The server jar the user names (``given_as``: where, for the refusal's line): ``qwp`` (the pinned QWP server),
    a release's version (fetched through Maven; one it does not serve is a UsageError), or a jar's path."""
    if name == QWP_SERVER:
        return qwp_jar()
    if RELEASE.fullmatch(name):
        try:
            return jar_path(name)
        except RunError as exc:
            raise UsageError(f"QuestDB {name}: {exc}") from None
    jar = Path(name).expanduser()
    if not jar.is_file():
        raise UsageError(f"{given_as} {name}: no such file; name a server jar's path, a release (numbers and dots, "
                         f"e.g. 9.3.4) or {QWP_SERVER} (the pinned QWP server)")
    return jar.resolve()


def jar_version(jar: Path) -> str | None:
    """The version a server jar's manifest gives (``Implementation-Version``: 9.4.4-SNAPSHOT); None without one."""
    try:
        with zipfile.ZipFile(jar) as archive:
            manifest = archive.read(_MANIFEST).decode(errors="replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    found = re.search(r"^Implementation-Version:\s*(\S+)", manifest, re.MULTILINE)
    return found.group(1) if found else None


def describe_jar(jar: Path) -> str:
    """How a line names the server of ``jar``: ``QuestDB 9.3.4`` for a release's jar as Maven fetched it, else its
    version and the jar's name (``QuestDB 9.4.4-SNAPSHOT (questdb-9.4.4-SNAPSHOT-qwp.jar)``)."""
    version = jar_version(jar)
    if version is not None and jar.resolve().parent == JAR_DIR.resolve() and jar.name == f"questdb-{version}.jar":
        return f"QuestDB {version}"
    return f"QuestDB {version or 'of unknown version'} ({jar.name})"


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
