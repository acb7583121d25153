"""A JVM of this machine, found by the address it serves, and HotSpot's dynamic attach into it: the protocol the JDK's
``jcmd`` and ``jattach`` speak, spoken here, so that a client without a JDK (the client container) can load an agent
into QuestDB, and a phase's cut costs a socket's round trip, not a JVM's start.

The JVM may be in a container: a process of this PID namespace whose network namespace owns the address the run
sends to (Compose's ``pid: service:questdb``), or, seen from the host, the one behind the ``docker-proxy`` that
publishes its port. Its files are reached through ``/proc/PID/root``; HotSpot talks only to its own user or root
(``SO_PEERCRED``), which the refusal says.

The protocol (HotSpot on Linux): the JVM listens on ``/tmp/.java_pid<PID>`` once asked (an ``.attach_pid<PID>`` file
in its working directory, then SIGQUIT); a request is ``1``, the command and three arguments, each ended by a NUL;
the answer is a status line and the command's output, to the end of the stream.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import psutil

from harness.telemetry.timeseries import LOCAL_HOSTS, listening_process

ATTACH_TIMEOUT_SECONDS = 10.0
ANSWER_TIMEOUT_SECONDS = 60.0
_TCP_LISTEN = "0A"


class AttachError(Exception):
    """The JVM could not be reached, or refused what was asked; the message says which and why."""


def jvm_serving(host: str, port: int) -> tuple[int | None, str | None]:
    """The JVM of this machine serving ``host:port`` (QuestDB's HTTP port) and None, or None and why there is none."""
    if host in LOCAL_HOSTS:
        process = listening_process(port)
        if process is None:
            return None, f"no process of this machine that this user may see listens on port {port}"
        process = _behind_docker_proxy(process) or process
    else:
        try:
            addresses = {info[4][0] for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)}
        except OSError:
            addresses = set()
        process = _in_another_network(addresses, port)
        if process is None:
            return None, f"QuestDB at {host} is not on this machine (no process this user may see serves it)"
    try:
        name = process.name()
    except psutil.Error:  # gone, or another user's
        return None, f"the process serving port {port} cannot be read by this user"
    if "java" not in name:
        return None, f"the process serving port {port} is {name}, not a JVM"
    return process.pid, None


def _behind_docker_proxy(process: psutil.Process) -> psutil.Process | None:
    """Where Docker publishes a container's port (its ``docker-proxy`` listens here), the JVM behind it, as the
    proxy's command line names it (``-container-ip A -container-port P``)."""
    try:
        if process.name() != "docker-proxy":
            return None
        words = process.cmdline()
        address, port = words[words.index("-container-ip") + 1], int(words[words.index("-container-port") + 1])
    except (psutil.Error, ValueError, IndexError):
        return None
    return _in_another_network({address}, port)


def _in_another_network(addresses: set[str], port: int) -> psutil.Process | None:
    """A JVM this process can see whose own network namespace holds one of ``addresses`` and listens on ``port`` (a
    container sharing this one's PID namespace, or any container seen from its host)."""
    if not addresses:
        return None
    for process in psutil.process_iter(["name"]):
        if "java" not in (process.info["name"] or ""):
            continue
        try:
            if _listens(process.pid, port) and addresses & _local_addresses(process.pid):
                return process
        except OSError:
            continue
    return None


