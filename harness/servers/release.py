"""A QuestDB release as a server this machine can run: its jar (``harness.servers.jar``, fetched once), the Java
its class files need against the ``java`` here, and the configuration keys it knows (its own ``PropertyKey``
class and the default ``server.conf`` it ships), so a key it would ignore is refused before it starts.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunError, UsageError
from harness.servers.jar import jar_path

# A class file's major version is the Java feature release it needs, minus 44 (55: Java 11, 61: Java 17).
_CLASS_VERSION_OFFSET = 44
_SERVER_MAIN = "io/questdb/ServerMain.class"
_PROPERTY_KEYS = "io/questdb/PropertyKey.class"
_DEFAULT_CONF = "io/questdb/site/conf/server.conf"
# A configuration key: dotted lower-case words (``cairo.wal.enabled.default``), as the release spells them.
_KEY = re.compile(r"[a-z][a-z0-9]*(?:\.[a-z0-9-]+)+")
# Releases before this one are too old for Java 17: 6.5.5 spends almost two minutes deriving every time zone's
# names (JDK 17's CLDR data) before it listens; 6.2 and 5.0.6 do not start at all.
OLDEST_RUNNABLE = (7, 0, 0)
_VERSION = re.compile(r"\d+(?:\.\d+){0,3}")


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@functools.cache
def java_here() -> int:
    """The Java feature release of this machine's ``java`` (17 for OpenJDK 17)."""
    if shutil.which("java") is None:
        raise UsageError("java is not installed: QuestDB needs a Java runtime (apt-get install "
                         "openjdk-17-jre-headless)")
    result = subprocess.run(["java", "-XshowSettings:properties", "-version"], capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, check=False)
    found = re.search(r"java\.specification\.version = (\d+)(?:\.(\d+))?", result.stderr)
    if found is None:
        raise UsageError("cannot tell which Java `java` is (java -XshowSettings:properties -version)")
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return minor if major == 1 else major  # Java 8 calls itself 1.8


@dataclass(frozen=True)
class Release:
    """One QuestDB release, by its Maven version (``7.0.1``)."""

    version: str

    def __post_init__(self) -> None:
        if not _VERSION.fullmatch(self.version):
            raise UsageError(f"QuestDB release {self.version!r}: a version is numbers and dots, e.g. 9.3.4")

    @functools.cached_property
    def jar(self) -> Path:
        """The server jar, fetched through Maven on first use; a release Maven does not serve is a UsageError."""
        try:
            return jar_path(self.version)
        except RunError as exc:
            raise UsageError(f"QuestDB {self.version}: {exc}") from None

    def java_needed(self) -> int:
        """The Java feature release its class files need."""
        with zipfile.ZipFile(self.jar) as jar:
            header = jar.read(_SERVER_MAIN)[:8]
        return int.from_bytes(header[6:8], "big") - _CLASS_VERSION_OFFSET

    def check_runnable(self) -> None:
        """Refuse, as a UsageError, a release the Java here cannot run: one that needs a newer Java, or one older
        than ``OLDEST_RUNNABLE``."""
        if version_tuple(self.version) < OLDEST_RUNNABLE:
            oldest = ".".join(map(str, OLDEST_RUNNABLE))
            raise UsageError(f"QuestDB {self.version} is too old for Java {java_here()}: releases before {oldest} "
                             f"start slowly on it or not at all; choose {oldest} or later")
        needed = self.java_needed()
        if needed > java_here():
            raise UsageError(f"QuestDB {self.version} needs Java {needed}; the java here is Java {java_here()} "
                             f"(set JAVA_HOME and PATH to a Java {needed})")

    @functools.cached_property
    def known_keys(self) -> frozenset[str]:
        """Every configuration key the release knows: its ``PropertyKey`` constants and the keys its default
        ``server.conf`` lists (commented out or set)."""
        with zipfile.ZipFile(self.jar) as jar:
            names = set(jar.namelist())
            keys = set()
            if _PROPERTY_KEYS in names:
                keys.update(match.decode() for match in re.findall(rb"[a-z][a-z0-9]*(?:\.[a-z0-9-]+)+",
                                                                   jar.read(_PROPERTY_KEYS)))
            if _DEFAULT_CONF in names:
                for line in jar.read(_DEFAULT_CONF).decode(errors="replace").splitlines():
                    found = re.match(rf"\s*#?\s*({_KEY.pattern})\s*=", line)
                    if found:
                        keys.add(found.group(1))
        return frozenset(keys)

    def unknown_keys(self, keys) -> list[str]:
        """Those of ``keys`` the release does not know, in the order given."""
        return [key for key in keys if key not in self.known_keys]
