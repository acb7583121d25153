"""``read --check-against PATH`` against a real QuestDB: a Parquet file of every dtype the client takes, sent
with ``bench --send --data`` and read back equal over asyncpg, psycopg and http-parquet (its strings as
SYMBOLs there: QuestDB 9.3.4's Parquet export loses VARCHARs, which the check catches); an Arrow and a CSV
file; a value changed in the table, a file of other rows, a file not in time order (sorted, or refused when
too long); the refusals; and the type mapping itself, value by value, without a server."""

from __future__ import annotations

import io
import re
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from helpers import assert_one_line_error, free_port, run_cli

from harness.commands.bench import run_bench
from harness.commands.read import ReadOptions, run_read
from harness.errors import UsageError
from harness.options.declare import said_by_flags
from harness.own_data.files import DataFile
from harness.read import check_against
from harness.read.check import CheckFailed, canonical, equal
from harness.read.check_against import COMPARED, family
from harness.read.frames import BOOLEAN, DOUBLE, LONG, STRING, TIMESTAMP, TIMESTAMP_NS
from harness.run.bench_options import BenchOptions

ROWS = 2_000
STRING_COLUMNS = ("obj", "s", "spa", "ls")


def dtype_frame(rows: int, step: str = "1s", seed: int = 1) -> pd.DataFrame:
    """A frame of every dtype the client's dataframe() takes, with NULLs where the dtype has them. Left out,
    because the client refuses them: a nullable ``boolean`` with <NA> ("Cannot insert null values into a
    boolean column": ``nb`` has none), a uint64 above 2^63 - 1 ("too large for int64": ``u64`` stays below),
    and a designated timestamp before 1970 ("Timestamp -1 is negative")."""
    rng = np.random.default_rng(seed)
    index = np.arange(rows)
    ts = pd.Series(pd.Timestamp("2024-01-01") + pd.to_timedelta(index, unit="s") * pd.Timedelta(step).total_seconds()
                   + pd.to_timedelta(index * 7 % 1000, unit="ns")).astype("datetime64[ns]")
    spread = lambda unit, size: pd.to_timedelta(rng.integers(-size, size, rows), unit=unit)  # noqa: E731
    return pd.DataFrame({
        "i8": rng.integers(-128, 128, rows).astype("int8"),
        "i16": rng.integers(-2**15, 2**15, rows).astype("int16"),
        "i32": rng.integers(-2**31, 2**31, rows).astype("int32"),
        "i64": rng.integers(-2**62, 2**62, rows).astype("int64"),
        "u8": rng.integers(0, 256, rows).astype("uint8"),
        "u16": rng.integers(0, 2**16, rows).astype("uint16"),
        "u32": rng.integers(0, 2**32, rows).astype("uint32"),
        "u64": rng.integers(0, 2**63 - 1, rows, dtype=np.int64).astype("uint64"),
        "f32": rng.normal(size=rows).astype("float32"),
        "f64": np.where(index % 11 == 0, np.nan, rng.normal(size=rows) * 1e6),
        "n_i64": pd.array(np.where(index % 5 == 0, None, rng.integers(-1000, 1000, rows)), dtype="Int64"),
        "n_f64": pd.array(np.where(index % 6 == 0, None, rng.normal(size=rows)), dtype="Float64"),
        "b": rng.integers(0, 2, rows).astype(bool),
        "nb": pd.array(rng.integers(0, 2, rows).astype(bool), dtype="boolean"),
        # Written as object; pandas 3 reads a file's string column back as str (the unit tests below take
        # object columns as such).
        "obj": pd.Series([None if i % 9 == 0 else f"o{i % 13}" for i in index], dtype=object),
        "s": pd.Series([None if i % 8 == 0 else "" if i % 8 == 1 else f"s{i}é" for i in index], dtype="str"),
        "spa": pd.Series([None if i % 10 == 0 else f"p{i % 7}" for i in index], dtype="string[pyarrow]"),
        "ls": pd.Series(pd.array([None if i % 12 == 0 else f"l{i}" for i in index],
                                 dtype=pd.ArrowDtype(pa.large_string()))),
        "cat": pd.Series([None if i % 15 == 0 else f"c{i % 4}" for i in index], dtype="category"),
        "dns": (ts + spread("ns", 10**12)).astype("datetime64[ns]"),
        "dus": (ts + spread("us", 10**12)).astype("datetime64[us]"),
        "dms": (ts + spread("ms", 10**9)).astype("datetime64[ms]").where(index % 7 != 0),
        "dtz": (ts + spread("ns", 10**12)).dt.tz_localize("UTC").dt.tz_convert("Europe/Paris"),
        "ts": ts,
    })


