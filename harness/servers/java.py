"""The Java that runs a QuestDB server jar: the feature release its class files need (``java_needed``), the ``java``
of this machine that is at least that release (``java_for``: the one on the PATH, or where it is older,
``JAVA_HOME``'s or a JDK in the system's JVM folder, where machines keep a second Java beside the default), the
default one's release (``default_java_release``), a ``java``'s home folder (``java_home``), and the options QuestDB's
own start script passes that Java (``jvm_options``): a build for Java 25 (QuestDB's QWP line) does not start without
them.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from harness.errors import UsageError

# A class file's major version is the Java feature release it needs, minus 44 (61: Java 17, 69: Java 25).
_CLASS_VERSION_OFFSET = 44
SERVER_MAIN = "io/questdb/ServerMain.class"
# Where Debian and the Temurin packages install JDKs beside the default one.
JVM_FOLDERS = (Path("/usr/lib/jvm"),)
# Every server: a modest heap (QuestDB keeps table data, WAL and ILP buffers off-heap, and the rest of a small host
# is the client's), and the parallel GC its own launcher uses.
BASE_OPTIONS = ("-Xms256m", "-Xmx2g", "-XX:+UseParallelGC")
# What QuestDB's start script adds from Java 25 on (its QWP line): memory access through sun.misc.Unsafe, native
# access and the module openings its code needs; without the last it does not start.
JAVA_25_OPTIONS = ("--sun-misc-unsafe-memory-access=allow", "--enable-native-access=io.questdb",
                   "--add-opens=java.base/java.lang=io.questdb", "--add-opens=java.base/java.lang.reflect=io.questdb",
                   "--add-opens=java.base/java.nio=io.questdb", "--add-opens=java.base/java.time.zone=io.questdb",
                   "--add-exports=java.base/jdk.internal.vm=io.questdb")


def java_needed(jar: Path) -> int:
    """The Java feature release ``jar``'s server classes need."""
    try:
        with zipfile.ZipFile(jar) as archive:
            header = archive.read(SERVER_MAIN)[:8]
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{jar}: not a QuestDB server jar ({exc})") from None
    return int.from_bytes(header[6:8], "big") - _CLASS_VERSION_OFFSET


@functools.cache
def java_release(java: str) -> int | None:
    """The feature release of the ``java`` at that path (17 for OpenJDK 17); None where it does not answer."""
    try:
        result = subprocess.run([java, "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"java\.specification\.version = (\d+)(?:\.(\d+))?", result.stderr)
    if found is None:
        return None
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return minor if major == 1 else major  # Java 8 calls itself 1.8


def installed_javas() -> list[str]:
    """The ``java`` binaries of this machine, the PATH's first, then ``JAVA_HOME``'s, then the JVM folder's; none
    where the PATH has none (Java is not installed)."""
    found = [shutil.which("java")]
    if found[0] is None:
        return []
    if os.environ.get("JAVA_HOME"):
        found.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    for folder in JVM_FOLDERS:
        if folder.is_dir():
            found += [str(path) for path in sorted(folder.glob("*/bin/java"))]
    return [java for java in dict.fromkeys(found) if java and os.access(java, os.X_OK)]


def default_java_release() -> int:
    """The feature release of the ``java`` on the PATH, this machine's default."""
    javas = installed_javas()
    if not javas:
        raise UsageError("java is not installed: QuestDB needs a Java runtime (apt-get install "
                         "openjdk-17-jre-headless)")
    release = java_release(javas[0])
    if release is None:
        raise UsageError(f"cannot tell which Java {javas[0]} is ({javas[0]} -XshowSettings:properties -version)")
    return release


def java_home(java: str) -> Path:
    """The home folder of the runtime ``java`` belongs to (``bin/java``'s grandparent, links followed)."""
    return Path(java).resolve().parents[1]


def java_for(needed: int, what: str) -> str:
    """The first ``java`` of this machine that runs class files of Java ``needed`` (``what`` needs them, for the
    refusal's line)."""
    releases = {java: java_release(java) for java in installed_javas()}
    for java, release in releases.items():
        if release is not None and release >= needed:
            return java
    seen = ", ".join(f"Java {release} ({java})" for java, release in releases.items() if release) or "none"
    raise UsageError(f"{what} needs Java {needed}; this machine has {seen}: install a Java {needed} (or set "
                     f"JAVA_HOME to one)")


def jvm_options(java: str) -> tuple[str, ...]:
    """The options a server started with ``java`` gets, as QuestDB's own start script gives them."""
    release = java_release(java) or 0
    return BASE_OPTIONS + (JAVA_25_OPTIONS if release >= 25 else ())
