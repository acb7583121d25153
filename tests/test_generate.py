"""The generator against TSBS's own output (shared/tsbs-golden), and its options and errors."""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import shlex

import numpy as np
import pandas as pd
import pytest

from harness.tsbs.choices import SymbolDtype
from harness.ingest.ilp import write_ilp
from harness.tsbs.cpu_only import generator as cpu_only
from harness.tsbs.go.rand import GoRand
from harness.tsbs.params import parse_go_duration_ns, parse_rfc3339_ns
from harness.tsbs.use_cases import make_spec
from helpers import GOLDEN_DIR, assert_one_error_line, run_cli



def golden_cases() -> list[tuple[str, list[str], str]]:
    """(file name, tsbs_generate_data flags, md5) of every cpu-only row of the golden README's table."""
    readme = (GOLDEN_DIR / "README.md").read_text()
    cases = []
    for name, flags, md5 in re.findall(r"^\| (\S+\.ilp\.gz) \| `([^`]+)` \| \d+ \| ([0-9a-f]{32}) \|$", readme, re.M):
        if "--use-case=cpu-only" in flags:
            cases.append((name, shlex.split(flags), md5))
    return cases




def test_golden_readme_lists_the_cpu_only_files():
    names = [name for name, _, _ in golden_cases()]
    assert len(names) == 3, names


@pytest.mark.parametrize("name,flags,md5", golden_cases(), ids=[c[0] for c in golden_cases()])
def test_generate_reproduces_tsbs_byte_for_byte(tmp_path, name, flags, md5):
    out = tmp_path / "out.ilp"
    result = run_cli("generate", *flags, "--fields", "long", "--file", str(out), timeout=300, text=False)
    assert result.returncode == 0, result.stderr.decode()
    produced = out.read_bytes()
    expected = gzip.open(GOLDEN_DIR / name).read()
    assert hashlib.md5(expected).hexdigest() == md5
    if produced != expected:
        for number, (ours, theirs) in enumerate(zip(produced.splitlines(), expected.splitlines())):
            assert ours == theirs, f"line {number} differs"
    assert produced == expected


@pytest.mark.slow
def test_generate_writes_stdout_and_is_repeatable_by_seed():
    flags = ["--scale", "3", "--timestamp-end", "2016-01-01T00:01:00Z", "--fields", "long"]
    first = run_cli("generate", *flags, timeout=300, text=False)
    assert first.returncode == 0
    seed = re.search(rb"seed: (\d+)", first.stderr)
    assert seed, "a run without --seed must print the seed it drew"
    again = run_cli("generate", *flags, "--seed", seed.group(1).decode(), timeout=300, text=False)
    assert again.stdout == first.stdout
    assert again.stderr == b""  # no seed line when the seed was given
    assert len(first.stdout.splitlines()) == 3 * 6


def spec_small(**overrides):
    values = dict(seed=123, scale=10, timestamp_end="2016-01-01T00:10:00Z")
    values.update(overrides)
    return make_spec(**values)


def concatenated(spec, chunk_rows, fields="double", symbol_dtype="category") -> pd.DataFrame:
    frames = list(cpu_only.frames(spec, chunk_rows, fields, symbol_dtype))
    assert all(len(frame) == chunk_rows for frame in frames[:-1])
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("chunk_rows", [1, 7, 10, 11, 59, 600, 100_000])
def test_any_chunk_size_gives_the_same_rows(chunk_rows):
    spec = spec_small()
    reference = concatenated(spec, 60)
    assert len(reference) == spec.row_count == 600
    pd.testing.assert_frame_equal(concatenated(spec, chunk_rows), reference)


@pytest.mark.slow
def test_any_chunk_size_gives_the_same_ilp_bytes():
    spec = spec_small(scale=7)
    outputs = set()
    for chunk_rows in (1, 5, 7, 8, 1000):
        buffer = io.BytesIO()
        write_ilp(cpu_only.chunks(spec, chunk_rows, "long"), buffer, workers=1 + chunk_rows % 3)
        outputs.add(buffer.getvalue())
    assert len(outputs) == 1


@pytest.mark.parametrize("first_chunk_rows,chunk_rows", [(1, 60), (7, 60), (25, 10), (59, 60), (600, 7)])
def test_a_smaller_first_chunk_gives_the_same_rows(first_chunk_rows, chunk_rows):
    spec = spec_small()
    frames = list(cpu_only.frames(spec, chunk_rows, first_chunk_rows=first_chunk_rows))
    sizes = [len(frame) for frame in frames]
    assert sizes[0] == min(first_chunk_rows, chunk_rows) and all(size == chunk_rows for size in sizes[1:-1])
    pd.testing.assert_frame_equal(pd.concat(frames, ignore_index=True), concatenated(spec, 60))


def test_columns_and_dtypes():
    frame = next(cpu_only.frames(spec_small(), 100, "double"))
    assert tuple(frame.columns) == cpu_only.COLUMNS
    for tag in cpu_only.TAG_COLUMNS:
        assert isinstance(frame[tag].dtype, pd.CategoricalDtype)
    for field in cpu_only.FIELD_COLUMNS:
        assert frame[field].dtype == np.float64
    assert str(frame["timestamp"].dtype) == "datetime64[ns]"  # UTC without a zone (hosts.utc_timestamps)
    assert frame["timestamp"].iloc[0] == pd.Timestamp("2016-01-01T00:00:00")
    # time-major: every host of an epoch, then the next epoch
    assert list(frame["hostname"].iloc[:12]) == [f"host_{n}" for n in range(10)] + ["host_0", "host_1"]
    assert frame["timestamp"].iloc[10] == pd.Timestamp("2016-01-01T00:00:10")
    long_frame = next(cpu_only.frames(spec_small(), 100, "long"))
    for field in cpu_only.FIELD_COLUMNS:
        assert long_frame[field].dtype == np.int64


