"""TSBS's ``iot`` simulation, draw for draw: trucks, their readings and diagnostics, and the batches TSBS
drops, delays and reorders, as records of the printed lines, which ``iot_text`` prints as TSBS's text and
``iot_frames`` turns into DataFrames. The tables' layout and the truck catalogue are ``iot_schema``'s; the
compiled loop is ``iot_kernels``.

Owns the order in which ``tsbs_generate_data --use-case=iot`` draws from Go's source (``go.rand``):

1. Every truck 0..scale-1 is created before any line: the initial states latitude ``Float64()*90``,
   longitude ``Float64()*180``, elevation ``Float64()*500``, heading ``Float64()*360`` (velocity, grade 0,
   fuel_consumption 25, fuel_state 1, status 0), then model ``Intn(3)``, fleet ``Intn(4)``, driver
   ``Intn(6)``, device_version ``Intn(4)``.
2. An underlying stream of points, epoch by epoch: every truck's readings, then every truck's diagnostics.
   Before the first point of each later epoch all trucks advance, truck by truck: the seven readings walks
   one ``Float64()`` step each (uniform, then clamped), fuel a uniform step (refilled to 1 when it hits 0),
   the load ``Float64()`` and, when that is >= 0.95, a new load ``Float64()*5000``, and status one
   ``NormFloat64()`` step clamped to [0, 5]. The load is one value shared by every truck (TSBS's
   distributions share a package-level uniform), so all diagnostics of an epoch show the last one drawn.
   Values are truncated toward zero to each field's decimals (``iot_schema.FIELDS``).
3. The printed lines come from that stream in batches of 10. Before each batch TSBS draws a configuration:
   ``Float64() < 0.01`` drops a whole batch (10 points, unprinted), ``Float64() < 0.05`` holds it back
   for later, and with batches held back ``Float64() < 0.5`` prints the oldest of them instead. Then per
   slot: with points held back ``Float64() < 0.5`` takes the oldest of them instead of a new point,
   ``Float64() < 0.1`` drops the point, ``Float64() < 0.1`` clears field ``Intn(7)`` (wrapped for
   diagnostics' 3), ``Float64() < 0.01`` clears tag ``Intn(8)``, ``Float64() < 0.3`` holds the point back.
   The slots' flags are drawn even when a held-back batch is printed instead. A slot whose point is
   dropped or held back takes the next point, under the next slot's take/drop/hold flags but its own
   clearing ones. When the stream is done (``--max-data-points`` points, else 2 x scale x epochs), what is
   held back follows: batches, then points 10 at a time. A dropped batch draws its 10 points and a slot
   keeps drawing past the stream's end, so a data set may end with a few lines at or after
   ``--timestamp-end``, as TSBS's does.

Everything runs in one numba kernel (``_simulate``) whose state lives in arrays between calls, so a data
set of any length comes out in bounded chunks: memory is the trucks (9 floats each) plus the lines of one
chunk and the few points held back. A line is a record of int64s (``_RECORD_COLUMNS``): the printed digits
of its values, not floats, so the printer and the frames read the same numbers.
"""


from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from harness.errors import ParameterError
from harness.tsbs import groups
from harness.tsbs.go.rand import GoRand
from harness.tsbs.iot.kernels import (
    _BATCH_SIZE,
    _BATCHES_COUNT,
    _BATCHES_HEAD,
    _CHOICE_COUNTS,
    _COUNTERS,
    _CURRENT_LENGTH,
    _CURRENT_POSITION,
    _ENTRIES_COUNT,
    _ENTRIES_HEAD,
    _EPOCH,
    _EPOCHS_TICKED,
    _FIELD_COUNTS,
    _FINISHED,
    _KIND,
    _MAX_POINTS,
    _NEEDS_ROOM,
    _RECORD_COLUMNS,
    _STATE,
    _STATE_COLUMNS,
    _VALUE_SCALES,
    _create_trucks,
    _simulate,
)
from harness.tsbs.iot.schema import ALL_TAGS, TABLES
from harness.tsbs.params import DatasetSpec

# Lines of both tables together; a line is ~250 bytes of text, 96 bytes as a record.
DEFAULT_CHUNK_ROWS = 100_000


