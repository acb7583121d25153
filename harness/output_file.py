"""Files the harness writes (generated data, ILP, query files, records, reports) appear whole or not at all.

``whole_file`` writes beside the target under a hidden temporary name and renames it into place only when
every byte is written and synced; a write that fails (disk full, permission, the folder gone) removes the
temporary file and ends as one line naming the path (``UsageError`` when the file cannot be opened,
before anything was written; ``RunError`` when writing it failed), so a partial file never stands where a
complete one is expected. A target that is not a regular file (``/dev/null``, ``/dev/full``, a pipe) is
written in place: there is nothing to rename, and a failure is still one line.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from harness.errors import RunError, UsageError

BUFFER_BYTES = 8 << 20


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _in_place(target: Path) -> bool:
    """Whether ``target`` exists and is not a regular file (a device or a pipe): written where it is."""
    try:
        return not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        return False


def cannot_write(what: str, target: Path | str, exc: OSError, error: type = RunError) -> Exception:
    """The one line of a write that failed: what, where, and the system's reason (``No space left...``)."""
    return error(f"{what}: cannot write {target}: {exc.strerror or exc}")


def check_writable(target: str | Path, what: str) -> None:
    """Refuse, before any work, a ``target`` that ``whole_file`` could not open (a folder, a folder that is
    not there or not writable), in the line ``whole_file`` would say."""
    target = Path(target)
    if target.is_dir():
        raise UsageError(f"{what}: cannot write {target}: it is a directory")
    try:
        if _in_place(target):
            if not os.access(target, os.W_OK):
                raise PermissionError(13, "Permission denied")
            return
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".partial"):
            pass
    except OSError as exc:
        raise cannot_write(what, target, exc, UsageError) from None


@contextlib.contextmanager
def whole_file(target: str | Path, what: str, mode: str = "wb") -> Iterator[IO]:
    """A file object whose contents land in ``target`` only if the block completes (see the module)."""
    target = Path(target)
    if target.is_dir():
        raise UsageError(f"{what}: cannot write {target}: it is a directory")
    binary = "b" in mode
    try:
        if _in_place(target):
            out = open(target, mode, **({"buffering": BUFFER_BYTES} if binary else {"encoding": "utf-8"}))
            temporary = None
        else:
            out = tempfile.NamedTemporaryFile(mode, dir=target.parent, prefix=f".{target.name}.", suffix=".partial",
                                              delete=False, **({"buffering": BUFFER_BYTES} if binary else {"encoding": "utf-8"}))
            temporary = out.name
    except OSError as exc:
        raise cannot_write(what, target, exc, UsageError) from None
    try:
        try:
            with out:
                yield out
                out.flush()
                if temporary is not None:
                    os.fsync(out.fileno())
                    os.chmod(out.fileno(), 0o666 & ~_umask())  # as open() would have made it
            if temporary is not None:
                os.replace(temporary, target)
                temporary = None
        finally:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
    except OSError as exc:
        raise cannot_write(what, target, exc) from None
