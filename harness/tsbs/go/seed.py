"""Seeding Go's math/rand (v1) source, as ``rand.Seed`` does: the 607-word register and its cursor.

Plain Python and NumPy, no numba: cpu-only's ahead-of-time kernels (``kernel_cache``) start from this state
without importing numba. The draws that advance it are ``go.rand``'s.
"""

from __future__ import annotations

import numpy as np

from harness.tsbs.go.tables import RNG_COOKED

REGISTER_LENGTH = 607
TAP = 273
INT32_MAX = (1 << 31) - 1
_UINT64_MASK = (1 << 64) - 1


def _park_miller_step(x: int) -> int:
    """seedrand: x * 48271 mod (2**31 - 1), by Schrage's method as Go writes it (x is positive)."""
    hi, lo = divmod(x, 44488)
    x = 48271 * lo - 3399 * hi
    if x < 0:
        x += INT32_MAX
    return x


def seeded_source(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(words, cursor) of a source after ``Seed(seed)``: the register (uint64) and [tap, feed] (int64),
    which the draws step backwards through the register."""
    seed %= INT32_MAX  # Go's truncated remainder plus its "if seed < 0 { seed += int32max }"
    if seed == 0:
        seed = 89482311
    words = np.empty(REGISTER_LENGTH, dtype=np.uint64)
    x = seed
    for i in range(-20, REGISTER_LENGTH):
        x = _park_miller_step(x)
        if i >= 0:
            u = (x << 40) & _UINT64_MASK
            x = _park_miller_step(x)
            u ^= x << 20
            x = _park_miller_step(x)
            u ^= x
            u ^= int(RNG_COOKED[i]) & _UINT64_MASK
            words[i] = u
    return words, np.array([0, REGISTER_LENGTH - TAP], dtype=np.int64)
