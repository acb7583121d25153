"""QuestDB run natively from a server jar (a release's, ``harness.servers.jar``, or any other) on the Java here that
its class files need (``harness.servers.java``), with the project's ``conf/server.conf``; ports come from ``QDB_*``
environment variables, so the same configuration serves the default ports and the tests' own (``python -m harness
native up``, the test fixtures)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from harness.errors import RunError
from harness.servers.jar import NATIVE_DIR, PROJECT_ROOT, jar_path
from harness.servers.java import installed_javas, java_for, java_needed, jvm_options
from harness.servers.process import DEFAULT_BIND_HOST, ServerProcess, port_in_use, signal_group

DEFAULT_ROOT = NATIVE_DIR / "questdb-root"
SERVER_CONF = PROJECT_ROOT / "conf" / "server.conf"

DEFAULT_HTTP_PORT = 9000
DEFAULT_ILP_PORT = 9009
DEFAULT_PG_PORT = 8812
DEFAULT_MIN_PORT = 9003

START_TIMEOUT_SECONDS = 90.0
STOP_TIMEOUT_SECONDS = 30.0
LOG_TAIL_LINES = 5
_STACK_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")
_ERROR_LINE = re.compile(r"Exception|Error|^\S+Z [EC] ")


@dataclass
class NativeQuestDB(ServerProcess):
    """One QuestDB server process with its own root directory and ports.

    The root holds ``conf/server.conf`` (the project's, copied at each start), the data, ``questdb.log``
    (the server's stdout and stderr), ``questdb.pid`` and ``tmp/`` (the JVM's temporary directory, where
    QuestDB extracts its native library: a killed server leaves it there, not in the system's /tmp).
    All four listeners bind ``bind_host``; ``host`` is where clients reach them. ``extra_env`` adds or
    overrides ``QDB_*`` keys. ``version`` is the release to run (default: the pinned one), or ``jar`` a server jar
    of the user's, and ``server_conf`` the text of its ``server.conf`` (default: the project's). It runs on the first
    ``java`` here its class files allow (``harness.servers.java``).
    """

    root: Path = DEFAULT_ROOT
    http_port: int = DEFAULT_HTTP_PORT
    ilp_port: int = DEFAULT_ILP_PORT
    pg_port: int = DEFAULT_PG_PORT
    min_port: int = DEFAULT_MIN_PORT
    host: str = "127.0.0.1"
    extra_env: dict = field(default_factory=dict)
    bind_host: str = DEFAULT_BIND_HOST
    version: str | None = None
    server_conf: str | None = None
    jar: Path | None = None  # a server jar of the user's (a build Maven does not serve); default: the release's

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

    def running_jar(self) -> Path | None:
        """The jar this root's running server was started from (the module path of its command line); None when
        none runs."""
        pid = self.pid()
        if pid is None:
            return None
        try:
            command = psutil.Process(pid).cmdline()
        except psutil.Error:
            return None
        return Path(command[command.index("-p") + 1]) if "-p" in command[:-1] else None

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
        """``/status`` on the min port says healthy and ``select 1`` answers on ``/exec``; a server that asks
        for a login (HTTP authentication on: 401) answers too."""
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.min_port}/status", timeout=2) as response:
                if response.status != 200:
                    return False
        except urllib.error.HTTPError as exc:
            if exc.code != 401:
                return False
        except OSError:
            return False
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.http_port}/exec?query=select%201",
                                        timeout=2) as response:
                return json.loads(response.read()).get("dataset") == [[1]]
        except urllib.error.HTTPError as exc:
            return exc.code == 401
        except (OSError, ValueError):
            return False

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> NativeQuestDB:
        """Start the server and wait until it is healthy; a no-op if this root's server already runs."""
        if self.is_running():
            return self
        if not installed_javas():
            raise RunError("java is not installed: QuestDB needs a Java 17+ runtime "
                           "(apt-get install openjdk-17-jre-headless)")
        for name, port in self.ports.items():
            if port_in_use(port):
                raise RunError(f"port {port} ({name}) is already in use; stop what holds it or choose other ports")
        jar = Path(self.jar) if self.jar is not None else jar_path(self.version)
        java = java_for(java_needed(jar), f"QuestDB {jar.name}")
        (self.root / "conf").mkdir(parents=True, exist_ok=True)
        conf = self.root / "conf" / "server.conf"
        if self.server_conf is None:
            shutil.copyfile(SERVER_CONF, conf)
        else:
            conf.write_text(self.server_conf)
        # Each start extracts the native library afresh (35 MB); what a killed server left goes now.
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        self.tmp_dir.mkdir()
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                [java, *jvm_options(java), f"-Djava.io.tmpdir={self.tmp_dir}", "-p", str(jar), "-m",
                 "io.questdb/io.questdb.ServerMain", "-d", str(self.root)],
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
            signal_group(pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait()