def load(server, tmp_path, path, **values) -> None:
    settings = dict(data=str(path), at="ts", send=True, transport="http", host=server.host, http_port=server.http_port,
                    ilp_port=server.ilp_port, server_metrics_port=server.min_port, replace_table=True,
                    results=str(tmp_path / f"load-{path.stem}.json"), reporting_period=0, sample_interval=0)
    with open("/dev/null", "w") as devnull:
        run_bench(BenchOptions(**{**settings, **values}), out=devnull)


def read(server, tmp_path, path, **values):
    """run_read --check-against ``path``: (the record, what it printed)."""
    out = io.StringIO()
    settings = dict(check_against=str(path), host=server.host, http_port=server.http_port, pg_port=server.pg_port,
                    server_metrics_port=server.min_port, results=str(tmp_path / "read.json"), reporting_period=0,
                    sample_interval=0)
    record = run_read(ReadOptions(**{**settings, **values}), out=out)
    return record, out.getvalue()


@pytest.fixture(scope="module")
def own_types(questdb_server, tmp_path_factory):
    """The dtype file sent twice: as the client's default (strings VARCHAR) into its default table, own_types,
    and with its strings as SYMBOLs into own_types_symbols."""
    folder = tmp_path_factory.mktemp("own")
    path = folder / "own_types.parquet"
    dtype_frame(ROWS).to_parquet(path)
    load(questdb_server, folder, path)
    # Named symbols are the only ones (as the client takes an explicit list): the category column among them.
    load(questdb_server, folder, path, table="own_types_symbols", symbols=",".join([*STRING_COLUMNS, "cat"]))
    return path


def test_the_file_holds_every_dtype_named(tmp_path):
    """What DataFile reads back is what the comparison sees: the dtypes the test means to cover (a millisecond
    column read as microseconds, as every file's is: harness.own_data.normalise)."""
    path = tmp_path / "dtypes.parquet"
    dtype_frame(50).to_parquet(path)
    dtypes = {name: str(dtype) for name, dtype in DataFile(path).head().dtypes.items()}
    assert dtypes == {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
                      "u32": "uint32", "u64": "uint64", "f32": "float32", "f64": "float64", "n_i64": "Int64",
                      "n_f64": "Float64", "b": "bool", "nb": "boolean", "obj": "str", "s": "str", "spa": "string",
                      "ls": "large_string[pyarrow]", "cat": "category", "dns": "datetime64[ns]",
                      "dus": "datetime64[us]", "dms": "datetime64[us]", "dtz": "datetime64[ns, Europe/Paris]",
                      "ts": "datetime64[ns]"}


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["asyncpg", "psycopg"])
def test_every_dtype_reads_back_equal(own_types, questdb_server, tmp_path, protocol):
    record, printed = read(questdb_server, tmp_path, own_types, protocol=protocol, workers=2, chunk_rows=300)
    assert record.status == "ok" and record.read.checked_rows == ROWS
    assert "in time order, compared as the table streams in" in printed
    assert f"Check: every value of {ROWS} rows equal to {own_types} (24 columns)" in printed
    assert "Reading table own_types (" in printed  # the default table: the file's name


def test_http_parquet_reads_back_equal_with_strings_as_symbols(own_types, questdb_server, tmp_path):
    record, printed = read(questdb_server, tmp_path, own_types, protocol="http-parquet", table="own_types_symbols")
    assert record.read.checked_rows == ROWS and "(24 columns)" in printed


def test_http_parquet_loses_varchars_and_the_check_says_so(own_types, questdb_server, tmp_path):
    """QuestDB 9.3.4's /exp?fmt=parquet of a table scan writes its VARCHAR columns all NULL (one partition; over
    several, a dictionary per partition that pyarrow refuses): the check names the first such value. When a
    QuestDB fixes it, this test fails: then docs/read.md's note goes."""
    with pytest.raises(CheckFailed) as failure:
        read(questdb_server, tmp_path, own_types, protocol="http-parquet")
    assert re.search(r"column (obj|s|spa|ls): the file has '[^']+', the table NULL$", str(failure.value)), failure.value


def test_a_time_range_checks_the_files_rows_in_it(own_types, questdb_server, tmp_path):
    record, _ = read(questdb_server, tmp_path, own_types, protocol="asyncpg", from_time="2024-01-01T00:10:00Z",
                     to_time="2024-01-01T00:20:00Z")
    assert record.read.checked_rows == 600


