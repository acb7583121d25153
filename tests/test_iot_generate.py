"""The iot generator against TSBS's own output: the golden file of shared/tsbs-golden and small data sets
checked against `tsbs_generate_data --use-case=iot --format=questdb`, byte for byte; chunk sizes, queue
growth and the DataFrames against the same lines."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import math
import re
import shlex

import numpy as np
import pandas as pd
import pytest

from harness.errors import UsageError
from harness.tsbs.iot import use_case as iot
from harness.tsbs.iot.kernels import _EPOCH
from harness.tsbs.iot.schema import FIELDS, NUMERIC_TAGS, STRING_TAGS, TABLES, schemas
from harness.tsbs.params import DatasetSpec, parse_go_duration_ns, parse_rfc3339_ns
from harness.tsbs.schema import TIMESTAMP_COLUMN
from helpers import GOLDEN_DIR

GOLDEN_FILE = "iot_seed123_scale10_1h_10s.ilp.gz"


def iot_spec(seed: int, scale: int, start: str, end: str, interval: str, max_data_points: int = 0) -> DatasetSpec:
    """The data set of `tsbs_generate_data --use-case=iot` with these flags."""
    return DatasetSpec(use_case="iot", seed=seed, scale=scale, start_ns=parse_rfc3339_ns(start),
                       end_ns=parse_rfc3339_ns(end), interval_ns=parse_go_duration_ns(interval),
                       row_limit=max_data_points or None)


def text_of(spec: DatasetSpec, chunk_rows: int = iot.DEFAULT_CHUNK_ROWS) -> bytes:
    return b"".join(iot.text_chunks(spec, chunk_rows))


def golden_case() -> tuple[DatasetSpec, str, bytes]:
    """The golden file's spec (from the flags in its README row), md5 and bytes."""
    readme = (GOLDEN_DIR / "README.md").read_text()
    row = re.search(rf"^\| {re.escape(GOLDEN_FILE)} \| `([^`]+)` \| [^|]+ \| ([0-9a-f]{{32}}) \|$", readme, re.M)
    flags = dict(flag[2:].split("=", 1) for flag in shlex.split(row.group(1)))
    assert flags["use-case"] == "iot" and flags["format"] == "questdb"
    spec = iot_spec(int(flags["seed"]), int(flags["scale"]), flags["timestamp-start"], flags["timestamp-end"],
                    flags["log-interval"])
    return spec, row.group(2), gzip.open(GOLDEN_DIR / GOLDEN_FILE).read()


def test_golden_file_byte_for_byte():
    spec, md5, golden = golden_case()
    assert hashlib.md5(golden).hexdigest() == md5
    produced = text_of(spec)
    for number, (ours, theirs) in enumerate(zip(produced.splitlines(), golden.splitlines())):
        assert ours == theirs, f"line {number} differs"
    assert produced == golden


def test_golden_line_counts():
    # The README: 6513 lines, 3253 readings and 3260 diagnostics, 552 lines step back in time.
    spec, _, golden = golden_case()
    assert iot.line_count(spec) == {"readings": 3253, "diagnostics": 3260}
    first_lines = golden.splitlines()[:1000]
    assert iot.line_count(spec, 1000) == {table: sum(line.startswith(table.encode() + b",") for line in first_lines)
                                          for table in TABLES}
    stamps = [int(line.rsplit(b" ", 1)[1]) for line in golden.splitlines()]
    assert sum(later < earlier for earlier, later in zip(stamps, stamps[1:])) == 552


