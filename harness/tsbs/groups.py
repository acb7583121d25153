"""TSBS's interleaved generation groups (``--interleaved-generation-group-id``/``--interleaved-generation-groups``):
which lines of a data set a group holds, and how many.

TSBS simulates the whole data set and counts the points it writes round robin: line i of the whole file (0-based,
over all tables together, in TSBS's order) belongs to group ``i % groups``. So group g of N is the whole file's
lines i with ``i % N == g``, in the same order, and the N groups together are the whole file, each line in
exactly one. The row limit (``--max-data-points``) cuts the whole simulation, before the split.

Everything here is arithmetic on line indices, so a use case keeps generating the whole data set in bounded chunks
as before and keeps 1/N of each chunk (cpu-only's printer prints only the group's rows, a strided slice of the
walk's; iot keeps the group's records before printing; devops the group's rows of each table's frame): memory is
a chunk's, whatever N.
"""

from __future__ import annotations

import math

import numpy as np

# Epochs counted per NumPy call when summing ranges (bounded memory for any length of time range).
_BLOCK = 1 << 20


def first_in_group(first_line: int, group: int, groups: int) -> int:
    """The offset, from line ``first_line``, of the first line of ``group``."""
    return (group - first_line) % groups


def lines_before(stop: int | np.ndarray, group: int, groups: int) -> int | np.ndarray:
    """Lines of ``group`` among lines ``0 .. stop-1``."""
    return np.maximum(stop - group + groups - 1, 0) // groups


def in_group(lines: np.ndarray, group: int, groups: int) -> np.ndarray:
    """Whether each line index of ``lines`` belongs to ``group``."""
    return lines % groups == group


def epoch_table_count(rows: int, first: int, per_epoch: int, stride: int, group: int, groups: int) -> int:
    """Lines of ``group`` among a table's first ``rows`` rows, where every epoch of ``stride`` lines holds
    ``per_epoch`` of them from its line ``first`` on (devops: every host's row of a measurement at the same
    place in each epoch; the last epoch may be cut). An epoch's count depends on where it starts modulo
    ``groups`` only, so the epochs repeat their counts every ``groups / gcd(stride, groups)``: one period is
    counted, and the epochs past the last whole period."""
    epochs, rest = divmod(rows, per_epoch)
    period = groups // math.gcd(stride, groups)
    periods = epochs // period

    def counted(first_epoch: int, last_epoch: int, length: int) -> int:
        total = 0
        for block in range(first_epoch, last_epoch, _BLOCK):
            starts = first + stride * np.arange(block, min(block + _BLOCK, last_epoch), dtype=np.int64)
            total += int((lines_before(starts + length, group, groups) - lines_before(starts, group, groups)).sum())
        return total

    return (periods * counted(0, min(period, epochs), per_epoch) + counted(periods * period, epochs, per_epoch)
            + counted(epochs, epochs + 1, rest))