def test_a_file_of_other_rows_fails_naming_both_counts(own_types, questdb_server, tmp_path):
    shorter = tmp_path / "shorter.parquet"
    pd.read_parquet(own_types).iloc[:-1].to_parquet(shorter)
    with pytest.raises(CheckFailed, match=f"check against {shorter}: the table holds {ROWS} rows, the file "
                                          f"{ROWS - 1}$"):
        read(questdb_server, tmp_path, shorter, table="own_types")


@pytest.mark.slow
def test_arrow_and_csv_files_read_back_equal(questdb_server, tmp_path):
    frame = dtype_frame(500, seed=2)
    arrow, csv = tmp_path / "own_arrow.arrow", tmp_path / "own_csv.csv"
    frame.to_feather(arrow)
    frame.to_csv(csv, index=False)  # read back as int64, float64, bool, str, datetime64[ns] (UTC for dtz)
    for path, protocol in ((arrow, "connectorx"), (csv, "http-csv")):
        load(questdb_server, tmp_path, path)
        record, printed = read(questdb_server, tmp_path, path, protocol=protocol)
        assert record.read.checked_rows == 500 and f"equal to {path} (24 columns)" in printed


@pytest.mark.slow
def test_a_changed_value_fails_naming_the_row_the_column_and_both_values(questdb_server, tmp_path):
    path = tmp_path / "own_tampered.parquet"
    frame = dtype_frame(300, seed=3)
    frame.to_parquet(path)
    load(questdb_server, tmp_path, path)
    client = questdb_server.client
    client.exec("update own_tampered set f64 = 0.25 where ts between '2024-01-01T00:00:17' and "
                "'2024-01-01T00:00:17.000999'")
    deadline = time.monotonic() + 30
    while client.query("select count() from own_tampered where f64 = 0.25")[1][0][0] != 1:
        assert time.monotonic() < deadline, "the UPDATE never became visible"
        time.sleep(0.1)
    run = run_cli("read", "--check-against", str(path), "--host", questdb_server.host, "--http-port",
                  str(questdb_server.http_port), "--pg-port", str(questdb_server.pg_port), "--server-metrics-port",
                  str(questdb_server.min_port), "--reporting-period", "0", "--results", str(tmp_path / "r.json"))
    assert_one_line_error(run, 1, f"error: check against {path}: row 17 of the table (2024-01-01 00:00:17",
                          "row 17 of the file), column f64: the file has "
                          f"{float(frame['f64'][17])!r}, the table 0.25")


@pytest.mark.slow
def test_a_file_not_in_time_order_is_compared_sorted_or_refused_when_too_long(questdb_server, tmp_path, monkeypatch):
    """Rows over three days (partitions), shuffled, some sharing a timestamp: QuestDB sorts them, and returns
    a timestamp's rows in an order of its own."""
    frame = dtype_frame(400, step="10min", seed=4)
    frame["ts"] = frame["ts"].where(frame.index % 4 != 1, frame["ts"].shift(1))  # ties
    frame = frame.sample(frac=1, random_state=5).reset_index(drop=True)
    path = tmp_path / "own_unordered.parquet"
    frame.to_parquet(path)
    load(questdb_server, tmp_path, path)
    record, printed = read(questdb_server, tmp_path, path, protocol="asyncpg")
    assert record.read.checked_rows == 400
    assert re.search(r"not in time order \(row \d+ \(.*\) comes after row \d+ \(.*\)\), so read whole and sorted by ts "
                     r"in memory", printed), printed
    monkeypatch.setattr(check_against, "SORT_LIMIT_ROWS", 399)
    with pytest.raises(UsageError, match=r"^--check-against: .*own_unordered.parquet is not in time order \(row \d+ .*"
                                         r"and has 400 rows, more than the 399 the check sorts in memory: sort the "
                                         r"file by ts first$"):
        read(questdb_server, tmp_path, path, protocol="asyncpg")