# Each case's md5 and line count are those of the output of
#   tsbs_generate_data --use-case=iot --seed=SEED --scale=SCALE --timestamp-start=START --timestamp-end=END
#                      --log-interval=INTERVAL --max-data-points=LIMIT --format=questdb
# built from github.com/questdb/tsbs at 30b5321 with Go 1.26 (--max-data-points=0: no limit).
GO_CASES = [
    # (seed, scale, start, end, interval, limit, lines, md5): why the case is there
    (1, 3, "2016-01-31T23:00:00Z", "2016-02-01T01:00:00Z", "7s", 0, 5575,
     "9931ad1b7f6fde7cb51e73b8ad001d2c"),  # an odd interval across a month boundary
    (42, 7, "2016-01-01T00:00:00Z", "2016-01-01T05:00:00Z", "1m30s", 0, 2493,
     "d6a9532fed20e46eb9b027fdaae3e9b9"),  # a compound interval
    (4611686018427387997, 5, "2016-02-29T12:00:00Z", "2016-02-29T13:00:00Z", "1s", 0, 32480,
     "241fc7f8e5faa01f2d2237e5e8799948"),  # a leap day, a large seed
    (-5, 3, "2016-01-01T00:00:00Z", "2016-01-01T00:00:20Z", "10s", 0, 12,
     "47407f3622977be398139778c46a76f4"),  # a negative seed
    (5, 10, "2016-01-01T00:00:00Z", "2016-01-01T01:00:00Z", "10s", 1001, 897,
     "fb76a0f1e7234e59641343e38453e0e7"),  # --max-data-points inside an epoch
    (5, 10, "2016-01-01T00:00:00Z", "2016-01-01T01:00:00Z", "10s", 7, 7,
     "c8c87e8821da893eb72a7896833df4d0"),  # a limit smaller than a batch
    (1, 1, "2016-01-01T00:00:00Z", "2016-01-01T00:00:10Z", "10s", 0, 3,
     "41f0ea29bfb3dd9a730668142e2086f5"),  # one epoch: TSBS prints a line of the epoch after the range
]


@pytest.mark.parametrize("seed, scale, start, end, interval, limit, lines, md5", GO_CASES)
def test_equals_tsbs_generate_data(seed, scale, start, end, interval, limit, lines, md5):
    produced = text_of(iot_spec(seed, scale, start, end, interval, limit), chunk_rows=1000)
    assert produced.count(b"\n") == lines
    assert hashlib.md5(produced).hexdigest() == md5


def test_text_is_the_same_for_any_chunk_size():
    spec, _, golden = golden_case()
    for chunk_rows in (1, 7, 10, 999, 10**6):
        assert text_of(spec, chunk_rows) == golden, chunk_rows
    first_small = b"".join(job()[1][0].tobytes() for job in iot.text_jobs(spec, 500, first_chunk_rows=3))
    assert first_small == golden


def timestamp_of(line: bytes) -> int:
    return int(line.rsplit(b" ", 1)[1])


def test_sorted_is_tsbs_file_in_time_order_for_any_chunk_size():
    """``--sort``: TSBS's own lines, stably sorted by timestamp (both tables together), whatever the chunks."""
    spec, _, golden = golden_case()
    expected = b"".join(sorted(golden.splitlines(keepends=True), key=timestamp_of))
    ordered = dataclasses.replace(spec, time_ordered=True)
    for chunk_rows in (1, 10, 999, 10**6):
        assert text_of(ordered, chunk_rows) == expected, chunk_rows
    first_small = b"".join(job()[1][0].tobytes() for job in iot.text_jobs(ordered, 500, first_chunk_rows=3))
    assert first_small == expected


def test_sorting_holds_back_only_the_late_lines():
    """The sort waits for a line only while an earlier one may still come (the simulation's held-back
    points and batches): far fewer lines than the data set are ever waiting."""
    spec = dataclasses.replace(iot_spec(3, 10, "2016-01-01T00:00:00Z", "2016-01-02T00:00:00Z", "10s"),
                               time_ordered=True)
    simulator = iot.IotSimulator(spec)
    lines, most_waiting, seen, horizon = 0, 0, [], 0
    while not simulator.finished:
        records = simulator.next_records(1000)
        assert (records[:, _EPOCH] >= horizon).all()  # the horizon promised no earlier line would come
        seen.append(records)
        lines += len(records)
        horizon = simulator.horizon()
        seen = [chunk[chunk[:, _EPOCH] >= horizon] for chunk in seen]
        most_waiting = max(most_waiting, sum(len(chunk) for chunk in seen))
    assert lines > 150_000 and 0 < most_waiting < 5_000


def test_held_back_queues_grow_without_changing_the_lines():
    # The least room there is forces the ring buffers to grow over and over.
    spec = iot_spec(3, 4, "2016-01-01T00:00:00Z", "2016-01-01T06:00:00Z", "10s")
    roomy, cramped = iot.IotSimulator(spec), iot.IotSimulator(spec, held_points=1, held_batches=1)
    expected, produced = roomy.next_records(10**6), cramped.next_records(10**6)
    assert roomy.finished and cramped.finished and len(expected) > 10_000
    assert np.array_equal(produced, expected)