class IotSimulator:
    """Stateful TSBS iot simulator: trucks on construction, then ``next_records`` hands out the records of
    the next printed lines, in TSBS's order."""

    def __init__(self, spec: DatasetSpec, held_points: int = 64, held_batches: int = 8):
        """``held_points``, ``held_batches``: the initial room for what TSBS holds back (doubled as needed;
        a batch needs room for 20 points and one batch before it starts)."""
        self.spec = spec
        self._rng = GoRand(spec.seed)
        scale = spec.scale
        self._states = np.empty((scale, _STATE_COLUMNS), dtype=np.float64)
        choices = np.empty((scale, 4), dtype=np.int64)
        _create_trucks(self._rng.words, self._rng.cursor, self._states, _CHOICE_COUNTS, choices)
        self.model, self.fleet, self.driver, self.device_version = (choices[:, column].copy() for column in range(4))
        self._load = np.zeros(1, dtype=np.float64)
        self._counters = np.zeros(_COUNTERS, dtype=np.int64)
        self._counters[_MAX_POINTS] = max_points(spec)
        self._current = np.empty((_BATCH_SIZE, _RECORD_COLUMNS), dtype=np.int64)
        # Held-back points and batches: ring buffers, doubled when a batch could overflow them.
        self._entries = np.empty((max(held_points, 2 * _BATCH_SIZE), _RECORD_COLUMNS), dtype=np.int64)
        self._batches = np.empty((max(held_batches, 1), _BATCH_SIZE, _RECORD_COLUMNS), dtype=np.int64)
        self._batch_lengths = np.zeros(self._batches.shape[0], dtype=np.int64)
        self._lines_printed = 0  # of the whole data set, for its groups

    @property
    def finished(self) -> bool:
        return self._counters[_STATE] == _FINISHED

    def next_records(self, lines: int) -> np.ndarray:
        """Records of the next ``lines`` printed lines, shape (≤ lines, record columns); fewer only at the end."""
        out = np.empty((lines, _RECORD_COLUMNS), dtype=np.int64)
        filled = 0
        while filled < lines and not self.finished:
            filled += _simulate(self._rng.words, self._rng.cursor, self._states, self._load, self._counters,
                                self._current, self._entries, self._batches, self._batch_lengths, _VALUE_SCALES,
                                _FIELD_COUNTS, len(ALL_TAGS), out[filled:])
            if self._counters[_STATE] == _NEEDS_ROOM:
                self._grow_queues()
        return out[:filled]

    def next_group_records(self, lines: int) -> np.ndarray:
        """Of the next ``lines`` printed lines, the records of the spec's group (``harness.tsbs.groups``): TSBS
        counts the lines it prints round robin over the groups."""
        records = self.next_records(lines)
        spec = self.spec
        if not spec.grouped:
            return records
        offset = groups.first_in_group(self._lines_printed, spec.group, spec.groups)
        self._lines_printed += len(records)
        return records[offset::spec.groups]

    def horizon(self) -> int:
        """The earliest epoch a line still to come can have: the stream's current epoch, or an earlier one
        of a point or batch held back (or of the batch being printed). Lines before it are final."""
        counters = self._counters
        if self.finished:
            return np.iinfo(np.int64).max
        earliest = int(counters[_EPOCHS_TICKED])
        pending = [self._current[counters[_CURRENT_POSITION]:counters[_CURRENT_LENGTH], _EPOCH]]
        entries = (counters[_ENTRIES_HEAD] + np.arange(counters[_ENTRIES_COUNT])) % self._entries.shape[0]
        pending.append(self._entries[entries, _EPOCH])
        for batch in (counters[_BATCHES_HEAD] + np.arange(counters[_BATCHES_COUNT])) % self._batches.shape[0]:
            pending.append(self._batches[batch, :self._batch_lengths[batch], _EPOCH])
        return min([earliest, *(int(epochs.min()) for epochs in pending if len(epochs))])

    def _grow_queues(self) -> None:
        """Double both ring buffers, oldest item first at index 0."""
        counters = self._counters
        self._entries = _doubled(self._entries, counters[_ENTRIES_HEAD])
        self._batches = _doubled(self._batches, counters[_BATCHES_HEAD])
        self._batch_lengths = _doubled(self._batch_lengths, counters[_BATCHES_HEAD])
        counters[_ENTRIES_HEAD] = counters[_BATCHES_HEAD] = 0


