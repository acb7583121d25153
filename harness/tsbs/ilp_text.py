"""TSBS's integer-valued rows printed as ILP text, byte for byte as ``tsbs_generate_data`` prints them.

What `generate --fields long` writes for cpu-only: every value is a walk state truncated to an integer and
every tag a host's fixed string, so a line is the host's precomputed prefix, the fields as ``name=<int>i``
and the epoch's timestamp (the loop itself: ``kernels.print_rows``). Printed straight from the walk's
arrays, a file that is only ever text costs no DataFrames and no pandas or client import (the rates are in
docs/generator.md and results/reference/). The questdb
client stays the serializer of everything sent or benchmarked and of doubles (their shortest round-trip
digits); the tests hold both printers to TSBS's golden files and to each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import ModuleType

import numpy as np

from harness.tsbs.kernel_cache import generator_kernels

# ILP's special characters in a measurement, tag or field name or a tag value: TSBS's have none, so the
# printer escapes nothing and refuses them instead.
_SPECIAL = re.compile(r'[ ,=\\\n\r"]')
# The longest int64 in decimal ("-9223372036854775808"), fields and timestamps alike.
INT_TEXT_BYTES = 20


class RowPrinter:
    """Prints rows ``first_row ..`` of a data set whose row r is host ``r % scale`` at epoch ``r // scale``:
    ``<measurement>,<tag>=<value>... <field>=<int>i,... <timestamp>``, fields truncated toward zero as Go's
    ``int64(float64)``."""

    def __init__(self, measurement: str, host_tags: dict[str, Sequence[str]], fields: Sequence[str],
                 start_ns: int, interval_ns: int, kernels: ModuleType | None = None):
        """``host_tags``: each tag's value for every host, in line order; ``fields``: the field names in order;
        ``kernels``: whose ``print_rows`` runs (default: ``kernel_cache.generator_kernels()``)."""
        distinct = {measurement, *host_tags, *fields}.union(*map(set, host_tags.values()))
        if _SPECIAL.search("".join(distinct)):
            raise ValueError("an ILP name or tag value with a character that would need escaping")
        # Host by host: the measurement, then ",tag=value" for each tag (one zip over the tags' columns).
        columns = [[f",{tag}={value}" for value in values] for tag, values in host_tags.items()]
        prefixes = [measurement + "".join(parts) for parts in zip(*columns)]
        scale = len(prefixes)
        self._prefixes, self._prefix_starts = _packed(prefixes)
        self._keys, self._key_starts = _packed([(" " if position == 0 else ",") + f"{field}="
                                                for position, field in enumerate(fields)])
        self.scale = scale
        self.fields = len(fields)
        self._start_ns, self._interval_ns = start_ns, interval_ns
        self._kernels = kernels or generator_kernels()
        longest_prefix = int(np.diff(self._prefix_starts).max())
        self.max_line_bytes = (longest_prefix + len(self._keys) + self.fields * (INT_TEXT_BYTES + 1)
                               + 1 + INT_TEXT_BYTES + 1)

    def print_rows(self, first_row: int, values: np.ndarray, row_step: int = 1) -> np.ndarray:
        """The text of rows ``first_row``, ``first_row + row_step``, ...: ``values`` holds their fields, shape
        (fields, rows) (any strides: a group's rows are a strided slice of the walk's)."""
        if values.shape[0] != self.fields:
            raise ValueError(f"{values.shape[0]} fields given, {self.fields} expected")
        out = np.empty(values.shape[1] * self.max_line_bytes, dtype=np.uint8)
        stamp = np.empty(1 + INT_TEXT_BYTES + 1, dtype=np.uint8)
        length = self._kernels.print_rows(
            values, first_row, row_step, self.scale, self._prefixes, self._prefix_starts,
            self._keys, self._key_starts, self._start_ns, self._interval_ns, stamp, out)
        return out[:length]


def _packed(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """ASCII texts as one byte array and the start of each (plus the end of the last)."""
    encoded = [text.encode("ascii") for text in texts]
    starts = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(text) for text in encoded], out=starts[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), starts
