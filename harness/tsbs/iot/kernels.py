"""The compiled loop of TSBS's iot simulation (``harness.tsbs.iot.use_case``'s docstring says what it draws, in which
order): the trucks' walks, the batches dropped, held back and reordered, each printed line as a record of
int64s. Its state lives in arrays the caller keeps between calls."""

from __future__ import annotations

import numba
import numpy as np

from harness.tsbs.go.rand import go_float64, go_int31n, go_norm_float64
from harness.tsbs.iot.schema import DEVICE_VERSIONS, DRIVERS, FIELDS, FLEETS, MAX_FIELD_COUNT, MODELS, TABLES
from harness.tsbs.numba_cache import use_source_keyed_cache

use_source_keyed_cache()  # before the first kernel below is defined

# --- The simulated truck: walk parameters in TSBS's order. ---
# Readings: (step low, step high, min, max) of each clamped walk; the step is Float64()*(high-low)+low.
_READINGS_WALKS = np.array([
    (-0.005, 0.005, -90.0, 90.0),     # latitude
    (-0.005, 0.005, -180.0, 180.0),   # longitude
    (-10.0, 10.0, 0.0, 5000.0),       # elevation
    (-10.0, 10.0, 0.0, 100.0),        # velocity
    (-5.0, 5.0, 0.0, 360.0),          # heading
    (-5.0, 5.0, 0.0, 100.0),          # grade
    (-5.0, 5.0, 0.0, 50.0),           # fuel_consumption
])
_STEP_LOW = _READINGS_WALKS[:, 0].copy()
_STEP_SPAN = _READINGS_WALKS[:, 1] - _READINGS_WALKS[:, 0]  # Go computes High-Low at each step: same double
_WALK_MIN, _WALK_MAX = _READINGS_WALKS[:, 2].copy(), _READINGS_WALKS[:, 3].copy()
_FUEL_LOW, _FUEL_HIGH = -0.001, 0.0
_LOAD_MAX = 5000.0
_LOAD_CHANGE_AT = 0.95  # 1 - loadChangeChance: the load changes when its motive draw is at least this
_STATUS_MAX = 5.0
# A truck's state row: the seven readings walks, then fuel, then status (the load is shared, see above).
_FUEL, _STATUS = 7, 8
_STATE_COLUMNS = 9
# What the kernels take from ``iot_schema`` they get as arguments, never as globals: numba's cache freezes a
# global's value and notices edits to this file only. Per measurement (row), each field's 10**decimals (a
# value is kept as its printed digits: value x 10**decimals, truncated), and how many fields it has.
_VALUE_SCALES = np.ones((len(TABLES), MAX_FIELD_COUNT))
for _kind, _table in enumerate(TABLES):
    _VALUE_SCALES[_kind, :len(FIELDS[_table])] = [10.0 ** (decimals or 0) for _, decimals in FIELDS[_table]]
_FIELD_COUNTS = np.array([len(FIELDS[table]) for table in TABLES], dtype=np.int64)
# A new truck's draws after its initial states, in TSBS's order: model, fleet, driver, device_version.
_CHOICE_COUNTS = np.array([len(MODELS), len(FLEETS), len(DRIVERS), len(DEVICE_VERSIONS)], dtype=np.int64)

# --- TSBS's batch configuration (iot/batch_config.go). ---
_BATCH_SIZE = 10
_BATCH_MISSING, _BATCH_OUT_OF_ORDER, _BATCH_INSERT_PREVIOUS = 0.01, 0.05, 0.5
_ENTRY_INSERT_PREVIOUS, _ENTRY_MISSING, _ENTRY_OUT_OF_ORDER = 0.5, 0.1, 0.3
_ZERO_TAG, _ZERO_FIELD = 0.01, 0.1

# --- A line as a record of int64s. ---
# measurement (0 readings, 1 diagnostics), truck, epoch, the cleared field's index (-1: none), the cleared
# tag's index (-1: none), then the values' printed digits (unused ones 0).
_KIND, _TRUCK, _EPOCH, _CLEARED_FIELD, _CLEARED_TAG, _VALUES = range(6)
_RECORD_COLUMNS = _VALUES + MAX_FIELD_COUNT

