"""What this machine lets a run have, checked before the run starts: threads (each worker is one, with its
own connection and buffer), open files (a connection is one) and memory. A request beyond them ends at once
in one ``UsageError`` line naming the limit and where it comes from, instead of a thread or socket that
fails to start halfway through a run.

The limits are read from the kernel (``threads-max`` less the threads running, the cgroup's ``pids.max``
less its ``pids.current``) and from this process's ``RLIMIT_NOFILE``; ``RLIMIT_NPROC`` counts every
process of the user, which a process cannot see cheaply, and is left out.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from harness.errors import UsageError

if TYPE_CHECKING:
    from harness.source import Source
    from harness.tsbs.params import DatasetSpec

# Threads and files a run needs besides its workers: progress, checkpoints, sampler, metrics; the
# interpreter's own files, the results file, the HTTP client's sockets.
SPARE_THREADS = 16
SPARE_FILES = 64
# Memory a worker costs besides its chunk: its thread's stack as touched, its client buffer and socket buffers.
BYTES_PER_WORKER = 2 << 20


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _cgroup_dir() -> Path | None:
    """This process's cgroup v2 folder, if any."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return Path("/sys/fs/cgroup") / line[3:].lstrip("/")
    except OSError:
        pass
    return None


def thread_room() -> tuple[int, str] | None:
    """How many more threads this machine lets start, and the limit that says so; None if none is known."""
    rooms = []
    threads_max = _read_int(Path("/proc/sys/kernel/threads-max"))
    try:
        running = int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        running = None
    if threads_max is not None and running is not None:
        rooms.append((threads_max - running, f"the kernel's threads-max is {threads_max}, {running} run now"))
    folder = _cgroup_dir()
    if folder is not None:
        pids_max, pids_now = _read_int(folder / "pids.max"), _read_int(folder / "pids.current")
        if pids_max is not None and pids_now is not None:
            rooms.append((pids_max - pids_now, f"this cgroup's pids.max is {pids_max}, {pids_now} in use"))
    return min(rooms) if rooms else None


def file_room() -> tuple[int, str]:
    """How many more files (sockets) this process may open, and the limit that says so."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        open_now = len(os.listdir("/proc/self/fd"))
    except OSError:
        open_now = 0
    if soft == resource.RLIM_INFINITY:
        return 1 << 30, "no open-file limit"
    return soft - open_now, f"this process may open {soft} files (ulimit -n), {open_now} are open"


def check_workers(flag: str, workers: int, connections_each: int = 1, bytes_each: int = 0) -> None:
    """Refuse, in one line naming the limit, ``workers`` threads that each hold ``connections_each``
    connections and ``bytes_each`` bytes (besides ``BYTES_PER_WORKER``) that this machine cannot give."""
    threads = thread_room()
    if threads is not None and workers + SPARE_THREADS > threads[0]:
        raise UsageError(f"{flag} {workers}: each worker is a thread, and this machine can start about "
                         f"{max(threads[0] - SPARE_THREADS, 0)} more ({threads[1]})")
    files, why = file_room()
    if connections_each and workers * connections_each + SPARE_FILES > files:
        raise UsageError(f"{flag} {workers}: each worker holds {connections_each} connection(s), and this process "
                         f"can open about {max(files - SPARE_FILES, 0)} more ({why})")
    needed = workers * (BYTES_PER_WORKER + bytes_each)
    available = psutil.virtual_memory().available
    if needed > available:
        raise UsageError(f"{flag} {workers}: the workers need about {needed / 2**30:.1f} GiB (their buffers and "
                         f"chunks in flight); {available / 2**30:.1f} GiB of memory is available")


def check_memory(source: Source, spec: DatasetSpec, chunk_rows: int) -> None:
    """Refuse, in one line, a run of ``source`` (its state, a chunk of ``chunk_rows`` rows in flight) that this
    machine's free memory cannot hold."""
    needed = source.memory_needed(spec, chunk_rows)
    available = psutil.virtual_memory().available
    if needed > available:
        raise UsageError(f"{source.name} with chunks of {chunk_rows} rows (at a scale of {spec.scale} hosts, where it "
                         f"draws from a data set) needs about {needed / 2**30:.1f} GiB; {available / 2**30:.1f} GiB of "
                         f"memory is available")


def check_held_rows(rows: int, bytes_per_row: int) -> None:
    """Refuse, in one line, a data set held whole in memory (no --stream) that this machine cannot hold."""
    needed = rows * bytes_per_row
    available = psutil.virtual_memory().available
    if needed > available:
        raise UsageError(f"--row-count {rows}: without --stream every row is generated into memory before the timed "
                         f"phases, about {needed / 2**30:.1f} GiB; {available / 2**30:.1f} GiB of memory is "
                         f"available (--stream generates while sending, in bounded memory)")
