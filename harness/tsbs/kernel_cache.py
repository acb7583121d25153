"""Where the generator's compiled kernels are kept, and which of them run: numba's just-in-time cache, or
cpu-only's kernels compiled ahead of time into an extension module.

Both live in one folder named by a digest of every kernel source file, so that editing any of them
compiles anew. numba's own cache (``cache=True``) is invalidated only when the file defining a kernel
changes, not when a file it inlines from does: the kernels inline ``go.rand``'s draws, so an edited
``go/rand.py`` would otherwise keep running the old draws from the cache, and the bytes would silently stop
being TSBS's.

The ahead-of-time module (numba's ``pycc``, built by ``python -m harness.tsbs.kernel_cache``, which
``make setup`` runs) holds ``kernels.EXPORTS``; loading it needs neither numba nor a compiler, which takes
numba's import and start-up off every `generate --fields long` of cpu-only. Without a
build (no C compiler, or a kernel source edited since) the just-in-time kernels run: same bytes, slower
start. This module imports numba only to build, or when there is no build.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.machinery
import importlib.util
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType

from harness.tsbs.numba_cache import kernel_folder

AHEAD_OF_TIME_MODULE = "generator_kernels"


def ahead_of_time_path(folder: Path | None = None) -> Path:
    return (folder or kernel_folder()) / (AHEAD_OF_TIME_MODULE + importlib.machinery.EXTENSION_SUFFIXES[0])


def load_ahead_of_time(folder: Path | None = None) -> ModuleType | None:
    """The ahead-of-time kernels built for the current sources, or None when there is no such build."""
    path = ahead_of_time_path(folder)
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(AHEAD_OF_TIME_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def generator_kernels() -> ModuleType:
    """cpu-only's kernels (``kernels.EXPORTS``): built ahead of time when there is a build for the current
    sources, else numba's just-in-time ones."""
    built = load_ahead_of_time()
    if built is not None:
        return built
    from harness.tsbs import kernels

    return kernels


def describe() -> str:
    """Which cpu-only kernels run, for benchmarks' output."""
    path = ahead_of_time_path()
    return f"ahead of time ({path})" if path.is_file() else "numba's just-in-time (no ahead-of-time build: make setup)"


def build_ahead_of_time(folder: Path | None = None) -> Path:
    """Compile ``kernels.EXPORTS`` into ``ahead_of_time_path(folder)`` (about 10 s; needs a C compiler and
    Python's headers). Built in a scratch folder and moved into place, so a reader never sees half a file."""
    from harness.tsbs import kernels

    target = ahead_of_time_path(folder or kernel_folder())
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch, warnings.catch_warnings(), _releasing_gil():
        warnings.simplefilter("ignore")  # pycc is "pending deprecation" in numba, with no replacement yet
        from numba.pycc import CC

        compiler = CC(AHEAD_OF_TIME_MODULE)
        compiler.output_dir = scratch
        compiler.verbose = False
        for name, signature in kernels.EXPORTS:
            compiler.export(name, signature)(getattr(kernels, name).py_func)
        compiler.compile()
        built = Path(scratch) / target.name
        shutil.move(built, target)
    return target


@contextlib.contextmanager
def _releasing_gil():
    """pycc compiles every export with default flags, under which its Python wrapper keeps the GIL during
    the call. The kernels are declared ``nogil`` and `generate` relies on it (a pool prints chunks while the
    walk draws the next ones; docs/generator.md gives the cost of holding it), so
    for the build pycc's flags release it, as numba's JIT does for ``nogil=True``; put back afterwards."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from numba.pycc import compiler

    plain = compiler.Flags

    class ReleasingGil(plain):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = ReleasingGil
    try:
        yield
    finally:
        compiler.Flags = plain


def main() -> int:
    """Build the ahead-of-time kernels unless a build for the current sources exists; one line either way.
    A failed build is not an error (the just-in-time kernels give the same bytes): it says why and exits 0."""
    path = ahead_of_time_path()
    if path.is_file():
        print(f"ahead-of-time kernels: up to date ({path})")
        return 0
    try:
        print(f"ahead-of-time kernels: built ({build_ahead_of_time()})")
    except Exception as exc:  # noqa: BLE001 - whatever the compiler says, the JIT kernels remain
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        print(f"ahead-of-time kernels: not built, generate uses numba's just-in-time kernels ({reason})",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
