"""TSBS's iot lines as text, byte for byte as ``tsbs_generate_data --use-case=iot --format=questdb`` prints
them, from the simulation's records (``harness.tsbs.iot.use_case``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import numba
import numpy as np

from harness.tsbs.iot.kernels import _CLEARED_FIELD, _CLEARED_TAG, _EPOCH, _KIND, _TRUCK, _VALUES
from harness.tsbs.iot.schema import (
    ALL_TAGS,
    DEVICE_VERSIONS,
    DRIVERS,
    FIELDS,
    FLEETS,
    MAX_FIELD_COUNT,
    MODELS,
    NUMERIC_TAGS,
    STRING_TAGS,
    TABLES,
    TRUCK_NAME_PREFIX,
)
from harness.tsbs.iot.simulator import DEFAULT_CHUNK_ROWS, IotSimulator, record_chunks

# The byte copy and integer printer of cpu-only's text printer, reused for the same job.
from harness.tsbs.kernels import _copy_bytes, _print_int
from harness.tsbs.numba_cache import use_source_keyed_cache
from harness.tsbs.params import DatasetSpec

use_source_keyed_cache()  # before the first kernel below is defined


@numba.njit(cache=True, inline="always")
def _put(out, at, pieces, starts, piece):
    length = starts[piece + 1] - starts[piece]
    _copy_bytes(out, at, pieces, starts[piece], length)
    return at + length


@numba.njit(cache=True, inline="always")
def _print_decimal(digits, decimals, out, at):
    """``digits`` / 10**decimals as Go's shortest 'f' format prints that double: no exponent, no trailing
    zeros. The shortest digits are exactly ``digits``: a decimal of at most 15 significant digits is the
    shortest of its nearest double, and TSBS's values have at most 8."""
    if decimals <= 0:
        return _print_int(digits, out, at)
    if digits < 0:
        out[at] = 45  # "-"
        at += 1
        digits = -digits
    unit = np.int64(10) ** decimals
    at = _print_int(digits // unit, out, at)
    fraction = digits % unit
    if fraction:
        while fraction % 10 == 0:
            fraction //= 10
            decimals -= 1
        out[at] = 46  # "."
        at += 1
        end = at + decimals
        for position in range(end - 1, at - 1, -1):
            out[position] = 48 + fraction % 10
            fraction //= 10
        at = end
    return at


@numba.njit(cache=True, nogil=True)
def _print_lines(records, model, fleet, driver, device_version, pieces, starts, measurement, name, tag_piece,
                 field_piece, decimals, start_ns, interval_ns, out):
    """TSBS's questdb line of each record into ``out``; returns the bytes written. String tags as tags (a
    cleared one left out), the model's numbers then the values as fields (a cleared one left out, commas
    between the rest), the timestamp in nanoseconds."""
    at = 0
    for row in range(records.shape[0]):
        kind = records[row, _KIND]
        truck = records[row, _TRUCK]
        cleared_tag = records[row, _CLEARED_TAG]
        cleared_field = records[row, _CLEARED_FIELD]
        at = _put(out, at, pieces, starts, measurement[kind])
        if cleared_tag != 0:
            at = _put(out, at, pieces, starts, name)
            at = _print_int(truck, out, at)
        if cleared_tag != 1:
            at = _put(out, at, pieces, starts, tag_piece[1, fleet[truck]])
        if cleared_tag != 2:
            at = _put(out, at, pieces, starts, tag_piece[2, driver[truck]])
        if cleared_tag != 3:
            at = _put(out, at, pieces, starts, tag_piece[3, model[truck]])
        if cleared_tag != 4:
            at = _put(out, at, pieces, starts, tag_piece[4, device_version[truck]])
        out[at] = 32  # " "
        at += 1
        first = True
        for tag in range(5, 8):
            if cleared_tag != tag:
                if not first:
                    out[at] = 44  # ","
                    at += 1
                first = False
                at = _put(out, at, pieces, starts, tag_piece[tag, model[truck]])
        for field in range(field_piece.shape[1]):
            piece = field_piece[kind, field]
            if piece < 0:
                break
            if field == cleared_field:
                continue
            if not first:
                out[at] = 44
                at += 1
            first = False
            at = _put(out, at, pieces, starts, piece)
            if decimals[kind, field] < 0:
                at = _print_int(records[row, _VALUES + field], out, at)
                out[at] = 105  # "i"
                at += 1
            else:
                at = _print_decimal(records[row, _VALUES + field], decimals[kind, field], out, at)
        out[at] = 32
        at += 1
        at = _print_int(start_ns + records[row, _EPOCH] * interval_ns, out, at)
        out[at] = 10  # "\n"
        at += 1
    return at


class LinePrinter:
    """Prints records as TSBS's ``--format=questdb`` lines (the same bytes as ``--format=influx``).

    The constant text is packed once into ``pieces`` (bytes; piece i is ``pieces[starts[i]:starts[i+1]]``):
    the measurement names, ``,name=truck_``, every choice of every tag and every field key; the kernel
    copies them by index (``tag_piece[tag, choice]``, ``field_piece[measurement, field]``)."""

    def __init__(self, simulator: IotSimulator):
        texts: list[str] = []

        def piece(text: str) -> int:
            texts.append(text)
            return len(texts) - 1

        self._measurement = np.array([piece(table) for table in TABLES], dtype=np.int64)
        self._name = piece(f",name={TRUCK_NAME_PREFIX}")  # the truck's number is printed after it
        choices = {1: FLEETS, 2: DRIVERS, 3: [model for model, *_ in MODELS], 4: DEVICE_VERSIONS}
        self._tag_piece = np.full((len(ALL_TAGS), max(map(len, choices.values()))), -1, dtype=np.int64)
        for tag, values in choices.items():
            for choice, value in enumerate(values):
                self._tag_piece[tag, choice] = piece(f",{STRING_TAGS[tag]}={value}")
        # The model's numbers are fields: no leading comma, the kernel puts commas between fields.
        for position, tag in enumerate(NUMERIC_TAGS):
            for model, numbers in enumerate(MODELS):
                self._tag_piece[len(STRING_TAGS) + position, model] = piece(f"{tag}={numbers[1 + position]}")
        self._field_piece = np.full((len(TABLES), MAX_FIELD_COUNT), -1, dtype=np.int64)
        self._decimals = np.full((len(TABLES), MAX_FIELD_COUNT), -1, dtype=np.int64)  # -1: an integer ("1i")
        for kind, table in enumerate(TABLES):
            for field, (key, decimals) in enumerate(FIELDS[table]):
                self._field_piece[kind, field] = piece(f"{key}=")
                self._decimals[kind, field] = -1 if decimals is None else decimals
        encoded = [text.encode("ascii") for text in texts]
        self._pieces = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        self._starts = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(text) for text in encoded], out=self._starts[1:])

        def widest(indexes) -> int:
            return max(len(encoded[index]) for index in np.ravel(indexes) if index >= 0)

        spec = simulator.spec
        # The longest line: the widest choice of every piece, a comma before each tag and field, each value
        # as a sign, 20 digits, a point and an "i", two spaces, the timestamp and the newline.
        self.max_line_bytes = (widest(self._measurement) + widest(self._name) + len(str(spec.scale))
                               + sum(widest(self._tag_piece[tag]) + 1 for tag in range(1, len(ALL_TAGS)))
                               + max(sum(widest(index) + 1 + 23 for index in row if index >= 0)
                                     for row in self._field_piece)
                               + 2 + 20 + 1)
        self._trucks = (simulator.model, simulator.fleet, simulator.driver, simulator.device_version)
        self._start_ns, self._interval_ns = spec.start_ns, spec.interval_ns

    def print_records(self, records: np.ndarray) -> np.ndarray:
        """The lines of ``records``, as bytes in a uint8 array."""
        out = np.empty(records.shape[0] * self.max_line_bytes, dtype=np.uint8)
        length = _print_lines(records, *self._trucks, self._pieces, self._starts, self._measurement, self._name,
                              self._tag_piece, self._field_piece, self._decimals, self._start_ns,
                              self._interval_ns, out)
        return out[:length]


def text_jobs(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS,
              first_chunk_rows: int | None = None) -> Iterator[Callable[[], tuple[int, list]]]:
    """TSBS's bytes in chunks of ``chunk_rows`` lines, as jobs that each print one chunk and return
    (lines, [its bytes]) (``ingest.ordered_write.write_in_order``); the simulation runs as the iterator
    advances, so a pool prints earlier chunks meanwhile."""
    simulator = IotSimulator(spec)
    printer = LinePrinter(simulator)
    for records in record_chunks(simulator, chunk_rows, first_chunk_rows):
        yield partial(_printed, printer, records)


def _printed(printer: LinePrinter, records: np.ndarray) -> tuple[int, list]:
    return len(records), [printer.print_records(records)]


def text_chunks(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[bytes]:
    """TSBS's bytes, ``chunk_rows`` lines at a time, on this thread."""
    for job in text_jobs(spec, chunk_rows):
        yield job()[1][0].tobytes()
