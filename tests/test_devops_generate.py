"""The devops generator against TSBS's own output (shared/tsbs-golden): nine measurements, byte for byte."""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import shlex

import numpy as np
import pandas as pd
import pytest

from harness.ingest.ilp import go_float_text, write_ilp
from harness.tsbs.devops import generator as devops
from harness.tsbs.devops.schema import MEASUREMENTS, TABLES, schemas
from harness.tsbs.use_cases import make_spec
from helpers import GOLDEN_DIR, run_cli





def devops_golden_cases() -> list[tuple[str, list[str], str]]:
    readme = (GOLDEN_DIR / "README.md").read_text()
    return [(name, shlex.split(flags), md5) for name, flags, md5 in
            re.findall(r"^\| (\S+\.ilp\.gz) \| `([^`]+)` \| \d+ \| ([0-9a-f]{32}) \|$", readme, re.M)
            if "--use-case=devops" in flags]


def golden_bytes(name: str, md5: str) -> bytes:
    data = gzip.open(GOLDEN_DIR / name).read()
    assert hashlib.md5(data).hexdigest() == md5
    return data


def spec_of(flags: list[str]):
    values = dict(flag[2:].split("=", 1) for flag in flags)
    return make_spec(use_case=values["use-case"], seed=int(values["seed"]), scale=int(values["scale"]),
                     timestamp_start=values["timestamp-start"], timestamp_end=values["timestamp-end"],
                     log_interval=values["log-interval"])


def ilp_of(spec, chunk_rows: int, workers: int = 1) -> bytes:
    out = io.BytesIO()
    write_ilp(devops.chunks(spec, chunk_rows, "long"), out, workers=workers, go_floats=True)
    return out.getvalue()


def assert_same_lines(produced: bytes, expected: bytes) -> None:
    for number, (ours, theirs) in enumerate(zip(produced.splitlines(), expected.splitlines())):
        assert ours == theirs, f"line {number} differs"
    assert produced == expected


def test_golden_readme_lists_the_devops_files():
    cases = devops_golden_cases()
    assert len(cases) == 3, cases
    # Between them: several seeds, scales and intervals.
    assert len({spec_of(flags).seed for _, flags, _ in cases}) == 3
    assert len({spec_of(flags).interval_ns for _, flags, _ in cases}) == 2


@pytest.mark.slow
@pytest.mark.parametrize("name,flags,md5", devops_golden_cases(), ids=[c[0] for c in devops_golden_cases()])
def test_generate_reproduces_tsbs_devops_byte_for_byte(tmp_path, name, flags, md5):
    out = tmp_path / "out.ilp"
    result = run_cli("generate", *flags, "--fields", "long", "--file", str(out), timeout=300, text=False)
    assert result.returncode == 0, result.stderr.decode()
    assert_same_lines(out.read_bytes(), golden_bytes(name, md5))


@pytest.mark.slow
@pytest.mark.parametrize("chunk_rows,workers", [(1, 1), (4, 2), (45, 1), (46, 2), (333, 2), (10**6, 1)])
def test_any_chunk_size_gives_the_same_bytes(chunk_rows, workers):
    name, flags, md5 = devops_golden_cases()[0]
    assert_same_lines(ilp_of(spec_of(flags), chunk_rows, workers), golden_bytes(name, md5))


@pytest.mark.slow
@pytest.mark.parametrize("first_chunk_rows,chunk_rows", [(1, 333), (44, 100), (46, 45), (500, 10**6)])
def test_a_smaller_first_chunk_gives_the_same_bytes(first_chunk_rows, chunk_rows):
    name, flags, md5 = devops_golden_cases()[0]
    spec = spec_of(flags)
    first, *_ = devops.chunks(spec, chunk_rows, "long", first_chunk_rows=first_chunk_rows)
    assert sum(len(frame) for frame in first.values()) == min(first_chunk_rows, chunk_rows, spec.row_count)
    out = io.BytesIO()
    write_ilp(devops.chunks(spec, chunk_rows, "long", first_chunk_rows=first_chunk_rows), out, go_floats=True)
    assert_same_lines(out.getvalue(), golden_bytes(name, md5))


