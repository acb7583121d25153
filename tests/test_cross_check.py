"""The cross-check: DuckDB's own reading of a user's file held against the run's (``harness.own_data.cross_check``).
The comparison names each property in which two readings differ (rows; the designated timestamp's first, last and
distinct instants; a column's type family and nulls) and explains the differences expected of the two readers;
every shape of the corpus of files as they come (``test_files_as_they_come.SHAPES``) is read alike by both, or with a
note saying why not; a reading that is wrong (a date read alone where a time of day further on was meant) is named by
``inspect --cross-check`` (exit 1) and ``read --check-against`` (exit 1), and refused by ``bench --send --data``
before anything is sent (exit 2, no table), unless ``--no-cross-check`` says so, which the run states and records.
A file larger than its sample is checked by its head and tail (a CSV's bytes, a Parquet file's rows)."""

from __future__ import annotations

import gzip
import io
import json
import socket

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.commands.inspect import InspectOptions, run_inspect
from harness.own_data.cross_check import cross_check
from harness.own_data.cross_check_compare import Context, compare
from harness.own_data.cross_check_sample import SAMPLE_BYTES, sample_check
from harness.own_data.duckdb_reading import ColumnFigures, Figures
from harness.own_data.source import data_source
from helpers import assert_one_line_error, run_cli
from test_files_as_they_come import SHAPES, corpus  # noqa: F401 (the corpus fixture)

DAY = 86_400_000_000  # microseconds


def _figures(**changes) -> Figures:
    figures = Figures(rows=1_000, columns={"ts": ColumnFigures("TIMESTAMP", 0), "v": ColumnFigures("DOUBLE", 3)},
                      first=0, last=DAY, distinct=1_000)
    for name, value in changes.items():
        if name in figures.columns:
            figures.columns[name] = value
        else:
            setattr(figures, name, value)
    return figures


@pytest.mark.parametrize("changes, named", [
    ({"rows": 1_002}, "rows: the run 1,000, DuckDB 1,002"),
    ({"first": 60_000_000}, "first instant of `ts`: the run 1970-01-01T00:00:00, DuckDB 1970-01-01T00:01:00"),
    ({"last": 2 * DAY}, "last instant of `ts`: the run 1970-01-02T00:00:00, DuckDB 1970-01-03T00:00:00"),
    ({"distinct": 24}, "distinct instants of `ts`: the run 1,000, DuckDB 24"),
    ({"v": ColumnFigures("VARCHAR", 3)}, "type of `v`: the run number (DOUBLE), DuckDB text (VARCHAR)"),
    ({"v": ColumnFigures("DOUBLE", 5)}, "nulls of `v`: the run 3, DuckDB 5"),
    ({"unmatched": ("extra",)}, "DuckDB reads columns the run does not: `extra`"),
])
def test_each_difference_of_two_readings_is_named_in_one_line(changes, named):
    differences, notes = compare(_figures(), _figures(**changes), Context(at="ts"))
    assert differences == [named] and not notes
    assert compare(_figures(), _figures(), Context(at="ts")) == ([], [])


def test_expected_differences_are_explained_not_counted():
    run = _figures(rows=998, v=ColumnFigures("BIGINT", 9))
    duck = _figures(v=ColumnFigures("VARCHAR", 3, tokens=6))
    differences, notes = compare(run, duck, Context(at="ts", placeholders={"v": ("-", "?")}, skipped_rows=2))
    assert not differences
    assert any("the run skipped 2" in note for note in notes)
    assert any("DuckDB reads `v` as text: placeholders ('-', '?')" in note for note in notes)
    # The placeholders allowed for, the nulls must still add up.
    differences, _ = compare(run, _figures(v=ColumnFigures("VARCHAR", 3, tokens=5)),
                             Context(at="ts", placeholders={"v": ("-", "?")}))
    assert "nulls of `v`: the run 9, DuckDB 8 (its 3 nulls and 5 placeholders)" in differences
    # A time of day is text to the run; beside dates read alone it is a disagreement unless asked for.
    run = _figures()
    run.columns["t"] = ColumnFigures("VARCHAR", 0)
    duck = _figures()
    duck.columns["t"] = ColumnFigures("TIME", 0)
    differences, _ = compare(run, duck, Context(at="Date", at_columns=("Date",), time_beside=("t",)))
    assert differences == ["DuckDB reads `t` as TIME beside `Date`; the run reads dates alone (⟨at⟩ Date+t joins "
                           "them; ⟨at_dates_only⟩ keeps dates alone)"]
    differences, notes = compare(run, duck, Context(at="Date", time_beside=("t",), dates_only=True))
    assert not differences and "dates alone, as ⟨at_dates_only⟩ says" in notes[0]
    differences, notes = compare(run, duck, Context(at="ts"))
    assert not differences and "QuestDB has no time-of-day type" in notes[0]
    # A source code of letters (a weather file's T and F) DuckDB's sniffer takes for booleans: the run sends the text.
    duck.columns["t"] = ColumnFigures("BOOLEAN", 0)
    differences, notes = compare(run, duck, Context(at="ts"))
    assert not differences and "DuckDB's sniffer reads `t` as BOOLEAN" in notes[0]
    # Codes written with leading zeros (05): numbers to the run, text to DuckDB's sniffer, every value a number to
    # its cast: said. Text with values that are no numbers is a disagreement.
    run.columns["t"], duck.columns["t"] = ColumnFigures("BIGINT", 0), ColumnFigures("VARCHAR", 0, not_numbers=0)
    differences, notes = compare(run, duck, Context(at="ts"))
    assert not differences and "leading zeros" in notes[0] and "⟨keep_text⟩ 't'" in notes[0]
    duck.columns["t"] = ColumnFigures("VARCHAR", 0, not_numbers=2)
    assert compare(run, duck, Context(at="ts"))[0] == ["type of `t`: the run number (BIGINT), DuckDB text (VARCHAR)"]
    # Numbers the run read as text are no such choice: named.
    run.columns["t"], duck.columns["t"] = ColumnFigures("VARCHAR", 0), ColumnFigures("DOUBLE", 0)
    assert compare(run, duck, Context(at="ts"))[0] == ["type of `t`: the run text (VARCHAR), DuckDB number (DOUBLE)"]