def _doubled(ring: np.ndarray, head: int) -> np.ndarray:
    grown = np.empty((2 * ring.shape[0], *ring.shape[1:]), dtype=ring.dtype)
    grown[:ring.shape[0]] = np.roll(ring, -int(head), axis=0)
    return grown


def max_points(spec: DatasetSpec) -> int:
    """Points of the underlying stream (TSBS's maxPoints): 2 x scale x epochs, capped by ``row_limit``
    (``--max-data-points``, which counts points drawn, not lines printed)."""
    points = (spec.end_ns - spec.start_ns) // spec.interval_ns * spec.scale * len(TABLES)
    return points if spec.row_limit is None else min(points, spec.row_limit)


def record_chunks(simulator: IotSimulator, chunk_rows: int, first_chunk_rows: int | None) -> Iterator[np.ndarray]:
    """Records of consecutive chunks of ``chunk_rows`` lines (the first of ``first_chunk_rows`` if given and
    smaller; the last may be shorter), in TSBS's order, or in time order if the spec says ``time_ordered``. A
    group's lines are taken from TSBS's order first, then sorted: the group is TSBS's."""
    if chunk_rows <= 0:
        raise ParameterError("chunk_rows", f"must be a positive number of rows, got {chunk_rows}")
    lines = min(first_chunk_rows or chunk_rows, chunk_rows)
    if simulator.spec.time_ordered:
        yield from _time_ordered_chunks(simulator, chunk_rows, lines)
        return
    if simulator.spec.grouped:
        yield from _rechunked(simulator, chunk_rows, lines)
        return
    while not simulator.finished:
        records = simulator.next_records(lines)
        if len(records):
            yield records
        lines = chunk_rows


def _rechunked(simulator: IotSimulator, chunk_rows: int, lines: int) -> Iterator[np.ndarray]:
    """A group's records in chunks of ``chunk_rows`` lines (the first of ``lines``), gathered from the group's
    share of the simulation's chunks: memory of two chunks, whatever the number of groups."""
    held: list[np.ndarray] = []
    held_lines = 0
    while not simulator.finished or held_lines:
        if not simulator.finished and held_lines < lines:
            records = simulator.next_group_records(chunk_rows)
            held.append(records)
            held_lines += len(records)
            continue
        merged = np.concatenate(held)
        yield merged[:lines]
        held, held_lines = [merged[lines:]], max(len(merged) - lines, 0)
        lines = chunk_rows


def _time_ordered_chunks(simulator: IotSimulator, chunk_rows: int, lines: int) -> Iterator[np.ndarray]:
    """The same lines sorted by epoch (a stable sort: TSBS's order within an epoch), in bounded memory: lines
    wait only until no line still to come can be earlier (``IotSimulator.horizon``), so what is held is the
    late lines' span, not the data set."""
    waiting = np.empty((0, _RECORD_COLUMNS), dtype=np.int64)
    ready: list[np.ndarray] = []
    ready_lines = 0
    while not simulator.finished or ready_lines:
        if not simulator.finished and ready_lines < lines:
            waiting = np.concatenate([waiting, simulator.next_group_records(chunk_rows)])
            final = waiting[:, _EPOCH] < simulator.horizon()
            if final.any():
                done = waiting[final]
                ready.append(done[np.argsort(done[:, _EPOCH], kind="stable")])
                ready_lines += len(done)
                waiting = waiting[~final]
            continue
        merged = np.concatenate(ready)
        yield merged[:lines]
        ready, ready_lines = [merged[lines:]], len(merged) - min(lines, len(merged))
        lines = chunk_rows


def line_count(spec: DatasetSpec, lines: int | None = None) -> dict[str, int]:
    """Lines per table among the first ``lines`` lines of the spec's group (default: all of them; of the whole
    data set when it is not grouped). TSBS's draws decide them, so this simulates the whole data set's lines
    up to there (about 3 M lines/s on one core), printing nothing."""
    simulator = IotSimulator(spec)
    counts = np.zeros(len(TABLES), dtype=np.int64)
    remaining = np.inf if lines is None else lines
    while remaining > 0 and not simulator.finished:
        records = simulator.next_group_records(int(min(DEFAULT_CHUNK_ROWS, remaining)))
        counts += np.bincount(records[:, _KIND], minlength=len(TABLES))
        remaining -= len(records)
    return dict(zip(TABLES, counts.tolist()))