# --- The simulation's scalar state (``counters``): points drawn from the stream and its limit, where the
# stream is (next truck, measurement, epochs ticked), the batch being printed (length, position), the
# rings of held-back points (TSBS's out-of-order entries) and batches (head, count), and why it returned.
(_MADE, _MAX_POINTS, _NEXT_TRUCK, _NEXT_KIND, _EPOCHS_TICKED, _CURRENT_LENGTH, _CURRENT_POSITION,
 _ENTRIES_HEAD, _ENTRIES_COUNT, _BATCHES_HEAD, _BATCHES_COUNT, _STATE) = range(12)
_COUNTERS = 12
_RUNNING, _FINISHED, _NEEDS_ROOM = 0, 1, 2


@numba.njit(cache=True)
def _create_trucks(words, cursor, states, choice_counts, choices):
    """Every truck's initial states and its model, fleet, driver and device_version (``choices`` columns,
    each drawn below its ``choice_counts``)."""
    for truck in range(states.shape[0]):
        states[truck, 0] = go_float64(words, cursor) * 90.0
        states[truck, 1] = go_float64(words, cursor) * 180.0
        states[truck, 2] = go_float64(words, cursor) * 500.0
        states[truck, 3] = 0.0
        states[truck, 4] = go_float64(words, cursor) * 360.0
        states[truck, 5] = 0.0
        states[truck, 6] = 25.0
        states[truck, _FUEL] = 1.0
        states[truck, _STATUS] = 0.0
        for column in range(choices.shape[1]):
            choices[truck, column] = go_int31n(words, cursor, choice_counts[column])


@numba.njit(cache=True)
def _tick_all(words, cursor, states, load):
    """Advance every truck one epoch (TickAll), in TSBS's draw order."""
    for truck in range(states.shape[0]):
        for walk in range(7):
            state = states[truck, walk] + (go_float64(words, cursor) * _STEP_SPAN[walk] + _STEP_LOW[walk])
            if state > _WALK_MAX[walk]:
                state = _WALK_MAX[walk]
            if state < _WALK_MIN[walk]:
                state = _WALK_MIN[walk]
            states[truck, walk] = state
        fuel = states[truck, _FUEL] + (go_float64(words, cursor) * (_FUEL_HIGH - _FUEL_LOW) + _FUEL_LOW)
        if fuel > 1.0:
            fuel = 1.0
        if fuel < 0.0:
            fuel = 0.0
        if fuel == 0.0:  # refuelled
            fuel = 1.0
        states[truck, _FUEL] = fuel
        if go_float64(words, cursor) >= _LOAD_CHANGE_AT:
            load[0] = go_float64(words, cursor) * _LOAD_MAX
        status = states[truck, _STATUS] + (go_norm_float64(words, cursor) * 1.0 + 0.0)
        if status > _STATUS_MAX:
            status = _STATUS_MAX
        if status < 0.0:
            status = 0.0
        states[truck, _STATUS] = status


@numba.njit(cache=True)
def _next_point(words, cursor, states, load, counters, value_scales, record):
    """The underlying stream's next point into ``record`` (TSBS's BaseSimulator.Next: no end check)."""
    scale = states.shape[0]
    if counters[_NEXT_TRUCK] == scale:
        counters[_NEXT_TRUCK] = 0
        counters[_NEXT_KIND] += 1
    if counters[_NEXT_KIND] == 2:
        counters[_NEXT_KIND] = 0
        _tick_all(words, cursor, states, load)
        counters[_EPOCHS_TICKED] += 1
    truck = counters[_NEXT_TRUCK]
    kind = counters[_NEXT_KIND]
    record[:] = 0
    record[_KIND] = kind
    record[_TRUCK] = truck
    record[_EPOCH] = counters[_EPOCHS_TICKED]
    if kind == 0:
        for walk in range(7):
            record[_VALUES + walk] = np.int64(states[truck, walk] * value_scales[0, walk])
    else:
        record[_VALUES] = np.int64(states[truck, _FUEL] * value_scales[1, 0])
        record[_VALUES + 1] = np.int64(load[0] * value_scales[1, 1])
        record[_VALUES + 2] = np.int64(states[truck, _STATUS] * value_scales[1, 2])
    record[_CLEARED_FIELD] = -1
    record[_CLEARED_TAG] = -1
    counters[_MADE] += 1
    counters[_NEXT_TRUCK] += 1


