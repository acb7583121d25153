"""A QuestDB server this machine can run, as the user names it (``native up --questdb-jar``, a matrix's column): a
release by its Maven version (``7.0.1``, its jar fetched once), the pinned QWP server (``qwp``) or a server jar's path
(``harness.servers.jar.server_jar``). Its version (a release's own, else its jar manifest's), the Java its class files
need and the ``java`` here that runs them (``harness.servers.java``: the default one, or one installed beside it),
and the configuration keys it knows (its own ``PropertyKey`` class and the default ``server.conf`` it ships), so a
key it would ignore is refused before it starts.

``python -m harness.servers.server_build SERVER`` prints what the Compose stack's stand-in image of that server is
made of (scripts/docker-offline-images.sh): its jar, the home of the Java that runs it here, and that Java's options,
a line each.
"""

from __future__ import annotations

import functools
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError, UsageError, named
from harness.servers.jar import QWP_SERVER, RELEASE, describe_jar, jar_version, server_jar
from harness.servers.java import default_java_release, java_for, java_home, java_needed, jvm_options

_PROPERTY_KEYS = "io/questdb/PropertyKey.class"
_DEFAULT_CONF = "io/questdb/site/conf/server.conf"
# A configuration key: dotted lower-case words (``cairo.wal.enabled.default``), as the release spells them.
_KEY = re.compile(r"[a-z][a-z0-9]*(?:\.[a-z0-9-]+)+")
# Releases before this one are too old for Java 17: 6.5.5 spends almost two minutes deriving every time zone's
# names (JDK 17's CLDR data) before it listens; 6.2 and 5.0.6 do not start at all.
OLDEST_RUNNABLE = (7, 0, 0)


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class ServerBuild:
    """One QuestDB server: ``name`` as the user gave it (``9.3.4``, ``qwp``, or a jar's path); ``given_as`` says
    where, for a refusal's line (a parameter ``named`` for the door to spell, or an environment variable)."""

    name: str
    given_as: str = field(default=named("questdb_jar"), compare=False)

    @property
    def is_release(self) -> bool:
        return RELEASE.fullmatch(self.name) is not None

    @property
    def label(self) -> str:
        """How a matrix's cell names it: a release's version, ``qwp``, or the jar's file name."""
        return self.name if self.is_release or self.name == QWP_SERVER else Path(self.name).name

    @functools.cached_property
    def jar(self) -> Path:
        """The server jar: a release's fetched through Maven on first use (one Maven does not serve is a
        UsageError), the pinned QWP server's checked, a path's found."""
        return server_jar(self.name, self.given_as)

    @functools.cached_property
    def version(self) -> str:
        """A release's version; a jar's, as its manifest gives it (else its file name's stem)."""
        return self.name if self.is_release else jar_version(self.jar) or self.jar.stem

    def description(self) -> str:
        """``QuestDB 9.3.4``; a jar of the user's, ``QuestDB 9.4.4-SNAPSHOT (questdb-9.4.4-SNAPSHOT-qwp.jar)``."""
        return describe_jar(self.jar)

    def check_runnable(self) -> str:
        """The ``java`` here that runs it. Refuses, as a UsageError, a server no Java here runs (its class files
        need a newer one than any installed), or a release older than ``OLDEST_RUNNABLE``."""
        if self.is_release and version_tuple(self.name) < OLDEST_RUNNABLE:
            oldest = ".".join(map(str, OLDEST_RUNNABLE))
            raise UsageError(f"QuestDB {self.name} is too old for Java {default_java_release()}: releases before "
                             f"{oldest} start slowly on it or not at all; choose {oldest} or later")
        return java_for(java_needed(self.jar), f"QuestDB {self.label}")

    @functools.cached_property
    def known_keys(self) -> frozenset[str]:
        """Every configuration key the server knows: its ``PropertyKey`` constants and the keys its default
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
        """Those of ``keys`` the server does not know, in the order given."""
        return [key for key in keys if key not in self.known_keys]


def main(argv: list[str]) -> int:
    """Print the jar of the server ``argv`` names, the home of the Java that runs it here and that Java's options;
    a refusal is one line on stderr (exit 2 for the user's input, 1 for the project's)."""
    if len(argv) != 1:
        print("usage: python -m harness.servers.server_build SERVER (a release, qwp, or a server jar's path)",
              file=sys.stderr)
        return 2
    build = ServerBuild(argv[0], given_as="server")
    try:
        java = build.check_runnable()
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    print(build.jar)
    print(java_home(java))
    print(" ".join(jvm_options(java)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
