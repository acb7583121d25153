"""Real servers started natively, for the tests and for hosts without Docker: QuestDB and the socat sink.

QuestDB is the release jar from Maven Central (fetched once into ``.cache/questdb/``) run on this
machine's Java with the project's ``conf/server.conf``; ports come from ``QDB_*`` environment variables,
so the same configuration serves the default ports and the tests' own. The no-op sink is socat
accepting ILP and writing it to /dev/null, as in the TSBS loader-optimisation story.

    python -m harness.native up [--questdb-only] | down | status
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunError, UsageError

QUESTDB_VERSION = "9.3.4"
PROJECT_ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = PROJECT_ROOT / ".cache"
JAR_DIR = CACHE_DIR / "questdb"
DEFAULT_ROOT = CACHE_DIR / "native" / "questdb-root"
DEFAULT_SINK_PID = CACHE_DIR / "native" / "sink.pid"
SERVER_CONF = PROJECT_ROOT / "conf" / "server.conf"
START_TIMEOUT_SECONDS = 90.0
# Enough for the benchmark's tables on a 24 GiB host while leaving room for the client's DataFrames.
JVM_OPTIONS = ("-Xms1g", "-Xmx4g", "-XX:+UseParallelGC")


def jar_path(version: str = QUESTDB_VERSION) -> Path:
    """The server jar, fetched from Maven Central through Maven on first use."""
    jar = JAR_DIR / f"questdb-{version}.jar"
    if jar.exists():
        return jar
    if shutil.which("mvn") is None:
        raise RunError(f"QuestDB jar {jar} is missing and Maven (mvn) is not installed to fetch it")
    JAR_DIR.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mvn", "-q", "dependency:copy", f"-Dartifact=org.questdb:questdb:{version}", f"-DoutputDirectory={JAR_DIR}"],
        capture_output=True, text=True,
    )
    if result.returncode != 0 or not jar.exists():
        tail = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no output"]
        raise RunError(f"could not fetch org.questdb:questdb:{version} with Maven: {tail[0]}")
    return jar


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
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
    return True


def _live_pid(pid_file: Path) -> int | None:
    """The pid recorded in ``pid_file`` if that process still runs."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def _stop_pid(pid: int, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _stop(process: subprocess.Popen | None, pid: int | None, timeout: float) -> None:
    """SIGTERM, then SIGKILL after ``timeout``. A child of this process is reaped through its Popen
    (a zombie would look alive to a pid check); a server started by an earlier command, by its pid."""
    if process is not None:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    elif pid is not None:
        _stop_pid(pid, timeout)