@pytest.mark.slow  # one of the corpus's cases, a second or two each
@pytest.mark.parametrize("shape", SHAPES, ids=[shape.name for shape in SHAPES])
def test_every_shape_of_the_corpus_reads_alike_in_duckdb(corpus, shape):  # noqa: F811
    out = io.StringIO()
    run_inspect(InspectOptions(data=str(corpus[shape.name]), cross_check=True, **shape.flags), out)
    said = [line for line in out.getvalue().splitlines() if line.startswith(("Cross-check", "  differs", "  note"))]
    assert said[0].startswith("Cross-check: DuckDB's") and " agrees with the run's reading" in said[0], said
    assert not any(line.startswith("  differs") for line in said), said
    if shape.name in ("bzip2", "lz4", "xz", "zip"):  # DuckDB opens gzip and zstd alone here
        assert "decompressed for it" in said[0], said
    source = data_source(str(corpus[shape.name]), at=shape.flags.get("at"),
                         reading=InspectOptions(**shape.flags).reading())
    sampled = sample_check(source.data, source.at)  # what bench checks before sending
    assert sampled.agrees, sampled.lines()


def _apart(path, rows: int = 3_000):
    """A logger's file whose time of day is not next to its date: the run reads the date alone (a row a minute, 1,440
    to each midnight), DuckDB reads the date and a TIME."""
    stamps = pd.date_range("2006-12-16 17:24", periods=rows, freq="min")
    lines = ["Date,Station,Time,v"] + [f"{stamp:%d/%m/%Y},S{index % 3},{stamp:%H:%M:%S},{index * 0.5}"
                                       for index, stamp in enumerate(stamps)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_a_date_read_alone_is_named_by_inspect(tmp_path):
    path = _apart(tmp_path / "apart.csv")
    result = run_cli("inspect", "--data", str(path), "--cross-check")
    assert_one_line_error(result, 1, "DuckDB reads `Time` as TIME beside `Date`; the run reads dates alone "
                                     "(--at Date+Time joins them; --at-dates-only keeps dates alone)")
    assert "  differs: DuckDB reads `Time` as TIME beside `Date`" in result.stdout
    joined = run_cli("inspect", "--data", str(path), "--cross-check", "--at", "Date+Time")
    assert joined.returncode == 0 and " agrees with the run's reading" in joined.stdout, joined.stderr


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_bench_refuses_a_disagreeing_sample_before_sending_and_no_cross_check_is_stated(tmp_path):
    path = _apart(tmp_path / "apart.csv")
    port, results = str(_free_port()), tmp_path / "run.json"
    refused = run_cli("bench", "--send", "--data", str(path), "--target", "sink", "--ilp-port", port,
                      "--results", str(results))
    assert_one_line_error(refused, 2, "DuckDB's reading of the whole file disagrees with the run's",
                          "`Time` as TIME beside `Date`", "--no-cross-check")
    assert "Sent:" not in refused.stdout and not results.exists()
    sent = run_cli("bench", "--send", "--data", str(path), "--target", "sink", "--ilp-port", port,
                   "--results", str(results), "--no-cross-check", "--reporting-period", "0")
    assert sent.returncode == 0, sent.stderr
    assert "Cross-check: not made: --no-cross-check: the file is sent as the run reads it" in sent.stdout
    recorded = json.loads(results.read_text())["plan"]["cross_check"]
    assert recorded["ran"] is False and "--no-cross-check" in recorded["why_not"]
    joined = run_cli("bench", "--send", "--data", str(path), "--at", "Date+Time", "--target", "sink", "--ilp-port",
                     port, "--results", str(results), "--reporting-period", "0")
    assert joined.returncode == 0, joined.stderr
    assert "Cross-check: DuckDB's read_csv, its own sniffer of the whole file agrees" in joined.stdout
    recorded = json.loads(results.read_text())["plan"]["cross_check"]
    assert recorded["ran"] and recorded["agrees"] and not recorded["differences"] and recorded["cpu_seconds"] > 0


@pytest.mark.slow
def test_a_large_csv_is_checked_by_its_head_and_tail(tmp_path):
    rows = 2 * SAMPLE_BYTES // 40 + 50_000
    stamps = pd.date_range("2024-01-01", periods=rows, freq="s")
    frame = pd.DataFrame({"ts": stamps.strftime("%Y-%m-%dT%H:%M:%SZ"), "v": np.arange(rows) * 0.25,
                          "n": np.arange(rows) % 1000})
    frame.to_csv(tmp_path / "big.csv", index=False)
    source = data_source(str(tmp_path / "big.csv"))
    check = sample_check(source.data, source.at)
    assert check.agrees, check.lines()
    assert check.what == "its first 4.0 MiB and its last 4.0 MiB"
    assert source.data.rows() == rows  # the whole file read as the run reads it, the sample apart
    # Compressed, it is read front to back: its head alone is checked, and the check says so.
    with open(tmp_path / "big.csv", "rb") as plain, gzip.open(tmp_path / "big.csv.gz", "wb", compresslevel=1) as packed:
        packed.write(plain.read())
    source = data_source(str(tmp_path / "big.csv.gz"))
    check = sample_check(source.data, source.at)
    assert check.agrees and check.what == "its first 4.0 MiB", check.lines()
    assert any("only the head is checked" in note for note in check.notes)


@pytest.mark.slow
def test_a_large_parquet_file_is_checked_by_its_first_and_last_rows(tmp_path):
    rows = 1_500_000
    table = pa.table({"ts": pa.array(pd.date_range("2024-01-01", periods=rows, freq="s").to_numpy()),
                      "v": np.random.default_rng(1).normal(size=rows), "n": np.arange(rows)})
    pq.write_table(table, tmp_path / "big.parquet", row_group_size=200_000)
    assert (tmp_path / "big.parquet").stat().st_size > 2 * SAMPLE_BYTES
    source = data_source(str(tmp_path / "big.parquet"))
    check = sample_check(source.data, source.at)
    assert check.agrees, check.lines()
    assert check.what.startswith("its first ") and " and its last " in check.what and "rows" in check.what
    assert check.what.endswith(" and the whole file's first and last instants"), check.what
    whole = cross_check(source.data, source.at)
    assert whole.agrees and whole.what == "the whole file"


@pytest.mark.parametrize("suffix", [".arrow", ".arrows"])
def test_an_arrow_file_is_scanned_by_duckdb_as_pyarrow_decodes_it(tmp_path, suffix):
    rows = 150_000
    table = pa.table({"ts": pa.array(pd.date_range("2024-01-01", periods=rows, freq="s").to_numpy()),
                      "v": np.arange(rows) * 0.5, "s": [f"x{index % 7}" for index in range(rows)]})
    path = tmp_path / f"events{suffix}"
    with pa.OSFile(str(path), "wb") as sink:
        with (pa.ipc.new_file if suffix == ".arrow" else pa.ipc.new_stream)(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=40_000):
                writer.write_batch(batch)
    source = data_source(str(path))
    whole, sampled = cross_check(source.data, source.at), sample_check(source.data, source.at)
    assert whole.agrees and sampled.agrees, (whole.lines(), sampled.lines())
    assert "Arrow IPC decoded by pyarrow, scanned by DuckDB" in whole.how
    assert sampled.what == "its first 100,000 rows at most"


@pytest.mark.slow
def test_read_check_against_fails_where_duckdb_reads_the_file_otherwise(questdb_server, tmp_path):
    path = _apart(tmp_path / "apart.csv")
    table = "cross_checked_apart"
    questdb_server.client.drop_table(table)
    server = [f"--host={questdb_server.host}", f"--http-port={questdb_server.http_port}",
              f"--server-metrics-port={questdb_server.min_port}"]
    try:
        sent = run_cli("bench", "--send", "--data", str(path), "--table", table, "--transport", "http",
                       "--no-cross-check", "--results", str(tmp_path / "bench.json"),
                       f"--ilp-port={questdb_server.ilp_port}", *server)
        assert sent.returncode == 0, sent.stderr
        read = run_cli("read", "--check-against", str(path), "--table", table, f"--pg-port={questdb_server.pg_port}",
                       "--results", str(tmp_path / "read.json"), *server)
        assert_one_line_error(read, 1, "DuckDB's reading of the whole file disagrees",
                              "`Time` as TIME beside `Date`")
    finally:
        questdb_server.client.drop_table(table)
