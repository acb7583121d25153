"""A server process the harness starts natively and stops again, whoever started it: its pid file, how it
is recognised (a stale pid file must never make us signal a stranger), and its stop (SIGTERM, then
SIGKILL, to its whole process group). Every server runs in its own session (process group), so stopping it
also stops what it forked (socat forks one child per connection) and a Ctrl-C in the shell that started it
does not reach it. A server started for one run alone (a private sink) also dies with the process that started
it, however that ends, SIGKILL included (``dies_with_this_process``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from harness.errors import RunError

# Loopback only, like the Docker stack's published ports: QuestDB's HTTP /exec and PGWire run any SQL
# (DROP TABLE included) without authentication, and ILP writes anything; 0.0.0.0 offers them to the network.
DEFAULT_BIND_HOST = "127.0.0.1"


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on host:port."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


# Linux's prctl option: the signal a process gets when the thread that forked it ends.
_PR_SET_PDEATHSIG = 1


def dies_with_this_process() -> Callable[[], None] | None:
    """A ``preexec_fn`` for a child that must not outlive this process, however it ends (SIGKILL included):
    the kernel sends the child SIGKILL when the thread that started it ends (Linux's ``PR_SET_PDEATHSIG``; start
    it from the thread that stops it). None where the system has no ``prctl``. The child checks, after asking,
    that this process still runs: one that died just before would never signal."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:  # in the child, between fork and exec: nothing but system calls
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:
            os._exit(1)

    return preexec


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


def signal_group(pid: int, signum: int) -> None:
    """Signal the server's whole process group (it leads its own session), or the pid alone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


def stop_process(process: subprocess.Popen | None, pid: int | None, timeout: float) -> None:
    """SIGTERM, then SIGKILL after ``timeout``. A child of this process is reaped through its Popen
    (a zombie would look alive to a pid check); a server started by an earlier command, by its pid."""
    if process is not None and process.poll() is None:
        pid = process.pid
    if pid is None or not _pid_alive(pid):
        if process is not None:
            process.poll()
        return
    signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            break
        if process is None and not _pid_alive(pid):
            break
        time.sleep(0.1)
    else:
        signal_group(pid, signal.SIGKILL)
    try:
        # Forked children (socat's per-connection copies) outlive their parent; they die with the group.
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if process is not None:
        process.wait()


class ServerProcess:
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

    def _spawn(self, command: list[str], what: str, port: int, timeout: float, **popen) -> None:
        """Start ``command`` in a session of its own, its pid in ``pid_file``, and wait until it listens on
        ``port``: one that exits first, or does not listen within ``timeout`` seconds, is a RunError naming
        ``what``."""
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, start_new_session=True, **popen)
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.write_text(f"{self.process.pid}\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                reason = self.process.stderr.read().decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
                raise RunError(f"{what} exited at start (code {self.process.returncode}): {reason[0]}")
            if port_in_use(port):
                # Nothing reads its stderr from now on; a full pipe must never block it.
                self.process.stderr.close()
                return
            time.sleep(0.05)
        self._stop(5.0)
        raise RunError(f"{what} did not listen on port {port} within {timeout:g}s")

    def _stop(self, timeout: float) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; the pid file goes."""
        stop_process(self.process, _live_pid(self.pid_file, self._command_marker), timeout)
        self.pid_file.unlink(missing_ok=True)


def process_cost(pid: int) -> tuple[float, int | None]:
    """CPU seconds (user and system, of the process and its reaped children) a process has used so far, and
    its peak resident memory in bytes (Linux's ``VmHWM``; None where the system does not say)."""
    process = psutil.Process(pid)
    times = process.cpu_times()
    cpu = times.user + times.system + getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0)
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return cpu, None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return cpu, int(line.split()[1]) * 1024  # kB
    return cpu, None