@dataclass
class NativeQuestDB:
    """One QuestDB server process with its own root directory and ports."""

    root: Path = DEFAULT_ROOT
    http_port: int = 9000
    ilp_port: int = 9009
    pg_port: int = 8812
    min_port: int = 9003
    host: str = "127.0.0.1"
    extra_env: dict | None = None

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.process: subprocess.Popen | None = None

    @property
    def pid_file(self) -> Path:
        return self.root / "questdb.pid"

    @property
    def log_file(self) -> Path:
        return self.root / "questdb.log"

    def environment(self) -> dict:
        env = dict(os.environ)
        env.update({
            "QDB_HTTP_BIND_TO": f"0.0.0.0:{self.http_port}",
            "QDB_LINE_TCP_NET_BIND_TO": f"0.0.0.0:{self.ilp_port}",
            "QDB_PG_NET_BIND_TO": f"0.0.0.0:{self.pg_port}",
            "QDB_HTTP_MIN_NET_BIND_TO": f"0.0.0.0:{self.min_port}",
        })
        env.update(self.extra_env or {})
        return env

    def pid(self) -> int | None:
        return _live_pid(self.pid_file)

    def is_running(self) -> bool:
        return self.pid() is not None

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.min_port}/status", timeout=2) as response:
                if response.status != 200:
                    return False
            with urllib.request.urlopen(f"http://{self.host}:{self.http_port}/exec?query=select%201", timeout=2):
                return True
        except OSError:
            return False

    def start(self, timeout: float = START_TIMEOUT_SECONDS) -> NativeQuestDB:
        if self.is_running():
            return self
        if shutil.which("java") is None:
            raise RunError("java is not installed: QuestDB needs a Java 17+ runtime")
        for port in (self.http_port, self.ilp_port, self.pg_port, self.min_port):
            if port_in_use(port):
                raise RunError(f"port {port} is already in use; stop what holds it or choose other ports")
        jar = jar_path()
        (self.root / "conf").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SERVER_CONF, self.root / "conf" / "server.conf")
        log = open(self.log_file, "ab")
        self.process = subprocess.Popen(
            ["java", *JVM_OPTIONS, "-p", str(jar), "-m", "io.questdb/io.questdb.ServerMain", "-d", str(self.root)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.environment(),
            start_new_session=True,
        )
        log.close()
        self.pid_file.write_text(str(self.process.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RunError(f"QuestDB exited at start (code {self.process.returncode}): {self._log_tail()}")
            if self.healthy():
                return self
            time.sleep(0.25)
        self.kill()
        raise RunError(f"QuestDB did not become healthy within {timeout:g}s: {self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            lines = [line for line in self.log_file.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return "no log"
        errors = [line for line in lines if " E " in line or "rror" in line]
        return (errors or lines or ["empty log"])[-1][:300] + f" (log: {self.log_file})"

    def stop(self, timeout: float = 30.0) -> None:
        _stop(self.process, self.pid(), timeout)
        self.pid_file.unlink(missing_ok=True)

    def kill(self) -> None:
        """SIGKILL, as a crash would: used by the fault tests."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait()


@dataclass
class SocatSink:
    """socat accepting TCP connections on ``port`` and discarding everything they send."""

    port: int = 9010
    host: str = "127.0.0.1"
    pid_file: Path = DEFAULT_SINK_PID

    def __post_init__(self) -> None:
        self.pid_file = Path(self.pid_file)
        self.process: subprocess.Popen | None = None

    def pid(self) -> int | None:
        return _live_pid(self.pid_file)

    def start(self, timeout: float = 10.0) -> SocatSink:
        if self.pid() is not None:
            return self
        if shutil.which("socat") is None:
            raise RunError("socat is not installed (apt-get install socat)")
        if port_in_use(self.port):
            raise RunError(f"port {self.port} is already in use; choose another sink port")
        self.process = subprocess.Popen(
            ["socat", "-u", f"TCP-LISTEN:{self.port},fork,reuseaddr", "OPEN:/dev/null"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.write_text(str(self.process.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RunError(f"socat exited at start (code {self.process.returncode})")
            if port_in_use(self.port):
                return self
            time.sleep(0.05)
        self.stop()
        raise RunError(f"socat did not listen on port {self.port} within {timeout:g}s")

    def stop(self) -> None:
        _stop(self.process, self.pid(), 5.0)
        self.pid_file.unlink(missing_ok=True)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.native", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument("--questdb-only", action="store_true", help="do not start the socat sink")
    parser.add_argument("--root", default=str(DEFAULT_ROOT))
    parser.add_argument("--http-port", type=int, default=9000)
    parser.add_argument("--ilp-port", type=int, default=9009)
    parser.add_argument("--pg-port", type=int, default=8812)
    parser.add_argument("--min-port", type=int, default=9003)
    parser.add_argument("--sink-port", type=int, default=9010)
    options = parser.parse_args(argv)
    server = NativeQuestDB(Path(options.root), options.http_port, options.ilp_port, options.pg_port, options.min_port)
    # The sink's pid file lives beside the server root, so a second set of servers keeps its own.
    sink = SocatSink(options.sink_port, pid_file=Path(options.root).parent / "sink.pid")
    if options.action == "up":
        server.start()
        print(f"QuestDB {QUESTDB_VERSION} up: http {options.http_port}, ilp {options.ilp_port}, "
              f"pg {options.pg_port}, metrics http://127.0.0.1:{options.min_port}/metrics (log: {server.log_file})")
        if not options.questdb_only:
            sink.start()
            print(f"socat no-op sink up on port {options.sink_port}")
    elif options.action == "down":
        server.stop()
        sink.stop()
        print("native servers stopped")
    else:
        running = server.is_running()
        print(f"QuestDB: {'running, pid ' + str(server.pid()) if running else 'not running'}"
              f"{', healthy' if running and server.healthy() else ''}")
        print(f"sink: {'running, pid ' + str(sink.pid()) if sink.pid() else 'not running'}")
        return 0 if running else 3
    return 0


def main() -> None:
    try:
        sys.exit(_cli(sys.argv[1:]))
    except (RunError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
