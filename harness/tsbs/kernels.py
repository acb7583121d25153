"""The compiled loops of cpu-only generation: creating the hosts, walking the epochs, printing TSBS's lines.

numba functions, run either just in time (numba's cache, ``cache=True``) or from the extension module that
``kernel_cache`` compiles ahead of time from this very file; callers take them from
``kernel_cache.generator_kernels()``, never from here. What each computes is owned by its caller's module:
the draw order by ``cpu_only``, the line layout by ``ilp_text``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic

from harness.tsbs.go.rand import go_float64, go_int31n, go_int63n, go_norm_float64
from harness.tsbs.numba_cache import use_source_keyed_cache

use_source_keyed_cache()  # before the first kernel below is defined

# Columns of the host table's tag codes (``tag_codes``): hosts.TAG_COLUMNS after hostname, in order.
_REGION, _DATACENTER, _RACK, _OS, _ARCH, _TEAM, _SERVICE, _SERVICE_VERSION, _SERVICE_ENVIRONMENT = range(9)

# (name, numba signature) of every function exported by the ahead-of-time build: exact argument types,
# which the callers pass (int64 scalars, C-contiguous arrays; print_rows' values may be a strided slice of
# the walk's block, read in place rather than copied).
EXPORTS = (
    ("create_hosts", "void(u8[::1], i8[::1], i8, i8[::1], i8[::1], f8[:, ::1], i8[:, ::1])"),
    ("walk_epochs", "void(u8[::1], i8[::1], f8[:, ::1], b1, f8[:, ::1])"),
    ("print_rows", "i8(f8[:, :], i8, i8, i8, u1[::1], i8[::1], u1[::1], i8[::1], i8, i8, u1[::1], u1[::1])"),
)


@numba.njit(cache=True)
def draw_host_tags(words, cursor, host, datacenter_offsets, datacenter_counts, tag_codes):
    """One host's tags, drawn in TSBS's order (shared by every devops-family use case)."""
    region = go_int31n(words, cursor, 9)
    tag_codes[host, _REGION] = region
    tag_codes[host, _DATACENTER] = datacenter_offsets[region] + go_int31n(
        words, cursor, datacenter_counts[region]
    )
    tag_codes[host, _RACK] = go_int63n(words, cursor, 100)
    tag_codes[host, _ARCH] = go_int31n(words, cursor, 2)
    tag_codes[host, _OS] = go_int31n(words, cursor, 3)
    tag_codes[host, _SERVICE] = go_int63n(words, cursor, 20)
    tag_codes[host, _SERVICE_VERSION] = go_int63n(words, cursor, 2)
    tag_codes[host, _SERVICE_ENVIRONMENT] = go_int31n(words, cursor, 3)
    tag_codes[host, _TEAM] = go_int31n(words, cursor, 4)


@numba.njit(cache=True)
def create_hosts(words, cursor, scale, datacenter_offsets, datacenter_counts, states, tag_codes):
    """Every host's ten initial walk states (``states``, scale x 10) and tag codes (``tag_codes``)."""
    for host in range(scale):
        for field in range(10):
            states[host, field] = go_float64(words, cursor) * 100.0
        draw_host_tags(words, cursor, host, datacenter_offsets, datacenter_counts, tag_codes)


# nogil (just in time): serializer threads run while the next epochs are drawn.
@numba.njit(cache=True, nogil=True)
def walk_epochs(words, cursor, states, advance_first, values):
    """Fill ``values`` (10 x epochs*scale, column-major by field) with consecutive epochs."""
    scale = states.shape[0]
    epochs = values.shape[1] // scale
    for epoch in range(epochs):
        if epoch > 0 or advance_first:
            for host in range(scale):
                for field in range(10):
                    state = states[host, field] + go_norm_float64(words, cursor)
                    if state > 100.0:
                        state = 100.0
                    if state < 0.0:
                        state = 0.0
                    states[host, field] = state
        base = epoch * scale
        for field in range(10):
            for host in range(scale):
                values[field, base + host] = states[host, field]


@intrinsic
def _copy_bytes(typingctx, target, target_at, source, source_at, count):
    """``target[target_at:target_at + count] = source[source_at:...]`` as one memcpy (uint8 arrays that do
    not overlap): numba's own slice assignment or a byte loop costs several times more per line."""
    signature = types.void(target, target_at, source, source_at, count)

    def codegen(context, builder, sig, args):
        target_array = context.make_array(sig.args[0])(context, builder, args[0])
        source_array = context.make_array(sig.args[2])(context, builder, args[2])
        cgutils.raw_memcpy(builder, builder.gep(target_array.data, [args[1]]),
                           builder.gep(source_array.data, [args[3]]), args[4], 1)

    return signature, codegen


@numba.njit(cache=True, inline="always")
def _print_int(value, out, at):
    """Writes ``value`` in decimal at ``out[at]``; returns the position after it."""
    if value < 0:
        out[at] = 45  # "-"
        at += 1
        magnitude = np.uint64(-(value + 1)) + np.uint64(1)  # -INT64_MIN does not fit in int64
    else:
        magnitude = np.uint64(value)
    digits = 1
    rest = magnitude // np.uint64(10)
    while rest:
        digits += 1
        rest //= np.uint64(10)
    end = at + digits
    for position in range(end - 1, at - 1, -1):
        out[position] = 48 + np.uint8(magnitude % np.uint64(10))
        magnitude //= np.uint64(10)
    return end


@numba.njit(cache=True, nogil=True)
def print_rows(values, first_row, row_step, scale, prefixes, prefix_starts, keys, key_starts, start_ns, interval_ns,
               stamp, out):
    """Row ``first_row + i*row_step`` (host ``% scale``, epoch ``// scale``; a step > 1 prints an interleaved
    generation group's rows) as ``prefix[host]``, then per field
    ``key[field]``, ``int64(values[field, i])`` and ``i``, then `` <timestamp>\\n``; returns the bytes
    written to ``out``. The caller sizes the buffers (``ilp_text.RowPrinter``): ``stamp`` holds a timestamp
    line's end, ``out`` the longest line times the rows."""
    stamp[0] = 32  # " <timestamp>\n" of the current epoch
    stamp_epoch = -1
    stamp_end = 0
    at = 0
    for row in range(values.shape[1]):
        epoch, host = divmod(first_row + row * row_step, scale)
        start = prefix_starts[host]
        _copy_bytes(out, at, prefixes, start, prefix_starts[host + 1] - start)
        at += prefix_starts[host + 1] - start
        for field in range(values.shape[0]):
            start = key_starts[field]
            _copy_bytes(out, at, keys, start, key_starts[field + 1] - start)
            at += key_starts[field + 1] - start
            at = _print_int(np.int64(values[field, row]), out, at)
            out[at] = 105  # "i"
            at += 1
        if epoch != stamp_epoch:
            stamp_epoch = epoch
            stamp_end = _print_int(start_ns + epoch * interval_ns, stamp, 1)
            stamp[stamp_end] = 10  # "\n"
            stamp_end += 1
        _copy_bytes(out, at, stamp, 0, stamp_end)
        at += stamp_end
    return at