@numba.njit(cache=True)
def _draw_batch_config(words, cursor, held_batches, held_entries, field_count, tag_count, take_held, missing,
                       held_back, cleared_field, cleared_tag):
    """One batch configuration (newBatchConfig): returns 1 for a dropped batch, 2 for one held back,
    3 for printing the oldest held-back batch instead, 0 for a plain batch; fills the per-slot flags."""
    if go_float64(words, cursor) < _BATCH_MISSING:
        return 1
    out_of_order = go_float64(words, cursor) < _BATCH_OUT_OF_ORDER
    insert_previous = False
    if held_batches > 0:
        insert_previous = go_float64(words, cursor) < _BATCH_INSERT_PREVIOUS
    for slot in range(_BATCH_SIZE):
        take_held[slot] = False
        missing[slot] = False
        held_back[slot] = False
        cleared_field[slot] = -1
        cleared_tag[slot] = -1
        if held_entries > 0 and go_float64(words, cursor) < _ENTRY_INSERT_PREVIOUS:
            take_held[slot] = True
            held_entries -= 1
        if go_float64(words, cursor) < _ENTRY_MISSING:
            missing[slot] = True
            continue
        if go_float64(words, cursor) < _ZERO_FIELD:
            cleared_field[slot] = go_int31n(words, cursor, field_count)
        if go_float64(words, cursor) < _ZERO_TAG:
            cleared_tag[slot] = go_int31n(words, cursor, tag_count)
        if go_float64(words, cursor) < _ENTRY_OUT_OF_ORDER:
            held_back[slot] = True
    if insert_previous:
        return 3
    if out_of_order:
        return 2
    return 0


@numba.njit(cache=True)
def _fill_batch(words, cursor, states, load, counters, value_scales, field_counts, entries, take_held, missing,
                held_back, cleared_field, cleared_tag, batch, scratch):
    """A batch of up to 10 lines into ``batch`` (generateBatch); returns its length."""
    capacity = entries.shape[0]
    offset = 0
    length = 0
    for slot in range(_BATCH_SIZE):
        if counters[_MADE] >= counters[_MAX_POINTS]:
            break
        while True:  # getNextEntry: flags are looked up at slot + offset, past the 10th none is set
            flag = slot + offset
            flagged = flag < _BATCH_SIZE
            if flagged and take_held[flag]:
                scratch[:] = entries[counters[_ENTRIES_HEAD]]
                counters[_ENTRIES_HEAD] = (counters[_ENTRIES_HEAD] + 1) % capacity
                counters[_ENTRIES_COUNT] -= 1
            else:
                _next_point(words, cursor, states, load, counters, value_scales, scratch)
            if flagged and missing[flag]:
                offset += 1
                continue
            if flagged and held_back[flag]:
                entries[(counters[_ENTRIES_HEAD] + counters[_ENTRIES_COUNT]) % capacity] = scratch
                counters[_ENTRIES_COUNT] += 1
                offset += 1
                continue
            break
        # The clearing flags belong to the slot, not to slot + offset.
        if cleared_field[slot] >= 0:
            scratch[_CLEARED_FIELD] = cleared_field[slot] % field_counts[scratch[_KIND]]
        if cleared_tag[slot] >= 0:
            scratch[_CLEARED_TAG] = cleared_tag[slot]
        batch[length] = scratch
        length += 1
    return length


@numba.njit(cache=True)
def _take_held_batch(current, batches, batch_lengths, counters):
    """The oldest held-back batch becomes the batch being printed."""
    head = counters[_BATCHES_HEAD]
    current[:] = batches[head]
    counters[_CURRENT_LENGTH] = batch_lengths[head]
    counters[_BATCHES_HEAD] = (head + 1) % batches.shape[0]
    counters[_BATCHES_COUNT] -= 1


@numba.njit(cache=True)
def _take_held_points(current, entries, counters):
    """Up to 10 of the oldest held-back points become the batch being printed."""
    length = min(counters[_ENTRIES_COUNT], _BATCH_SIZE)
    for position in range(length):
        current[position] = entries[counters[_ENTRIES_HEAD]]
        counters[_ENTRIES_HEAD] = (counters[_ENTRIES_HEAD] + 1) % entries.shape[0]
    counters[_ENTRIES_COUNT] -= length
    counters[_CURRENT_LENGTH] = length


