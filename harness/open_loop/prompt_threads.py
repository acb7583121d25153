"""An open loop's process kept prompt (``prompt_threads``): nothing of it holds a worker whose chunk is due for
long."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator

# How often the interpreter hands the GIL over during an open loop (Python's default: 5 ms).
SWITCH_SECONDS = 0.0005


@contextlib.contextmanager
def prompt_threads() -> Iterator[None]:
    """Over the block, nothing of the process holds a worker whose chunk is due for long:

    - the interpreter hands the GIL over every ``SWITCH_SECONDS`` instead of every 5 ms, so a thread running
      Python (the sampler parsing /metrics, the chunk generator) gives way that soon;
    - the cyclic garbage collector leaves the objects made before the block alone (``gc.freeze``). A full
      collection walks every object of the process: with pandas, numba and the client loaded it stops every
      thread for 20-35 ms here, and a 30 s open loop set one off."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_SECONDS)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        sys.setswitchinterval(before)
