"""The no-op sink: socat accepting ILP over TCP and writing it to /dev/null, as in the TSBS
loader-optimisation story, so a run measures the client alone."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunError
from harness.servers.jar import NATIVE_DIR
from harness.servers.process import DEFAULT_BIND_HOST, ServerProcess, port_in_use

DEFAULT_SINK_PORT = 9010


@dataclass
class SocatSink(ServerProcess):
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
