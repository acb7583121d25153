"""The no-op sink: socat accepting ILP over TCP and writing it to /dev/null, as in the TSBS
loader-optimisation story, so a run measures the client alone; and the sink a run uses (``sink_at``): what
listens where it sends, or, where nothing does, a private sink started for the run alone and stopped with it
(socat, or ``harness.servers.python_sink`` where socat is not installed)."""

from __future__ import annotations

import contextlib
import ipaddress
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.errors import RunError
from harness.servers.jar import NATIVE_DIR
from harness.servers.process import DEFAULT_BIND_HOST, ServerProcess, dies_with_this_process, port_in_use
from harness.servers.python_sink import PythonSink

DEFAULT_SINK_PORT = 9010
# Where a private sink listens: loopback, on a port free when it starts.
PRIVATE_SINK_HOST = "127.0.0.1"
PRIVATE_SINK_ATTEMPTS = 3
# How long asking whether something listens on this machine may take.
PROBE_SECONDS = 1.0


@dataclass
class SocatSink(ServerProcess):
    """socat accepting TCP connections on ``port`` and discarding everything they send; with
    ``dies_with_parent`` (a private sink) it is killed when the process that started it dies."""

    port: int = DEFAULT_SINK_PORT
    host: str = "127.0.0.1"
    pid_file: Path = NATIVE_DIR / "sink.pid"
    bind_host: str = DEFAULT_BIND_HOST
    dies_with_parent: bool = False

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
        self._spawn(["socat", "-u", f"TCP-LISTEN:{self.port},bind={self.bind_host},fork,reuseaddr", "OPEN:/dev/null"],
                    "socat", self.port, timeout,
                    preexec_fn=dies_with_this_process() if self.dies_with_parent else None)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop(timeout)


@dataclass(frozen=True)
class SinkAddress:
    """Where a run into the sink sends, and ``private``: the sink started for it alone (``socat`` or
    ``python``), or None for one that already listened there."""

    host: str
    port: int
    private: str | None = None


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback (where a sink of ours can listen in its place)."""
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listening(host: str, port: int) -> bool:
    """Whether something accepts TCP connections at host:port."""
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=PROBE_SECONDS):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def sink_at(host: str, port: int, say: Callable[[str], None]) -> Iterator[SinkAddress]:
    """The sink a run sends into for the length of the block: what listens at host:port, as it is (also a host
    not of this machine, where nothing may listen: the run's own check then names the address); where nothing
    listens on this machine, a private sink on a free loopback port, socat (a ``python_sink`` process where socat
    is not installed), its pid file in a temporary folder of its own (never the one ``native up/down`` share),
    stopped when the block ends however it ends, and killed with this process if this process is killed. Says so
    in one line when it starts one, and in one when it stops it."""
    if not is_loopback(host) or listening(host, port):
        yield SinkAddress(host, port)
        return
    folder = Path(tempfile.mkdtemp(prefix="harness-sink-"))
    try:
        sink = _start_private(folder / "sink.pid")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    kind = "socat" if isinstance(sink, SocatSink) else "python"
    what = "socat" if kind == "socat" else "a Python process: socat is not installed"
    address = f"{PRIVATE_SINK_HOST}:{sink.port}"
    try:
        say(f"nothing listened at {host}:{port}: started a private no-op sink ({what}) on {address}")
        yield SinkAddress(PRIVATE_SINK_HOST, sink.port, kind)
    finally:
        sink.stop()
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError, ValueError):  # an output closed by now takes nothing from the run's end
            say(f"stopped the private no-op sink on {address}")


def _start_private(pid_file: Path) -> SocatSink | PythonSink:
    """socat (or the Python sink) on a loopback port free a moment ago; another one if something took it since."""
    socat = shutil.which("socat") is not None
    for attempt in range(1, PRIVATE_SINK_ATTEMPTS + 1):
        port = free_port()
        sink = SocatSink(port, PRIVATE_SINK_HOST, pid_file, PRIVATE_SINK_HOST, dies_with_parent=True) if socat \
            else PythonSink(port, pid_file, PRIVATE_SINK_HOST, PRIVATE_SINK_HOST)
        try:
            return sink.start()
        except RunError as exc:
            if attempt == PRIVATE_SINK_ATTEMPTS or not port_in_use(port):
                raise RunError(f"cannot start a private no-op sink: {exc}") from None
    raise AssertionError("unreachable")


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind((PRIVATE_SINK_HOST, 0))
        return probe.getsockname()[1]
