"""Where the generator's numba kernels keep their compiled machine code: a folder named by a digest of
every kernel source file, so that editing any of them compiles anew.

numba's own cache (``cache=True``) is invalidated only when the file defining a kernel changes, not when
a file it inlines from does: the cpu-only and devops kernels inline ``gorand``'s draws, so an edited
``gorand.py`` would otherwise keep running the old draws from the cache, and the bytes would silently stop
being TSBS's. Called by ``gorand`` at import, before any kernel is defined.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

# Every file whose code ends up inside a cached kernel.
KERNEL_SOURCES = ("gorand.py", "_go_tables.py", "cpu_only.py", "devops.py")
_HERE = Path(__file__).resolve().parent


def use_source_keyed_cache() -> Path:
    """Point numba's cache at ``<base>/kernels-<digest>``; the base is ``$NUMBA_CACHE_DIR`` when set
    (the client image fills it at build time), else this package's ``__pycache__``."""
    digest = hashlib.sha256()
    for name in KERNEL_SOURCES:
        digest.update((_HERE / name).read_bytes())
    base = Path(os.environ.get("NUMBA_CACHE_DIR") or _HERE / "__pycache__")
    folder = base / f"kernels-{digest.hexdigest()[:16]}"
    numba.config.CACHE_DIR = str(folder)
    return folder