def _listens(pid: int, port: int) -> bool:
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == _TCP_LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _local_addresses(pid: int) -> set[str]:
    """The IPv4 addresses of ``pid``'s network namespace (``fib_trie``'s host routes) and its IPv6 ones."""
    addresses, previous = set(), ""
    for line in Path(f"/proc/{pid}/net/fib_trie").read_text().splitlines():
        if "/32 host LOCAL" in line and previous.strip().startswith("|--"):
            addresses.add(previous.strip().removeprefix("|--").strip())
        previous = line
    try:
        for line in Path(f"/proc/{pid}/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            addresses.add(socket.inet_ntop(socket.AF_INET6, bytes.fromhex(raw)))
    except FileNotFoundError:
        pass
    return addresses


class Jvm:
    """The JVM ``pid``, seen from here: its files (``path``) and its attach listener (``load``)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.root = Path(f"/proc/{pid}/root")
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            # Its pid in its own PID namespace: the name of its socket.
            self.own_pid = int(next(line for line in status.splitlines() if line.startswith("NSpid:")).split()[-1])
            # Its effective user and group: what it may read and write.
            self.uid, self.gid = (int(next(line for line in status.splitlines() if line.startswith(key)).split()[2])
                                  for key in ("Uid:", "Gid:"))
            self.same_files = os.path.samestat(os.stat(self.root), os.stat("/"))
        except (OSError, StopIteration, ValueError) as exc:
            raise AttachError(f"QuestDB's JVM (pid {pid}) cannot be looked at by this user: {exc}") from None

    def path(self, inside: str | Path) -> Path:
        """The file the JVM calls ``inside``, as this process reaches it."""
        return Path(inside) if self.same_files else self.root / Path(inside).relative_to("/")

    def load(self, library: str, options: str) -> str:
        """Load the agent ``library`` (a path the JVM sees) with ``options``; the agent's answer, or an
        AttachError."""
        answer = self._request("load", library, "true", options)
        status, _, said = answer.partition("\n")
        if status.strip() != "0":
            raise AttachError(f"the JVM refused to load {Path(library).name}: {_first_line(said) or status}")
        code = next((line.split(":", 1)[1].strip() for line in said.splitlines() if line.startswith("return code:")),
                    None)
        if code not in (None, "0"):
            raise AttachError(f"the agent {Path(library).name} answered {code}: {_first_line(said)}")
        return said

    def _request(self, command: str, *arguments: str) -> str:
        connection = self._connect()
        with connection:
            connection.settimeout(ANSWER_TIMEOUT_SECONDS)
            arguments = (list(arguments) + ["", "", ""])[:3]
            connection.sendall(b"".join(part.encode() + b"\0" for part in ["1", command, *arguments]))
            chunks = []
            try:
                while chunk := connection.recv(65536):
                    chunks.append(chunk)
            except OSError as exc:
                raise AttachError(f"QuestDB's JVM (pid {self.pid}) did not answer {command}: {exc}") from None
        if not chunks:
            raise AttachError(self._not_answered())
        return b"".join(chunks).decode(errors="replace")

    def _connect(self) -> socket.socket:
        listening = self.path(f"/tmp/.java_pid{self.own_pid}")
        if not listening.exists():
            self._ask_to_listen(listening)
        try:
            return _connected(listening)
        except ConnectionRefusedError:
            # A socket left by an earlier JVM of the same pid (a restarted container keeps its /tmp): gone, the JVM
            # is asked to listen anew.
            listening.unlink(missing_ok=True)
            self._ask_to_listen(listening)
        except OSError as exc:
            raise self._refused(exc) from None
        try:
            return _connected(listening)
        except OSError as exc:
            raise self._refused(exc) from None

    def _refused(self, exc: OSError) -> AttachError:
        return AttachError(f"QuestDB's JVM (pid {self.pid}) does not take attach requests: {exc}")

    def _ask_to_listen(self, listening: Path) -> None:
        """HotSpot starts its attach listener when it finds ``.attach_pid<PID>`` on a SIGQUIT."""
        trigger = None
        for folder in (Path(f"/proc/{self.pid}/cwd"), self.path("/tmp")):
            try:
                trigger = folder / f".attach_pid{self.own_pid}"
                trigger.touch()
                break
            except OSError:
                trigger = None
        if trigger is None:
            raise AttachError(self._not_answered())
        try:
            os.kill(self.pid, signal.SIGQUIT)
            deadline = time.monotonic() + ATTACH_TIMEOUT_SECONDS
            while not listening.exists():
                if time.monotonic() > deadline:
                    raise AttachError(f"QuestDB's JVM (pid {self.pid}) did not start its attach listener within "
                                      f"{ATTACH_TIMEOUT_SECONDS:.0f}s (-XX:+DisableAttachMechanism?)")
                time.sleep(0.02)
        except PermissionError:
            raise AttachError(self._not_answered()) from None
        finally:
            trigger.unlink(missing_ok=True)

    def _not_answered(self) -> str:
        """Why the JVM does not talk to this process: HotSpot answers only its own user and group, or root."""
        try:
            uids, gids = psutil.Process(self.pid).uids(), psutil.Process(self.pid).gids()
            theirs = f"{uids.effective}:{gids.effective}"
        except psutil.Error:
            theirs = "another user"
        return (f"QuestDB's JVM (pid {self.pid}) runs as {theirs} and this client as {os.geteuid()}:{os.getegid()}: "
                f"the JVM's attach answers only its own user or root")


def _connected(path: Path) -> socket.socket:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        raise
    return connection


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else ""