@numba.njit(cache=True)
def _after_the_stream(current, entries, batches, batch_lengths, counters):
    """The stream is done: what was held back follows, batches first, then points 10 at a time. Returns
    ``_FINISHED`` once nothing is left, else ``_RUNNING``."""
    if counters[_BATCHES_COUNT] > 0:
        _take_held_batch(current, batches, batch_lengths, counters)
    elif counters[_ENTRIES_COUNT] > 0:
        _take_held_points(current, entries, counters)
    else:
        return _FINISHED
    return _RUNNING


@numba.njit(cache=True)
def _drop_batch(words, cursor, states, load, counters, value_scales, discarded):
    """flushBatch: ten points drawn and dropped, end of the stream or not."""
    for _ in range(_BATCH_SIZE):
        _next_point(words, cursor, states, load, counters, value_scales, discarded)


@numba.njit(cache=True)
def _hold_back_batch(words, cursor, states, load, counters, value_scales, field_counts, entries, take_held, missing,
                     held_back, cleared_field, cleared_tag, batches, batch_lengths, scratch):
    """A batch drawn as usual but queued behind the held-back ones instead of printed (unless empty)."""
    tail = (counters[_BATCHES_HEAD] + counters[_BATCHES_COUNT]) % batches.shape[0]
    length = _fill_batch(words, cursor, states, load, counters, value_scales, field_counts, entries, take_held,
                         missing, held_back, cleared_field, cleared_tag, batches[tail], scratch)
    if length > 0:
        batch_lengths[tail] = length
        counters[_BATCHES_COUNT] += 1


# nogil: a pool prints earlier chunks while this draws the next.
@numba.njit(cache=True, nogil=True)
def _simulate(words, cursor, states, load, counters, current, entries, batches, batch_lengths, value_scales,
              field_counts, tag_count, out):
    """Print the next lines (the iot Simulator's Next, batch by batch) into ``out`` until it is full or the
    data set ends (``counters[_STATE]``: finished), or the held-back queues need more room (needs room:
    grow them and call again). Returns the lines written."""
    take_held = np.zeros(_BATCH_SIZE, dtype=np.bool_)
    missing = np.zeros(_BATCH_SIZE, dtype=np.bool_)
    held_back = np.zeros(_BATCH_SIZE, dtype=np.bool_)
    cleared_field = np.full(_BATCH_SIZE, -1, dtype=np.int64)
    cleared_tag = np.full(_BATCH_SIZE, -1, dtype=np.int64)
    scratch = np.empty(out.shape[1], dtype=np.int64)
    discarded = np.empty(out.shape[1], dtype=np.int64)
    batch_capacity = batches.shape[0]
    written = 0
    counters[_STATE] = _RUNNING
    while written < out.shape[0]:
        if counters[_CURRENT_POSITION] < counters[_CURRENT_LENGTH]:
            out[written] = current[counters[_CURRENT_POSITION]]
            counters[_CURRENT_POSITION] += 1
            written += 1
            continue
        counters[_CURRENT_POSITION] = 0
        counters[_CURRENT_LENGTH] = 0
        while counters[_CURRENT_LENGTH] == 0:  # simulateNextBatch
            if counters[_MADE] >= counters[_MAX_POINTS]:
                counters[_STATE] = _after_the_stream(current, entries, batches, batch_lengths, counters)
                if counters[_STATE] == _FINISHED:
                    return written
                break
            # A batch adds at most 10 held-back points and one held-back batch: stop before it could overflow.
            if (counters[_ENTRIES_COUNT] + 2 * _BATCH_SIZE > entries.shape[0]
                    or counters[_BATCHES_COUNT] + 1 > batch_capacity):
                counters[_STATE] = _NEEDS_ROOM
                return written
            kind = _draw_batch_config(words, cursor, counters[_BATCHES_COUNT], counters[_ENTRIES_COUNT],
                                      field_counts.max(), tag_count, take_held, missing, held_back, cleared_field,
                                      cleared_tag)
            if kind == 3:
                _take_held_batch(current, batches, batch_lengths, counters)
            elif kind == 1:
                _drop_batch(words, cursor, states, load, counters, value_scales, discarded)
            elif kind == 2:
                _hold_back_batch(words, cursor, states, load, counters, value_scales, field_counts, entries,
                                 take_held, missing, held_back, cleared_field, cleared_tag, batches, batch_lengths,
                                 scratch)
            else:
                counters[_CURRENT_LENGTH] = _fill_batch(words, cursor, states, load, counters, value_scales,
                                                        field_counts, entries, take_held, missing, held_back,
                                                        cleared_field, cleared_tag, current, scratch)
    return written
