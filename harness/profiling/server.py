"""QuestDB's side: its JVM (found by the address it serves, here or in a container sharing this one's processes)
sampled by async-profiler, whoever started it. The profiler's library (Maven Central's
``tools.profiler:async-profiler``, its linux-x64 ``libasyncProfiler.so``) is loaded into the running JVM through
HotSpot's attach (``harness.profiling.jvm_attach``), which takes a command each time: ``start`` a phase, ``stop`` it
into a collapsed file.

QuestDB's threads are sampled by the CPU time they use, with a timer a thread (``event=ctimer``), falling back to the
process's profiling timer (``itimer``) where that is refused; the mode used is recorded. Not perf events
(``event=cpu``): on the reference VM they slowed QuestDB by about a quarter (2 M cpu-only rows over ILP/HTTP: 0.17 M
rows/s against 0.23 without the profiler), ``ctimer`` and ``itimer`` by 2-3 %; the cost is kernel frames, which
timers do not see. ``--profile-wall`` samples QuestDB's threads by wall clock instead (``event=wall``), idle ones
too.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

from harness.errors import RunError, UsageError
from harness.profiling.jvm_attach import AttachError, Jvm
from harness.telemetry.stacks import Stacks, read_collapsed
from harness.servers.jar import CACHE_DIR, maven_artifact
from harness.versions import async_profiler_version

PROFILER_DIR = CACHE_DIR / "async-profiler"
LIBRARY = "linux-x64/libasyncProfiler.so"
LIBRARY_VARIABLE = "HARNESS_ASYNC_PROFILER_LIBRARY"


def library(version: str | None = None) -> Path:
    """async-profiler's native library, taken out of its Maven Central jar (fetched once), or the one
    ``HARNESS_ASYNC_PROFILER_LIBRARY`` names (the client container's, mounted from the host's cache); a UsageError
    where it cannot be had."""
    given = os.environ.get(LIBRARY_VARIABLE)
    if given:
        if not Path(given).is_file():
            raise UsageError(f"--profile: async-profiler's library {given} ({LIBRARY_VARIABLE}) is not a file here")
        return Path(given)
    version = version or async_profiler_version()
    path = PROFILER_DIR / version / "libasyncProfiler.so"
    if path.exists():
        return path
    try:
        jar = maven_artifact("tools.profiler", "async-profiler", version, PROFILER_DIR / version)
        with zipfile.ZipFile(jar) as archive:
            data = archive.read(LIBRARY)
    except (RunError, OSError, KeyError, zipfile.BadZipFile) as exc:
        raise UsageError(f"--profile: async-profiler's library ({LIBRARY} of tools.profiler:async-profiler:{version}) "
                         f"cannot be had: {exc}") from None
    partial = path.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(path)
    return path


class ServerProfiler:
    """async-profiler in the JVM ``pid``: ``start`` and ``stop`` a phase's recording; ``mode`` is what it sampled.
    Where the JVM sees other files than this process (another container) or runs as another user, the library is put
    in its ``/tmp``, in a folder of its user's, and its files are written there, then moved beside the record."""

    def __init__(self, pid: int, wall: bool, rate_hz: int, folder: Path):
        self.library = library()
        self.version = async_profiler_version()
        try:
            self.jvm = Jvm(pid)
        except AttachError as exc:
            raise UsageError(f"--profile: {exc}") from None
        self.pid, self.rate_hz, self.folder = pid, rate_hz, folder
        # A JVM that sees other files than this process (another container), or of another user (which cannot read
        # this user's files or write beside the record): a folder of the JVM's user in its /tmp holds the library
        # and the files it writes.
        mine = self.jvm.same_files and self.jvm.uid == os.geteuid()
        self._theirs = None if mine else f"/tmp/harness-async-profiler-{self.jvm.uid}"
        self.log = self._inside(folder / "async-profiler.log")
        self.mode = "wall" if wall else "ctimer"
        self.interval = f"{max(1, 1000 // rate_hz)}ms"
        self._loaded: str | None = None

    def _inside(self, path: Path) -> str:
        """``path`` as the JVM names it: itself where the JVM sees this process's files, else one in its /tmp."""
        return str(path) if self._theirs is None else f"{self._theirs}/{os.getpid()}-{path.name}"

    def _library_inside(self) -> str:
        """The library where the JVM sees it (put in the JVM's folder the first time)."""
        if self._loaded is None:
            self._loaded = str(self.library) if self._theirs is None else self._put_library()
        return self._loaded

    def _put_library(self) -> str:
        """The library in the JVM's folder, under a name it keeps: the JVM loads a library once by its path, and a
        second copy would be a second profiler."""
        folder, loaded = self.jvm.path(self._theirs), f"{self._theirs}/libasyncProfiler-{self.version}.so"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            if os.geteuid() == 0 and folder.stat().st_uid == 0 != self.jvm.uid:
                os.chown(folder, self.jvm.uid, self.jvm.gid)  # root made it: the JVM writes its files there
            if folder.stat().st_uid != self.jvm.uid:
                raise OSError(f"{self._theirs} is not the JVM's user's")
            target = self.jvm.path(loaded)
            if not target.exists() or target.stat().st_size != self.library.stat().st_size:
                partial = target.with_suffix(".partial")
                shutil.copyfile(self.library, partial)
                partial.chmod(0o644)
                partial.replace(target)  # a new file: one the JVM has mapped is never written over
        except OSError as exc:
            raise UsageError(f"--profile: async-profiler's library cannot be put where QuestDB's JVM (pid "
                             f"{self.pid}) sees it: {exc}") from None
        return loaded

    def command(self, action: str) -> str:
        """Run one async-profiler command in the JVM; its answer (a UsageError where the JVM refuses it)."""
        try:
            return self.jvm.load(self._library_inside(), action)
        except AttachError as exc:
            raise UsageError(f"--profile: async-profiler in QuestDB's JVM (pid {self.pid}): {exc}"
                             f"{self._logged()}") from None

    def start(self) -> None:
        """Start a recording: by each thread's CPU timer, or the process's where that is refused."""
        try:
            self.command(f"start,event={self.mode},interval={self.interval},threads,log={self.log}")
        except UsageError:
            if self.mode != "ctimer":
                raise
            self.command(f"start,event=itimer,interval={self.interval},threads,log={self.log}")
            self.mode = "itimer"

    def stop(self, output: Path) -> tuple[Stacks | None, str | None]:
        """Stop the recording into ``output`` (collapsed); its stacks and None, or None and why there are none."""
        written = self._inside(output)
        try:
            self.command(f"stop,file={written},collapsed,log={self.log}")
        except UsageError as exc:
            return None, str(exc).removeprefix("--profile: ")
        reached = self.jvm.path(written)
        if not reached.exists():
            return None, f"async-profiler wrote no {output.name}{self._logged()}"
        if reached != output:
            shutil.move(reached, output)
        return read_collapsed(output), None

    def keep_log(self) -> None:
        """From a JVM's own folder, its log brought beside the record (the library stays, loaded, as agents do)."""
        if self._theirs is not None and self.jvm.path(self.log).exists():
            shutil.move(self.jvm.path(self.log), self.folder / "async-profiler.log")

    def _logged(self) -> str:
        try:
            lines = [line.strip() for line in self.jvm.path(self.log).read_text().splitlines() if line.strip()]
        except OSError:
            return ""
        return f" ({lines[-1]})" if lines else ""


if __name__ == "__main__":
    # `python -m harness.profiling.server`: fetch the library (make's PROFILE=1 does, for the client container).
    try:
        print(library())
    except UsageError as exc:
        raise SystemExit(f"{exc}".removeprefix("--profile: ")) from None
