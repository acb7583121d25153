"""Real servers started natively, for the tests and for hosts without Docker: QuestDB and the socat sink.

QuestDB is the release jar from Maven Central (fetched once into ``.cache/questdb/``) run on this
machine's Java with the project's ``conf/server.conf``; ports come from ``QDB_*`` environment variables,
so the same configuration serves the default ports and the tests' own. The no-op sink is socat
accepting ILP and writing it to /dev/null, as in the TSBS loader-optimisation story.

    python -m harness.native up [--questdb-only] [--root DIR] [--http-port N ...] | down | status | fetch

Every server runs in its own session (process group), so stopping it also stops what it forked
(socat forks one child per connection) and a Ctrl-C in the shell that started it does not reach it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError, RunError, UsageError

QUESTDB_VERSION = "9.3.4"
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

START_TIMEOUT_SECONDS = 90.0
STOP_TIMEOUT_SECONDS = 30.0
# QuestDB keeps table data, WAL and ILP buffers off-heap (mmap, malloc), so a modest heap suffices and
# leaves the rest of a small host to the client's DataFrames. Parallel GC, as QuestDB's own launcher uses.
JVM_OPTIONS = ("-Xms256m", "-Xmx2g", "-XX:+UseParallelGC")
LOG_TAIL_LINES = 5
_STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")
_ERROR_LINE = re.compile(r"Exception|Error|^\S+Z [EC] ")


def jar_path(version: str = QUESTDB_VERSION) -> Path:
    """The server jar, fetched from Maven Central through Maven on first use."""
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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed child that nobody reaped yet still answers signal 0; it is not running.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
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
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
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
    (the server's stdout and stderr) and ``questdb.pid``. ``extra_env`` adds or overrides ``QDB_*`` keys.
    """

    root: Path = DEFAULT_ROOT
    http_port: int = DEFAULT_HTTP_PORT
    ilp_port: int = DEFAULT_ILP_PORT
    pg_port: int = DEFAULT_PG_PORT
    min_port: int = DEFAULT_MIN_PORT
    host: str = "127.0.0.1"
    extra_env: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.process: subprocess.Popen | None = None

    @property
    def pid_file(self) -> Path:
        return self.root / "questdb.pid"

    @property
    def _command_marker(self) -> str:
        return f"-d {self.root} "  # cmdline ends with a NUL, read as a space

    @property
    def log_file(self) -> Path:
        return self.root / "questdb.log"

    @property
    def ports(self) -> dict[str, int]:
        return {"http": self.http_port, "ilp": self.ilp_port, "pg": self.pg_port, "min": self.min_port}

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "QDB_HTTP_BIND_TO": f"0.0.0.0:{self.http_port}",
            "QDB_LINE_TCP_NET_BIND_TO": f"0.0.0.0:{self.ilp_port}",
            "QDB_PG_NET_BIND_TO": f"0.0.0.0:{self.pg_port}",
            "QDB_HTTP_MIN_NET_BIND_TO": f"0.0.0.0:{self.min_port}",
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
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                ["java", *JVM_OPTIONS, "-p", str(jar), "-m", "io.questdb/io.questdb.ServerMain", "-d", str(self.root)],
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
            ["socat", "-u", f"TCP-LISTEN:{self.port},fork,reuseaddr", "OPEN:/dev/null"],
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


class _ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line and exit code 2, like the harness CLI's."""

    def error(self, message: str):
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="python -m harness.native", description=__doc__.split("\n\n")[0],
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("up", "down", "status", "fetch"),
                        help="up: start (and wait until healthy); down: stop; "
                             "status: exit 0 if QuestDB runs, 3 if not; "
                             "fetch: only fetch the QuestDB jar")
    parser.add_argument("--questdb-only", action="store_true", help="leave the socat sink alone")
    parser.add_argument("--questdb-version", default=QUESTDB_VERSION,
                        help="fetch: the jar's version (the servers started here always run %(default)s)")
    parser.add_argument("--root", default=str(DEFAULT_ROOT), help="QuestDB root: conf/, data, questdb.log, questdb.pid")
    parser.add_argument("--http-port", type=int, default=DEFAULT_HTTP_PORT, help="HTTP: /exec, ILP/HTTP, web console")
    parser.add_argument("--ilp-port", type=int, default=DEFAULT_ILP_PORT, help="ILP over TCP")
    parser.add_argument("--pg-port", type=int, default=DEFAULT_PG_PORT, help="PostgreSQL wire protocol")
    parser.add_argument("--min-port", type=int, default=DEFAULT_MIN_PORT, help="/status and /metrics")
    parser.add_argument("--sink-port", type=int, default=DEFAULT_SINK_PORT, help="socat no-op sink")
    parser.add_argument("--timeout", type=float, default=START_TIMEOUT_SECONDS, help="seconds to wait for health")
    return parser


def _cli(argv: list[str]) -> int:
    options = _parser().parse_args(argv)
    if options.action == "fetch":
        print(f"QuestDB {options.questdb_version} jar: {jar_path(options.questdb_version)}")
        return 0
    root = Path(options.root).resolve()
    server = NativeQuestDB(root, options.http_port, options.ilp_port, options.pg_port, options.min_port)
    # The sink's pid file lives beside the server root, so a second set of servers keeps its own.
    sink = SocatSink(options.sink_port, pid_file=root.parent / "sink.pid")
    if options.action == "up":
        already = server.is_running()
        server.start(options.timeout)
        state = "already running" if already else "up"
        print(f"QuestDB {QUESTDB_VERSION} {state} (pid {server.pid()}): http {options.http_port}, "
              f"ilp {options.ilp_port}, pg {options.pg_port}, metrics http://127.0.0.1:{options.min_port}/metrics; "
              f"log {server.log_file}")
        if not options.questdb_only:
            already = sink.is_running()
            sink.start()
            state = "already running" if already else "up"
            print(f"socat no-op sink {state} (pid {sink.pid()}) on port {options.sink_port}")
        return 0
    if options.action == "down":
        was_running = server.is_running()
        server.stop()
        print(f"QuestDB {'stopped' if was_running else 'was not running'}")
        if not options.questdb_only:
            was_running = sink.is_running()
            sink.stop()
            print(f"socat sink {'stopped' if was_running else 'was not running'}")
        return 0
    running = server.is_running()
    if running:
        health = "healthy" if server.healthy() else f"not answering on ports {options.min_port}/{options.http_port}"
        print(f"QuestDB: running (pid {server.pid()}), {health}; log {server.log_file}")
    else:
        print(f"QuestDB: not running; log {server.log_file}")
    if not options.questdb_only:
        sink_state = f"running (pid {sink.pid()}) on port {options.sink_port}" if sink.is_running() else "not running"
        print(f"socat sink: {sink_state}")
    return 0 if running else 3


def main(argv: list[str] | None = None) -> None:
    try:
        sys.exit(_cli(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr, flush=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
