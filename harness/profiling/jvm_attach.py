"""A JVM of this machine, found by the address it serves (``harness.questdb.process``), and HotSpot's dynamic attach
into it: the protocol the JDK's ``jcmd`` and ``jattach`` speak, spoken here, so that a client without a JDK (the
client container) can load an agent into QuestDB, and a phase's cut costs a socket's round trip, not a JVM's start.

The JVM may be in a container: its files are reached through ``/proc/PID/root``; HotSpot talks only to its own user
or root (``SO_PEERCRED``), which the refusal says.

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

from harness.questdb.process import serving_process

ATTACH_TIMEOUT_SECONDS = 10.0
ANSWER_TIMEOUT_SECONDS = 60.0


class AttachError(Exception):
    """The JVM could not be reached, or refused what was asked; the message says which and why."""


def jvm_serving(host: str, port: int) -> tuple[int | None, str | None]:
    """The JVM of this machine serving ``host:port`` (QuestDB's HTTP port) and None, or None and why there is none."""
    process, why = serving_process(host, port)
    if process is None:
        return None, why
    try:
        name = process.name()
    except psutil.Error:  # gone, or another user's
        return None, f"the process serving port {port} cannot be read by this user"
    if "java" not in name:
        return None, f"the process serving port {port} is {name}, not a JVM"
    return process.pid, None


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
