"""Real servers started natively, for the tests and for hosts without Docker: QuestDB and the socat sink.

QuestDB is the release jar from Maven Central (fetched once into ``.cache/questdb/``) run on this
machine's Java with the project's ``conf/server.conf``; ports come from ``QDB_*`` environment variables,
so the same configuration serves the default ports and the tests' own. The no-op sink is socat
accepting ILP and writing it to /dev/null, as in the TSBS loader-optimisation story.

    python -m harness native up [--questdb-only] [--root DIR] [--http-port N ...] | down | status | fetch

Every server runs in its own session (process group), so stopping it also stops what it forked
(socat forks one child per connection) and a Ctrl-C in the shell that started it does not reach it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harness.errors import RunError
from harness.versions import questdb_version

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = PROJECT_ROOT / ".cache"
JAR_DIR = CACHE_DIR / "questdb"
NATIVE_DIR = CACHE_DIR / "native"
DEFAULT_ROOT = NATIVE_DIR / "questdb-root"
SERVER_CONF = PROJECT_ROOT / "conf" / "server.conf"

DEFAULT_HTTP_PORT = 9000
DEFAULT_ILP_PORT = 9009
DEFAULT_PG_PORT = 8812
DEFAULT_MIN_PORT = 9003
DEFAULT_SINK_PORT = 9010
# Loopback only, like the Docker stack's published ports: QuestDB's HTTP /exec and PGWire run any SQL
# (DROP TABLE included) without authentication, and ILP writes anything; 0.0.0.0 offers them to the network.
DEFAULT_BIND_HOST = "127.0.0.1"

START_TIMEOUT_SECONDS = 90.0
STOP_TIMEOUT_SECONDS = 30.0
# QuestDB keeps table data, WAL and ILP buffers off-heap (mmap, malloc), so a modest heap suffices and
# leaves the rest of a small host to the client's DataFrames. Parallel GC, as QuestDB's own launcher uses.
JVM_OPTIONS = ("-Xms256m", "-Xmx2g", "-XX:+UseParallelGC")
LOG_TAIL_LINES = 5
_STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")
_ERROR_LINE = re.compile(r"Exception|Error|^\S+Z [EC] ")


def jar_path(version: str | None = None) -> Path:
    """The server jar, fetched from Maven Central through Maven on first use."""
    version = version or questdb_version()
    jar = JAR_DIR / f"questdb-{version}.jar"
    if jar.exists():
        return jar
    if shutil.which("mvn") is None:
        raise RunError(f"QuestDB jar {jar} is missing and Maven (mvn) is not installed to fetch it")
    JAR_DIR.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        # -B: batch mode, no colours or progress in the output we may quote.
        ["mvn", "-B", "-q", "dependency:copy", f"-Dartifact=org.questdb:questdb:{version}",
         f"-DoutputDirectory={JAR_DIR}"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL,
    )
    if result.returncode != 0 or not jar.exists():
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        errors = [line for line in lines if "ERROR" in line] or lines or ["no output"]
        reason = re.sub(r"\x1b\[[0-9;]*m", "", errors[0]).replace("[ERROR] ", "").strip()
        raise RunError(f"could not fetch org.questdb:questdb:{version} with Maven: {reason[:300]}")
    return jar


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on host:port."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs; a killed child that nobody reaped yet (a zombie) does not."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _live_pid(pid_file: Path, command_marker: str) -> int | None:
    """The pid recorded in ``pid_file`` if that process still runs and is ours: its command line
    contains ``command_marker`` (a stale pid file must never make us signal a stranger that reused the pid)."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    if not _pid_alive(pid):
        return None
    try:
        command = " ".join(psutil.Process(pid).cmdline()) + " "
    except psutil.Error:
        return None
    return pid if command_marker in command else None