@pytest.mark.slow
def test_double_and_long_share_tags_timestamps_and_truncate_alike():
    spec = spec_small(scale=50, timestamp_end="2016-01-01T01:00:00Z")
    doubles = concatenated(spec, 977, "double")
    longs = concatenated(spec, 977, "long")
    non_fields = list(cpu_only.TAG_COLUMNS) + ["timestamp"]
    pd.testing.assert_frame_equal(doubles[non_fields], longs[non_fields])
    values = doubles[list(cpu_only.FIELD_COLUMNS)].to_numpy()
    assert values.min() >= 0.0 and values.max() <= 100.0
    assert (values != np.trunc(values)).any(), "double mode must keep the fractional walk states"
    np.testing.assert_array_equal(np.trunc(values).astype(np.int64), longs[list(cpu_only.FIELD_COLUMNS)].to_numpy())


@pytest.mark.parametrize("symbol_dtype", tuple(SymbolDtype))
def test_every_symbol_dtype_serializes_to_the_same_bytes(symbol_dtype):
    spec = spec_small(scale=5)
    expected, actual = io.BytesIO(), io.BytesIO()
    write_ilp(cpu_only.chunks(spec, 64, "long"), expected)
    write_ilp(cpu_only.chunks(spec, 64, "long", symbol_dtype), actual)
    assert actual.getvalue() == expected.getvalue()


def test_row_limit_stops_inside_an_epoch():
    spec = make_spec(seed=5, scale=4, timestamp_end=None, row_limit=10)
    frame = concatenated(spec, 3)
    assert len(frame) == 10
    assert list(frame["hostname"].iloc[8:]) == ["host_0", "host_1"]
    assert frame["timestamp"].iloc[-1] == pd.Timestamp("2016-01-01T00:00:20")


@pytest.mark.slow
def test_go_math_rand_stream():
    """Values printed by Go's math/rand (v1) after rand.Seed(123): five rounds of
    Float64, Intn(9), Int63n(100), Intn(3), Int63n(20); then the sum of 2,000,000 NormFloat64
    (summed in order) and the next NormFloat64."""
    rng = GoRand(123)
    draws = [(rng.float64(), rng.intn(9), rng.int63n(100), rng.intn(3), rng.int63n(20)) for _ in range(5)]
    assert draws == [
        (0.5813171323049762, 0, 43, 2, 7),
        (0.6364992071061983, 8, 91, 1, 8),
        (0.5104406680293322, 2, 6, 2, 5),
        (0.20495415740612813, 3, 63, 0, 3),
        (0.11395465318049884, 3, 25, 2, 9),
    ]
    total = 0.0
    for _ in range(2_000_000):
        total += rng.norm_float64()
    assert total == -2564.3291792056048
    assert rng.norm_float64() == 0.05799550773144457


def test_go_seed_reductions_match_go():
    # Go reduces the seed modulo 2**31-1 and maps 0 to 89482311: these seeds must give equal streams.
    assert GoRand(0).int63() == GoRand(89482311).int63()
    assert GoRand(2**31 - 1).int63() == GoRand(89482311).int63()
    assert GoRand(-7).int63() == GoRand(2**31 - 1 - 7).int63()


@pytest.mark.parametrize(
    "text,nanos",
    [("10s", 10**10), ("1m30s", 90 * 10**9), ("1.5h", 5400 * 10**9), ("500ms", 5 * 10**8), ("250us", 250_000), ("7ns", 7)],
)
def test_go_durations(text, nanos):
    assert parse_go_duration_ns(text) == nanos


@pytest.mark.parametrize(
    "text,nanos",
    [
        ("2016-01-01T00:00:00Z", 1451606400 * 10**9),
        ("2016-01-01T01:00:00+01:00", 1451606400 * 10**9),
        ("2016-01-01T00:00:00.000000001Z", 1451606400 * 10**9 + 1),
    ],
)
def test_rfc3339(text, nanos):
    assert parse_rfc3339_ns(text) == nanos


@pytest.mark.parametrize(
    "args,message",
    [
        (["--timestamp-end", "2016-01-01T00:00:00Z"], "must be after"),
        (["--timestamp-end", "2015-06-01T00:00:00Z"], "must be after"),
        (["--log-interval", "0s"], "--log-interval"),
        (["--log-interval", "-10s"], "--log-interval"),
        (["--log-interval", "ten seconds"], "--log-interval"),
        (["--scale", "0"], "--scale"),
        (["--scale", "-3"], "--scale"),
        (["--use-case", "trucks"], "unknown use case"),
        (["--timestamp-start", "2016/01/01"], "--timestamp-start"),
        (["--timestamp-end", "tomorrow"], "--timestamp-end"),
        (["--fields", "float"], "--fields"),
        (["--chunk-rows", "0"], "chunk"),
        (["--file", "/nonexistent-dir/out.ilp"], "--file"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args, message):
    result = run_cli("generate", "--scale", "2", *args, timeout=300, text=False)
    assert result.returncode == 2, result
    assert_one_error_line(result.stderr.decode(), message)