@pytest.mark.parametrize("values, message", [
    (dict(check=True), "--check-against compares the table with a file, --check with a TSBS data set"),
    (dict(sql="select 1"), "--check-against compares a table with the file that filled it; --sql's answer"),
    (dict(seed=1, scale=10), "not a TSBS data set: leave out --seed, --scale"),
    (dict(check_against="missing.parquet"), "--check-against missing.parquet: no such file"),
    (dict(check_against="corrupt.parquet"), "--check-against corrupt.parquet: not a readable parquet file: "),
])
def test_refusals_come_before_anything_is_read(tmp_path, monkeypatch, values, message):
    """Refused with no server there at all: nothing was asked of one."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corrupt.parquet").write_bytes(b"PAR1 not really")
    good = tmp_path / "good.parquet"
    dtype_frame(10).to_parquet(good)
    options = dict(check_against=str(good), host="127.0.0.1", http_port=free_port(), results=str(tmp_path / "r.json"))
    with pytest.raises(UsageError) as refusal:
        run_read(ReadOptions(**{**options, **values}))
    said = said_by_flags(refusal.value, ReadOptions)  # as the command line says it
    assert message in said and "\n" not in said
    assert not (tmp_path / "r.json").exists()


@pytest.mark.slow
def test_a_refusal_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "x.parquet"
    dtype_frame(10).to_parquet(path)
    run = run_cli("read", "--check-against", str(path), "--check", "--http-port", str(free_port()))
    assert_one_line_error(run, 2, "error: --check-against compares the table with a file, --check with")


# --- the mapping, value by value, as each protocol hands the table's values over ---------------------------

@pytest.mark.parametrize("file_side, table_side, kind", [
    # float32 -> DOUBLE: the float64 of the float32, exactly.
    (pd.Series([1.1, np.nan], dtype="float32"), pd.Series([1.100000023841858, np.nan]), DOUBLE),
    # Float64 <NA> and infinities: NULL (PGWire and CSV read a non-finite DOUBLE back as NULL).
    (pd.Series([0.5, None, np.inf], dtype="Float64"), pd.Series([0.5, np.nan, np.nan]), DOUBLE),
    # int8 ... uint64, Int64 <NA> -> LONG (a NULL in a chunk makes the reader's column Int64).
    (pd.Series([-3, 200], dtype="int16"), pd.Series([-3, 200]), LONG),
    (pd.Series([2**63 - 1, 1], dtype="uint64"), pd.Series([2**63 - 1, 1]), LONG),
    (pd.Series([7, None], dtype="Int64"), pd.Series([7, None], dtype="Int64"), LONG),
    # bool, boolean -> BOOLEAN (asyncpg and psycopg hand Python bools over in an object column).
    (pd.Series([True, False], dtype="boolean"), pd.Series([True, False], dtype=object), BOOLEAN),
    # strings -> VARCHAR or SYMBOL: the text, None = NULL; categorical readers (HTTP) too.
    (pd.Series(["a", None, ""], dtype=object), pd.Series(["a", None, ""], dtype="category"), STRING),
    (pd.Series(["a", None], dtype="string[pyarrow]"), pd.Series(["a", None], dtype=object), STRING),
    (pd.Series(["x", None], dtype="category"), pd.Series(["x", np.nan], dtype="str"), STRING),
    # datetime64[ns] in a TIMESTAMP column: microseconds truncated toward zero, as QuestDB keeps them.
    (pd.Series(pd.to_datetime(["1969-12-31 23:59:59.999999999", "2024-01-01 00:00:00.000001999", None],
                              format="ISO8601")).astype("datetime64[ns]"),
     pd.Series(pd.to_datetime(["1970-01-01", "2024-01-01 00:00:00.000001", None], format="ISO8601", utc=True)),
     TIMESTAMP),
    # datetime64[ms] -> TIMESTAMP; tz-aware compared in UTC.
    (pd.Series(pd.to_datetime(["2024-06-01 12:00:00.123"])).astype("datetime64[ms]").dt.tz_localize("Europe/Paris"),
     pd.Series(pd.to_datetime(["2024-06-01 10:00:00.123"], utc=True)).astype("datetime64[us, UTC]"), TIMESTAMP),
    # datetime64[ns] -> TIMESTAMP_NS, read over HTTP at nanoseconds.
    (pd.Series(pd.to_datetime(["2024-01-01 00:00:00.000000001"])).astype("datetime64[ns]"),
     pd.Series(pd.to_datetime(["2024-01-01 00:00:00.000000001"], utc=True)).astype("datetime64[ns, UTC]"),
     TIMESTAMP_NS),
])
def test_the_mapping_compares_what_the_server_gives_back_equal(file_side, table_side, kind):
    assert COMPARED[(family(file_side), kind)] == kind
    assert equal(kind, canonical(file_side, kind), canonical(table_side, kind)).all()


def test_a_dtype_the_check_cannot_compare_has_no_family():
    assert family(pd.Series(pd.to_timedelta([1], unit="s"))) is None
    assert family(pd.Series([1, 2], dtype="category")) is None  # categories of integers: no SYMBOL text
    assert ("integer", STRING) not in COMPARED and ("string", LONG) not in COMPARED