def _signal_group(pid: int, signum: int) -> None:
    """Signal the server's whole process group (it leads its own session), or the pid alone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _stop(process: subprocess.Popen | None, pid: int | None, timeout: float) -> None:
    """SIGTERM, then SIGKILL after ``timeout``. A child of this process is reaped through its Popen
    (a zombie would look alive to a pid check); a server started by an earlier command, by its pid."""
    if process is not None and process.poll() is None:
        pid = process.pid
    if pid is None or not _pid_alive(pid):
        if process is not None:
            process.poll()
        return
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            break
        if process is None and not _pid_alive(pid):
            break
        time.sleep(0.1)
    else:
        _signal_group(pid, signal.SIGKILL)
    try:
        # Forked children (socat's per-connection copies) outlive their parent; they die with the group.
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if process is not None:
        process.wait()


class _ServerProcess:
    """What the QuestDB server and the sink share: a process this object started (``process``) or that an
    earlier command started and left in ``pid_file``, recognised by ``_command_marker`` in its command line."""

    process: subprocess.Popen | None
    pid_file: Path
    _command_marker: str

    def pid(self) -> int | None:
        """The pid while it runs (from the pid file, so also for one an earlier command started)."""
        if self.process is not None:
            return self.process.pid if self.process.poll() is None else None
        return _live_pid(self.pid_file, self._command_marker)

    def is_running(self) -> bool:
        return self.pid() is not None

    def _stop(self, timeout: float) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; the pid file goes."""
        _stop(self.process, _live_pid(self.pid_file, self._command_marker), timeout)
        self.pid_file.unlink(missing_ok=True)


