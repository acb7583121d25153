"""The client's side: this process, all its threads and the processes it forks, sampled by py-spy (``record --native
--idle --threads --subprocesses``, collapsed stacks), a recording a phase. py-spy runs in a session of its own, so
that the user's Ctrl-C reaches the run, not it; each recording is stopped with SIGINT, on which py-spy writes its
file.

By default py-spy samples without pausing the process (``--nonblocking``): Python frames only, at no cost measurable
here; the harness names its two calls into the questdb client (``append_frame_to_sender``, ``flush_sender``:
``harness.ingest.wire.ilp``), so serializing and sending are told apart all the same. Native frames (``--profile-native``: the client's Rust,
pandas', NumPy's and Arrow's C, waits for the GIL) need py-spy to pause the process at each sample (ptrace): that
slows the client (``benchmarks/profile_cost.py``), and a pause interrupts a blocking call that has a timeout (the
kernel does not restart it: ``EINTR``). The questdb client's ILP/HTTP flush is such a call, and fails on it ("io:
Interrupted system call"): ``--profile-native`` is refused for a run that sends over ILP/HTTP.

Frames are made readable as they are read: a Rust symbol (v0 mangling, as the questdb client's) becomes its path
(``questdb::ingress::sender::Sender::flush``), and the process's root frame its pid.

Before anything runs, ``check_py_spy`` makes sure py-spy is installed and may attach (ptrace): one line naming
what to do otherwise.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psutil

from harness.errors import UsageError
from harness.telemetry.stacks import Stacks, frames, read_collapsed

PACKAGE = "py-spy"
# How long py-spy may take to attach (its check), and to write its file once stopped.
CHECK_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 60.0
PTRACE_SCOPE = Path("/proc/sys/kernel/yama/ptrace_scope")
PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, 2**64 - 1  # <linux/prctl.h>: (unsigned long) -1


def py_spy_binary() -> str | None:
    """py-spy beside this Python (its venv's bin), or on the PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def py_spy_version(binary: str) -> str:
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=CHECK_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return PACKAGE
    return done.stdout.strip() or PACKAGE


def check_py_spy() -> str:
    """py-spy's binary, once it has attached to this process (``dump``); a UsageError naming what to do where it is
    not installed or ptrace is refused."""
    binary = py_spy_binary()
    _allow_tracing_by_a_child()
    if binary is None:
        raise UsageError(f"--profile needs py-spy to sample the client, which is not installed here "
                         f"(pip install {PACKAGE})")
    try:
        done = subprocess.run([binary, "dump", "--pid", str(os.getpid())], capture_output=True, text=True,
                              timeout=CHECK_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--profile: py-spy could not attach to the client: {exc}") from None
    if done.returncode != 0:
        raise UsageError(f"--profile: py-spy may not attach to the client: {_refusal(done.stderr + done.stdout)}")
    return binary


def _allow_tracing_by_a_child() -> None:
    """Under ``kernel.yama.ptrace_scope`` 1 (Ubuntu's default) a process may be traced only by its ancestors, or by
    one it names: py-spy is this process's child, so this process names any of its user's (``PR_SET_PTRACER``).
    Without Yama the call fails, and nothing needs it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PTRACER, ctypes.c_ulong(PR_SET_PTRACER_ANY), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _refusal(text: str) -> str:
    """Why py-spy could not attach, and what allows it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = lines[0] if lines else "no reason given"
    if "ermission" in text or "ptrace" in text.lower() or "not permitted" in text:
        scope = PTRACE_SCOPE.read_text().strip() if PTRACE_SCOPE.exists() else None
        where = (f"kernel.yama.ptrace_scope is {scope} (0 or 1 lets a process trace its own; 1 is the default)"
                 if scope not in (None, "0", "1") else
                 "in a container, its seccomp profile must allow ptrace (Docker's default does: docs/profiling.md)")
        return f"ptrace refused ({said}); {where}"
    return said


_BASE62_END = re.compile(r"[0-9A-Za-z]*_")
_ROOT = re.compile(r'^(process \d+):".*"$')
_SYMBOL = re.compile(r"^(_R[0-9A-Za-z_]+)(.*)$")


def rust_path(symbol: str) -> str | None:
    """A Rust v0 symbol's names joined by ``::`` (crate hashes, generic arguments and back-references skipped: a
    name to read, not an exact demangling); None where ``symbol`` is not one."""
    if not symbol.startswith("_R"):
        return None
    names, index = [], 2
    while index < len(symbol):
        character = symbol[index]
        if character.isdigit():
            end = index
            while end < len(symbol) and symbol[end].isdigit():
                end += 1
            length = int(symbol[index:end])
            if end < len(symbol) and symbol[end] == "_":  # a name that starts with a digit or "_"
                end += 1
            name = symbol[end:end + length]
            if len(name) < length:
                break
            names.append(name)
            index = end + length
        elif character in "sB" or symbol.startswith("Cs", index):  # a disambiguator, a back-reference
            index += 1 if character != "C" else 2
            found = _BASE62_END.match(symbol, index)
            index = found.end() if found else index
        elif character == "N":  # a namespace and its tag
            index += 2
        else:
            index += 1
    return "::".join(names) or None


def readable(frame: str) -> str:
    """A py-spy frame to read: a Rust symbol as its path, the process's root frame as its pid."""
    root = _ROOT.match(frame)
    if root:
        return root.group(1)
    symbol = _SYMBOL.match(frame)
    if symbol:
        path = rust_path(symbol.group(1))
        if path:
            return path + symbol.group(2)
    return frame


def readable_stacks(stacks: Stacks) -> Stacks:
    out: Stacks = Counter()
    for stack, samples in stacks.items():
        out[";".join(readable(frame) for frame in frames(stack))] += samples
    return out


class ClientRecording:
    """One py-spy recording of this process, from ``start`` to ``stop`` (which returns its stacks); ``native``:
    with native frames (pausing the process at each sample), else without pausing it."""

    def __init__(self, binary: str, rate_hz: int, output: Path, native: bool = False):
        self.output = output
        how = ["--native"] if native else ["--nonblocking"]
        self._process = subprocess.Popen(
            [binary, "record", "--pid", str(os.getpid()), "--rate", str(rate_hz), *how, "--idle", "--threads",
             "--subprocesses", "--nolineno", "--format", "raw", "--output", str(output)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self.cpu_seconds: float | None = None

    def alive(self) -> bool:
        return self._process.poll() is None

    def stop(self) -> tuple[Stacks | None, str | None]:
        """The recording's stacks and None, or None and why there are none (py-spy died, or wrote nothing);
        ``cpu_seconds`` is then what py-spy used while sampling."""
        if self._process.poll() is None:
            try:
                self.cpu_seconds = sum(psutil.Process(self._process.pid).cpu_times()[:2])
            except psutil.Error:
                pass
            self._process.send_signal(signal.SIGINT)
        try:
            _, errors = self._process.communicate(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            _, errors = self._process.communicate()
            return None, f"py-spy did not write its samples within {STOP_TIMEOUT_SECONDS:.0f}s of being stopped"
        if self.output.exists():
            return readable_stacks(read_collapsed(self.output)), None
        if self._process.returncode == -signal.SIGINT:
            # Stopped before it had set its handler, so before its first sample: a recording of nothing.
            return Counter(), None
        lines = [line.strip() for line in (errors or "").splitlines() if line.strip()]
        return None, f"py-spy ended (exit {self._process.returncode}) without its samples: " \
                     f"{lines[-1] if lines else 'no message'}"