@pytest.mark.slow
def test_chunks_are_the_same_for_any_chunk_size():
    spec = iot_spec(9, 3, "2016-01-01T00:00:00Z", "2016-01-01T00:20:00Z", "10s")

    def tables(chunk_rows: int, first_chunk_rows: int | None = None) -> dict[str, pd.DataFrame]:
        parts = {table: [] for table in TABLES}
        for chunk in iot.chunks(spec, chunk_rows, first_chunk_rows=first_chunk_rows):
            assert 0 < sum(map(len, chunk.values())) <= chunk_rows
            for table, frame in chunk.items():
                parts[table].append(frame)
        return {table: pd.concat(frames, ignore_index=True) for table, frames in parts.items()}

    whole = tables(10**6)
    for chunk_rows, first in ((1, None), (13, None), (500, 7)):
        for table, frame in tables(chunk_rows, first).items():
            pd.testing.assert_frame_equal(frame, whole[table])


def parsed_lines(text: bytes) -> dict[str, list[tuple[dict, dict, int]]]:
    """Per measurement, each line's (tags, fields as text, timestamp)."""
    lines = {table: [] for table in TABLES}
    for line in text.decode().splitlines():
        head, fields, stamp = line.split(" ")
        table, *tags = head.split(",")
        lines[table].append((dict(tag.split("=") for tag in tags), dict(f.split("=") for f in fields.split(",")),
                             int(stamp)))
    return lines


def test_frames_hold_what_the_lines_say():
    # TSBS prints each float in the shortest digits that read back as it, so parsing them gives the double.
    spec, _, golden = golden_case()
    frames = next(iot.chunks(spec, 10**6))
    for table, lines in parsed_lines(golden).items():
        frame = frames[table]
        assert list(frame.columns) == [name for name, _ in next(s for s in schemas() if s.table == table).columns]
        assert len(frame) == len(lines)
        records = frame.to_dict("records")
        for number, (row, (tags, fields, stamp)) in enumerate(zip(records, lines)):
            for tag in STRING_TAGS:
                assert (None if pd.isna(row[tag]) else row[tag]) == tags.get(tag), (table, number, tag)
            for name in NUMERIC_TAGS + tuple(field for field, _ in FIELDS[table]):
                value = row[name]
                if name not in fields:
                    assert pd.isna(value), (table, number, name)
                elif fields[name].endswith("i"):
                    assert value == int(fields[name][:-1]), (table, number, name)
                else:
                    assert not math.isnan(value) and value == float(fields[name]), (table, number, name)
            assert row[TIMESTAMP_COLUMN].value == stamp, (table, number)
    # Cleared values occur in the golden file, so the checks above saw both kinds.
    assert frames["readings"]["latitude"].isna().any() and frames["diagnostics"]["status"].isna().any()
    assert frames["readings"]["name"].isna().any()


def test_frame_dtypes():
    frames = next(iot.chunks(iot_spec(1, 2, "2016-01-01T00:00:00Z", "2016-01-01T01:00:00Z", "10s"), 10**6))
    diagnostics = frames["diagnostics"]
    assert all(isinstance(diagnostics[tag].dtype, pd.CategoricalDtype) for tag in STRING_TAGS)
    assert diagnostics["fuel_state"].dtype == np.float64 and diagnostics["status"].dtype == "Int64"
    assert str(diagnostics[TIMESTAMP_COLUMN].dtype) == "datetime64[ns]"


def test_schemas():
    readings, diagnostics = schemas()
    assert (readings.table, diagnostics.table) == TABLES
    assert readings.tags == diagnostics.tags == STRING_TAGS
    assert dict(diagnostics.fields)["status"] == "LONG" and dict(readings.fields)["latitude"] == "DOUBLE"
    assert readings.timestamp == TIMESTAMP_COLUMN


def test_bad_input():
    spec = iot_spec(1, 2, "2016-01-01T00:00:00Z", "2016-01-01T01:00:00Z", "10s")
    with pytest.raises(UsageError):
        next(iot.text_jobs(spec, 0))
    with pytest.raises(UsageError):
        next(iot.chunks(spec, 100, fields="float"))
