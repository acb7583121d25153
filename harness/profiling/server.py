"""QuestDB's side: its JVM, found by the port it listens on, sampled by async-profiler, whoever started it. The
profiler's library (Maven Central's ``tools.profiler:async-profiler``, its linux-x64 ``libasyncProfiler.so``) is
loaded into the running JVM through the JDK's own attach (``jcmd PID JVMTI.agent_load LIBRARY COMMAND``), which
takes a command each time: ``start`` a phase, ``stop`` it into a collapsed file.

QuestDB's threads are sampled by the CPU time they use, with a timer a thread (``event=ctimer``), falling back to the
process's profiling timer (``itimer``) where that is refused; the mode used is recorded. Not perf events
(``event=cpu``): on the reference VM they slowed QuestDB by about a quarter (2 M cpu-only rows over ILP/HTTP: 0.17 M
rows/s against 0.23 without the profiler), ``ctimer`` and ``itimer`` by 2-3 %; the cost is kernel frames, which
timers do not see. ``--profile-wall`` samples QuestDB's threads by wall clock instead (``event=wall``), idle ones
too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from harness.errors import RunError, UsageError
from harness.telemetry.stacks import Stacks, read_collapsed
from harness.servers.jar import CACHE_DIR, maven_artifact
from harness.versions import async_profiler_version

PROFILER_DIR = CACHE_DIR / "async-profiler"
LIBRARY = "linux-x64/libasyncProfiler.so"
JCMD_TIMEOUT_SECONDS = 60.0


def library(version: str | None = None) -> Path:
    """async-profiler's native library, taken out of its Maven Central jar (fetched once); a UsageError where it
    cannot be had."""
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


def jcmd_binary() -> str | None:
    return shutil.which("jcmd")


class ServerProfiler:
    """async-profiler in the JVM ``pid``: ``start`` and ``stop`` a phase's recording; ``mode`` is what it sampled."""

    def __init__(self, pid: int, wall: bool, rate_hz: int, folder: Path):
        jcmd = jcmd_binary()
        if jcmd is None:
            raise UsageError("--profile: QuestDB is sampled through the JDK's jcmd, which is not on the PATH here "
                             "(install a JDK: openjdk-17-jdk-headless)")
        self.jcmd, self.pid, self.rate_hz, self.folder = jcmd, pid, rate_hz, folder
        self.library = library()
        self.version = async_profiler_version()
        self.log = folder / "async-profiler.log"
        self.mode = "wall" if wall else "ctimer"
        self.interval = f"{max(1, 1000 // rate_hz)}ms"

    def command(self, action: str) -> str:
        """Run one async-profiler command in the JVM; its answer (a UsageError where the JVM refuses it)."""
        # Quoted: jcmd's own parser would take "start,event=cpu" for an option of its own named "start,event".
        try:
            done = subprocess.run([self.jcmd, str(self.pid), "JVMTI.agent_load", str(self.library), f'"{action}"'],
                                  capture_output=True, text=True, timeout=JCMD_TIMEOUT_SECONDS,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"--profile: jcmd could not reach QuestDB's JVM (pid {self.pid}): {exc}") from None
        answer = " ".join((done.stdout + done.stderr).split())
        if done.returncode != 0 or "return code: 0" not in answer:
            # A Java exception's first line, not its stack; async-profiler's own error is in its log.
            said = re.split(r" at [\w.$/]+\(", answer)[0].removeprefix(f"{self.pid}:").strip()
            raise UsageError(f"--profile: QuestDB's JVM (pid {self.pid}) refused async-profiler, loaded through "
                             f"jcmd: {said[:300] or f'jcmd exit {done.returncode}'}{self._logged()}")
        return answer

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
        try:
            self.command(f"stop,file={output},collapsed,log={self.log}")
        except UsageError as exc:
            return None, str(exc).removeprefix("--profile: ")
        if not output.exists():
            return None, f"async-profiler wrote no {output.name}{self._logged()}"
        return read_collapsed(output), None

    def _logged(self) -> str:
        try:
            lines = [line.strip() for line in self.log.read_text().splitlines() if line.strip()]
        except OSError:
            return ""
        return f" ({lines[-1]})" if lines else ""
