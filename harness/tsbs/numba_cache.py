"""Where numba keeps the generator's just-in-time kernels: a folder named by a digest of every source whose
code ends up inside a kernel, so an edited source never runs a stale kernel. Imports nothing of ours: the
modules that define kernels call ``use_source_keyed_cache`` before their first one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# Every file whose code ends up inside a compiled kernel, and the one that says how to compile them.
KERNEL_SOURCES = ("go/rand.py", "go/seed.py", "go/tables.py", "kernels.py", "devops/generator.py", "iot/kernels.py",
                  "iot/text.py", "kernel_cache.py", "numba_cache.py")
_HERE = Path(__file__).resolve().parent


def kernel_folder() -> Path:
    """``<base>/kernels-<digest>``; the base is ``$NUMBA_CACHE_DIR`` when set (the client image fills it at
    build time), else this package's ``__pycache__``."""
    digest = hashlib.sha256()
    for name in KERNEL_SOURCES:
        digest.update((_HERE / name).read_bytes())
    base = Path(os.environ.get("NUMBA_CACHE_DIR") or _HERE / "__pycache__")
    return base / f"kernels-{digest.hexdigest()[:16]}"


def use_source_keyed_cache() -> Path:
    """Point numba's just-in-time cache at ``kernel_folder()``; called at import by every module that
    defines kernels, before it defines one."""
    import numba

    folder = kernel_folder()
    numba.config.CACHE_DIR = str(folder)
    return folder