@dataclass
class NativeQuestDB(_ServerProcess):
    """One QuestDB server process with its own root directory and ports.

    The root holds ``conf/server.conf`` (the project's, copied at each start), the data, ``questdb.log``
    (the server's stdout and stderr), ``questdb.pid`` and ``tmp/`` (the JVM's temporary directory, where
    QuestDB extracts its native library: a killed server leaves it there, not in the system's /tmp).
    All four listeners bind ``bind_host``; ``host`` is where clients reach them. ``extra_env`` adds or
    overrides ``QDB_*`` keys.
    """

    root: Path = DEFAULT_ROOT
    http_port: int = DEFAULT_HTTP_PORT
    ilp_port: int = DEFAULT_ILP_PORT
    pg_port: int = DEFAULT_PG_PORT
    min_port: int = DEFAULT_MIN_PORT
    host: str = "127.0.0.1"
    extra_env: dict = field(default_factory=dict)
    bind_host: str = DEFAULT_BIND_HOST

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.process: subprocess.Popen | None = None

    @property
    def pid_file(self) -> Path:
        return self.root / "questdb.pid"

    @property
    def _command_marker(self) -> str:
        return f"-d {self.root} "

    @property
    def log_file(self) -> Path:
        return self.root / "questdb.log"

    @property
    def tmp_dir(self) -> Path:
        return self.root / "tmp"

    @property
    def ports(self) -> dict[str, int]:
        return {"http": self.http_port, "ilp": self.ilp_port, "pg": self.pg_port, "min": self.min_port}

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "QDB_HTTP_BIND_TO": f"{self.bind_host}:{self.http_port}",
            "QDB_LINE_TCP_NET_BIND_TO": f"{self.bind_host}:{self.ilp_port}",
            "QDB_PG_NET_BIND_TO": f"{self.bind_host}:{self.pg_port}",
            "QDB_HTTP_MIN_NET_BIND_TO": f"{self.bind_host}:{self.min_port}",
        })
        env.update(self.extra_env)
        return env

    def healthy(self) -> bool:
        """``/status`` on the min port says healthy and ``select 1`` answers on ``/exec``."""
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.min_port}/status", timeout=2) as response:
                if response.status != 200:
                    return False
            with urllib.request.urlopen(f"http://{self.host}:{self.http_port}/exec?query=select%201",
                                        timeout=2) as response:
                return json.loads(response.read()).get("dataset") == [[1]]
        except (OSError, ValueError):
            return False

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> NativeQuestDB:
        """Start the server and wait until it is healthy; a no-op if this root's server already runs."""
        if self.is_running():
            return self
        if shutil.which("java") is None:
            raise RunError("java is not installed: QuestDB needs a Java 17+ runtime "
                           "(apt-get install openjdk-17-jre-headless)")
        for name, port in self.ports.items():
            if port_in_use(port):
                raise RunError(f"port {port} ({name}) is already in use; stop what holds it or choose other ports")
        jar = jar_path()
        (self.root / "conf").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SERVER_CONF, self.root / "conf" / "server.conf")
        # Each start extracts the native library afresh (35 MB); what a killed server left goes now.
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        self.tmp_dir.mkdir()
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                ["java", *JVM_OPTIONS, f"-Djava.io.tmpdir={self.tmp_dir}", "-p", str(jar), "-m", "io.questdb/io.questdb.ServerMain", "-d", str(self.root)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.environment(),
                start_new_session=True,
            )
        self.pid_file.write_text(f"{self.process.pid}\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise RunError(f"QuestDB exited at start (code {self.process.returncode}): {self.log_tail(log_start)}")
            if self.healthy():
                return self
            time.sleep(0.1)
        self.kill()
        self.pid_file.unlink(missing_ok=True)
        raise RunError(f"QuestDB did not become healthy within {timeout:g}s: {self.log_tail(log_start)}")

    def log_tail(self, since: int = 0, lines: int = LOG_TAIL_LINES) -> str:
        """What the server logged (after byte ``since``) that explains a failure, as one line, and where
        the log is: its error lines if any (QuestDB levels E and C, exceptions), else its last lines."""
        try:
            with open(self.log_file, "rb") as log:
                log.seek(since)
                text = log.read().decode(errors="replace")
        except OSError:
            return f"no log at {self.log_file}"
        # Java stack frames say where, not what; the exception line above them says what.
        logged = [line.strip() for line in text.splitlines()
                  if line.strip() and not _STACK_FRAME.match(line)]
        errors = [line for line in logged if _ERROR_LINE.search(line)]
        tail = list(dict.fromkeys(errors))[-2:] if errors else logged[-lines:]
        return (" | ".join(tail) or "empty log")[-1500:] + f" (log: {self.log_file})"

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """SIGTERM (QuestDB closes its tables), then SIGKILL after ``timeout`` seconds."""
        self._stop(timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash would: used by the fault tests. The pid file stays, as after a crash."""
        pid = self.pid()
        if pid is not None:
            _signal_group(pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait()


@dataclass
class SocatSink(_ServerProcess):
    """socat accepting TCP connections on ``port`` and discarding everything they send."""

    port: int = DEFAULT_SINK_PORT
    host: str = "127.0.0.1"
    pid_file: Path = NATIVE_DIR / "sink.pid"
    bind_host: str = DEFAULT_BIND_HOST

    def __post_init__(self) -> None:
        self.pid_file = Path(self.pid_file)
        self.process: subprocess.Popen | None = None

    @property
    def _command_marker(self) -> str:
        return "socat -u TCP-LISTEN:"

    def start(self, timeout: float = 10.0) -> SocatSink:
        """Start socat and wait until it accepts connections; a no-op if this pid file's sink runs."""
        if self.is_running():
            return self
        if shutil.which("socat") is None:
            raise RunError("socat is not installed (apt-get install socat)")
        if port_in_use(self.port):
            raise RunError(f"port {self.port} (sink) is already in use; stop what holds it or choose another sink port")
        self.process = subprocess.Popen(
            ["socat", "-u", f"TCP-LISTEN:{self.port},bind={self.bind_host},fork,reuseaddr", "OPEN:/dev/null"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.write_text(f"{self.process.pid}\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                reason = self.process.stderr.read().decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
                raise RunError(f"socat exited at start (code {self.process.returncode}): {reason[0]}")
            if port_in_use(self.port):
                # Nothing reads socat's stderr from now on; a full pipe must never block it.
                self.process.stderr.close()
                return self
            time.sleep(0.05)
        self.stop()
        raise RunError(f"socat did not listen on port {self.port} within {timeout:g}s")

    def stop(self, timeout: float = 5.0) -> None:
        self._stop(timeout)
