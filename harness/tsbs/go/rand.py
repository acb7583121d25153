"""Go's math/rand (v1) source and the draws TSBS makes from it, bit for bit.

TSBS seeds Go's global source with ``rand.Seed(seed)`` and draws everything from it: the additive
lagged Fibonacci generator of Mitchell and Reeds (607 words, tap 273), seeded through a
Park-Miller step and the ``rngCooked`` table (``go.seed``), with Go's ``Float64``, ``Intn`` (via ``Int31n``),
``Int63n`` and ``NormFloat64`` (Marsaglia-Tsang ziggurat) on top. This module owns that stream.

The scalar draws are numba functions over a state held in two arrays (``words``: the 607-word
register, ``cursor``: tap and feed), so hot loops elsewhere can call them without leaving native code.
"""

from __future__ import annotations

from fractions import Fraction

import numba
import numpy as np

from harness.tsbs.go.seed import REGISTER_LENGTH, seeded_source
from harness.tsbs.go.tables import ZIGGURAT_FN, ZIGGURAT_KN, ZIGGURAT_WN
from harness.tsbs.numba_cache import use_source_keyed_cache

use_source_keyed_cache()  # before the first kernel below is defined

_MASK63 = np.uint64((1 << 63) - 1)
_TWO_POW_63 = 9223372036854775808.0

# Start of the ziggurat's tail. Go computes 1.0/rn on the exact decimal constant, not on its float64
# rounding, so the reciprocal is derived the same way here.
ZIGGURAT_R = 3.442619855899
_ZIGGURAT_R_INVERSE = float(1 / Fraction("3.442619855899"))

_KN = ZIGGURAT_KN.astype(np.int64)
_WN = ZIGGURAT_WN.astype(np.float64)
_FN = ZIGGURAT_FN


class GoRand:
    """One seeded Go ``rngSource``: the register and the cursor that the numba draws advance."""

    def __init__(self, seed: int):
        self.words, self.cursor = seeded_source(seed)

    def float64(self) -> float:
        return float(go_float64(self.words, self.cursor))

    def intn(self, n: int) -> int:
        return int(go_int31n(self.words, self.cursor, n))

    def int63n(self, n: int) -> int:
        return int(go_int63n(self.words, self.cursor, n))

    def int63(self) -> int:
        return int(go_int63(self.words, self.cursor))

    def norm_float64(self) -> float:
        return float(go_norm_float64(self.words, self.cursor))


@numba.njit(cache=True, inline="always")
def go_uint64(words, cursor):
    tap = cursor[0] - 1
    if tap < 0:
        tap += REGISTER_LENGTH
    feed = cursor[1] - 1
    if feed < 0:
        feed += REGISTER_LENGTH
    x = words[feed] + words[tap]  # uint64: wraps like Go's int64 addition
    words[feed] = x
    cursor[0] = tap
    cursor[1] = feed
    return x


@numba.njit(cache=True, inline="always")
def go_int63(words, cursor):
    return np.int64(go_uint64(words, cursor) & _MASK63)


@numba.njit(cache=True, inline="always")
def go_int31(words, cursor):
    return go_int63(words, cursor) >> 32


@numba.njit(cache=True, inline="always")
def go_float64(words, cursor):
    while True:
        f = np.float64(go_int63(words, cursor)) / _TWO_POW_63
        if f != 1.0:
            return f


@numba.njit(cache=True)
def go_int31n(words, cursor, n):
    """Rand.Intn for n < 2**31, which Go implements as Int31n (rejection, then modulo)."""
    if n & (n - 1) == 0:
        return go_int31(words, cursor) & (n - 1)
    limit = (1 << 31) - 1 - (1 << 31) % n
    v = go_int31(words, cursor)
    while v > limit:
        v = go_int31(words, cursor)
    return v % n


@numba.njit(cache=True)
def go_int63n(words, cursor, n):
    if n & (n - 1) == 0:
        return go_int63(words, cursor) & (n - 1)
    limit = np.int64(np.uint64(_MASK63) - np.uint64(9223372036854775808) % np.uint64(n))
    v = go_int63(words, cursor)
    while v > limit:
        v = go_int63(words, cursor)
    return v % n


@numba.njit(cache=True, inline="always")
def go_norm_float64(words, cursor):
    while True:
        u = np.int64(go_int63(words, cursor) >> 31)  # Uint32, then reinterpreted as int32 below
        j = u - 4294967296 if u >= 2147483648 else u
        i = u & 0x7F
        x = np.float64(j) * _WN[i]
        if abs(j) < _KN[i]:
            return x
        if i == 0:
            # The base strip's tail, by Marsaglia's exponential rejection.
            while True:
                x = -np.log(go_float64(words, cursor)) * _ZIGGURAT_R_INVERSE
                y = -np.log(go_float64(words, cursor))
                if y + y >= x * x:
                    break
            if j > 0:
                return ZIGGURAT_R + x
            return -ZIGGURAT_R - x
        # Go evaluates this test in float32 arithmetic; numba keeps float32 op float32 in float32.
        wedge = _FN[i] + np.float32(go_float64(words, cursor)) * (_FN[i - 1] - _FN[i])
        if wedge < np.float32(np.exp(-0.5 * x * x)):
            return x


def random_subset(rng: GoRand, count: int, total: int) -> tuple[int, ...]:
    """TSBS's GetRandomSubsetPerm: ``Intn(total)`` until ``count`` distinct numbers, in draw order."""
    seen: set[int] = set()
    picked = []
    while len(picked) < count:
        number = rng.intn(total)
        if number not in seen:
            seen.add(number)
            picked.append(number)
    return tuple(picked)