@pytest.mark.slow
def test_max_data_points_stops_inside_an_epoch_as_tsbs():
    name, flags, md5 = devops_golden_cases()[0]
    expected = golden_bytes(name, md5)
    for limit in (1, 7, 45, 1000):
        result = run_cli("generate", *flags, "--fields", "long", "--max-data-points", str(limit), timeout=300, text=False)
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout == b"".join(expected.splitlines(keepends=True)[:limit])


@pytest.mark.slow
def test_chunks_hold_the_nine_tables_with_their_schemas_types():
    spec = make_spec(use_case="devops", seed=7, scale=4, timestamp_end="2016-01-01T00:01:00Z")
    for fields in ("long", "double"):
        chunks = list(devops.chunks(spec, 50, fields))
        assert sum(len(frame) for chunk in chunks for frame in chunk.values()) == spec.row_count == 6 * 4 * 9
        joined = {table: pd.concat([chunk[table] for chunk in chunks if table in chunk], ignore_index=True)
                  for table in TABLES}
        for schema in schemas(fields):
            frame = joined[schema.table]
            assert len(frame) == 6 * 4
            assert list(frame.columns) == [name for name, _ in schema.columns]
            for name, sql_type in schema.columns:
                kind = frame[name].dtype
                expected_kind = {"SYMBOL": "O", "LONG": "i", "DOUBLE": "f", "TIMESTAMP": "M"}[sql_type]
                actual_kind = "O" if isinstance(kind, pd.CategoricalDtype) else kind.kind
                assert actual_kind == expected_kind, (schema.table, name, kind, sql_type)
        assert chunks[0]["cpu"]["usage_user"].dtype == (np.int64 if fields == "long" else np.float64)


def test_double_fields_are_the_walk_states_that_long_truncates():
    spec = make_spec(use_case="devops", seed=11, scale=3, timestamp_end="2016-01-01T00:02:00Z")
    longs = {table: frame for chunk in devops.chunks(spec, 10**6, "long") for table, frame in chunk.items()}
    doubles = {table: frame for chunk in devops.chunks(spec, 10**6, "double") for table, frame in chunk.items()}
    for measurement in MEASUREMENTS:
        for name, kind in measurement.fields:
            ours, truncated = doubles[measurement.table][name], longs[measurement.table][name]
            if kind == "walk":
                assert (ours.astype(np.int64) == truncated).all(), (measurement.table, name)
            else:
                assert ours.equals(truncated), (measurement.table, name)


def test_hosts_keep_their_tags_and_timestamps_step_by_the_interval():
    spec = make_spec(use_case="devops", seed=5, scale=6, timestamp_end="2016-01-01T00:00:30Z")
    (chunk,) = devops.chunks(spec, 10**6, "long")
    for table, frame in chunk.items():
        assert frame.groupby("hostname", observed=True)["rack"].nunique().eq(1).all()
        stamps = frame["timestamp"].array.asi8
        assert (np.diff(stamps) >= 0).all()
        assert sorted(set(stamps - stamps[0])) == [0, 10**10, 2 * 10**10]
    uptimes = chunk["redis"]["uptime_in_seconds"].to_numpy()
    assert uptimes.tolist() == [0] * 6 + [10] * 6 + [20] * 6


def test_go_float_text_prints_doubles_as_go_f_format():
    client = (b"mem,host=a,rack=7 used_percent=100.0,free=0.0,x=12.5,y=1e-7,z=1.5e21,w=2i,v=-3.0 1\n"
              b"mem,host=b used_percent=0.00001 2\n")
    assert go_float_text(client) == (b"mem,host=a,rack=7 used_percent=100,free=0,x=12.5,y=0.0000001,"
                                     b"z=1500000000000000000000,w=2i,v=-3 1\n"
                                     b"mem,host=b used_percent=0.00001 2\n")
