"""The user's own data sent as a run (``bench --data``): Parquet, Arrow IPC and CSV files into a real QuestDB and
the real socat sink, counted back on the server; the data read in pieces that give the same rows whatever the
chunk size; every bad input refused in one line before anything is sent, no table touched; and a table of the
data's name never dropped or written unless the user says so."""

from __future__ import annotations

import gzip
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from harness.commands.bench import run_bench
from harness.errors import UsageError
from harness.options.declare import said_by_flags
from harness.own_data.files import DataFile
from harness.own_data.frames import FramesInMemory
from harness.run.bench_options import BenchOptions
from helpers import assert_one_line_error, run_cli

ROWS = 5_000


def sample_frame(rows: int = ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({
        "ts": pd.date_range("2024-03-01", periods=rows, freq="s"),
        "host": pd.Categorical(rng.choice(["h1", "h2", "h3"], rows)),
        "region": rng.choice(["eu", "us"], rows),
        "load": rng.random(rows),
        "count": rng.integers(0, 1000, rows),
        "ok": rng.random(rows) > 0.5,
    })


def write(frame: pd.DataFrame, path) -> str:
    suffix = path.suffix
    if suffix == ".parquet":
        frame.to_parquet(path, row_group_size=1_300)
    elif suffix == ".arrow":
        frame.reset_index(drop=True).to_feather(path)
    else:
        frame.to_csv(path, index=False)
    return str(path)


def data_options(tmp_path, server=None, **overrides) -> BenchOptions:
    values = dict(worker_chunk_row_count=1_000, reporting_period=0, sample_interval=0,
                  results_dir=str(tmp_path / "results"), validation_query_timeout=60)
    if server is not None:
        values.update(host=server.host, ilp_port=server.ilp_port, http_port=server.http_port)
    values.update(overrides)
    return BenchOptions(**values)


def server_args(server) -> list[str]:
    return ["--host", server.host, "--http-port", str(server.http_port), "--ilp-port", str(server.ilp_port)]


@pytest.fixture
def fresh(questdb):
    """The session's QuestDB with the tables these tests fill dropped before and after."""
    names = ("sample", "own_data", "users_table")
    for name in names:
        questdb.client.drop_table(name)
    yield questdb
    for name in names:
        questdb.client.drop_table(name)


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".csv"])
def test_a_file_into_questdb_has_every_row_counted_back(fresh, tmp_path, devnull, suffix):
    path = write(sample_frame(), tmp_path / f"sample{suffix}")
    record = run_bench(data_options(tmp_path, fresh, data=path, send=True, workers=2), out=devnull)
    assert record.status == "ok"
    assert record.validation.expected_rows == record.validation.visible_rows == ROWS
    assert fresh.client.count("sample") == ROWS
    parameters = record.parameters
    assert parameters["use_case"] == "data" and parameters["row_count"] == ROWS and parameters["at"] == "ts"
    assert "seed" not in parameters and "scale" not in parameters and record.seed is None
    columns = dict(fresh.client.table_columns("sample"))
    assert columns["load"] == "DOUBLE" and columns["count"] == "LONG" and columns["ok"] == "BOOLEAN"
    # Categorical columns are the client's own symbols (a CSV has none); other strings stay strings.
    assert columns["host"] == ("VARCHAR" if suffix == ".csv" else "SYMBOL") and columns["region"] == "VARCHAR"


def test_symbols_auto_takes_low_cardinality_strings(fresh, tmp_path, devnull):
    path = write(sample_frame(), tmp_path / "sample.parquet")
    run_bench(data_options(tmp_path, fresh, data=path, send=True, symbols="auto"), out=devnull)
    columns = dict(fresh.client.table_columns("sample"))
    assert columns["host"] == columns["region"] == "SYMBOL"
    _, rows = fresh.client.query("select region, count() from 'sample' order by region")
    frame = sample_frame()
    assert rows == [[name, int((frame.region == name).sum())] for name in ("eu", "us")]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_file_into_the_sink(socat_sink, tmp_path, devnull, suffix):
    path = write(sample_frame(), tmp_path / f"sample{suffix}")
    record = run_bench(data_options(tmp_path, data=path, send=True, target="sink", host=socat_sink.host,
                                    ilp_port=socat_sink.port, workers=2), out=devnull)
    assert record.status == "ok" and record.phases["send"].rows == ROWS and record.validation is None


def test_serialize_only_reads_the_file_while_serializing(tmp_path, devnull):
    path = write(sample_frame(), tmp_path / "sample.parquet")
    record = run_bench(data_options(tmp_path, data=path), out=devnull)
    # The user's data is never held whole: no generate phase, the pieces made while serializing.
    assert set(record.phases) == {"serialize"} and record.phases["serialize"].rows == ROWS


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".csv"])
def test_pieces_are_the_same_rows_whatever_the_chunk_size(tmp_path, suffix):
    frame = sample_frame(3_001)
    data = DataFile(write(frame, tmp_path / f"sample{suffix}"))
    assert data.rows() == 3_001
    for chunk_rows in (1, 999, 1_300, 5_000):
        if chunk_rows == 1 and suffix != ".parquet":
            continue
        pieces = list(data.frames(chunk_rows))
        assert all(len(piece) == chunk_rows for piece in pieces[:-1])
        whole = pd.concat(pieces, ignore_index=True)
        assert whole["load"].tolist() == frame["load"].tolist()
        assert whole["host"].astype(str).tolist() == frame["host"].astype(str).tolist()


def test_frames_in_memory_are_cut_across_frames():
    frames = [sample_frame(700), sample_frame(500)]
    pieces = list(FramesInMemory(frames).frames(400))
    assert [len(piece) for piece in pieces] == [400, 400, 400]
    assert pd.concat(pieces)["load"].tolist() == pd.concat(frames)["load"].tolist()


# --- bad input: one line, exit 2, nothing sent, no table touched --------------------------------------


def _bad_files(tmp_path) -> dict[str, tuple[str, list[str], tuple[str, ...]]]:
    """name -> (path, extra flags, fragments of the one error line)."""
    cases = {}
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("ts,host,v\n2024-01-01T00:00:00Z,a,1\n2024-01-01T00:00:01Z,b,2\n2024-01-01T00:00:02Z,c\n")
    cases["ragged csv"] = (str(ragged), [], ("line 4", "2 fields", "the header 3"))
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1" + b"\0" * 64)
    cases["corrupt parquet footer"] = (str(corrupt), [], ("corrupt.parquet", "not a readable parquet file"))
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    cases["empty file"] = (str(empty), [], ("empty.csv", "the file is empty"))
    no_rows = tmp_path / "no_rows.parquet"
    sample_frame(0).to_parquet(no_rows)
    cases["no rows"] = (str(no_rows), [], ("no rows to send",))
    no_ts = tmp_path / "no_ts.parquet"
    sample_frame().drop(columns="ts").to_parquet(no_ts)
    cases["no timestamp"] = (str(no_ts), [], ("no timestamp column", "--at"))
    two_ts = tmp_path / "two_ts.parquet"
    sample_frame().assign(seen=pd.Timestamp("2024-01-01")).to_parquet(two_ts)
    cases["two timestamps"] = (str(two_ts), [], ("2 timestamp columns", "ts, seen", "--at"))
    null_ts = tmp_path / "null_ts.parquet"
    frame = sample_frame()
    frame.loc[10, "ts"] = pd.NaT
    frame.to_parquet(null_ts)
    cases["null designated timestamp"] = (str(null_ts), [], ("'ts' has 1 nulls",))
    good = write(sample_frame(), tmp_path / "good.parquet")
    cases["missing --at column"] = (good, ["--at", "when"], ("--at", "no column 'when'"))
    cases["missing --symbols column"] = (good, ["--symbols", "host,rack"], ("--symbols", "no column 'rack'"))
    cases["invalid table name"] = (good, ["--table", "bad'name"], ("invalid table name",))
    cases["TSBS data-set flag"] = (good, ["--scale", "10"], ("--data sends the user's data", "--scale"))
    durations = tmp_path / "durations.parquet"
    sample_frame().assign(took=pd.to_timedelta(np.arange(ROWS), unit="s")).to_parquet(durations)
    cases["a dtype the client refuses"] = (str(durations), [], ("'took'", "timedelta64", "convert it"))
    cases["missing file"] = (str(tmp_path / "absent.parquet"), [], ("absent.parquet", "no such file"))
    cases["a folder of files of two formats"] = (str(tmp_path), [], ("a dataset's files share one format",))
    cases.update(_bad_files_as_they_come(tmp_path))
    return cases


def _bad_files_as_they_come(tmp_path) -> dict[str, tuple[str, list[str], tuple[str, ...]]]:
    """The bad inputs of files as they come: each one line naming what is wrong, nothing sent."""
    cases = {}
    rows = "".join(f"2024-01-01T00:00:{second:02d}Z,{second}\n" for second in range(50))
    whole = gzip.compress(("ts,v\n" + rows * 2000).encode())
    truncated = tmp_path / "truncated.csv.gz"
    truncated.write_bytes(whole[:len(whole) // 2])
    cases["truncated gzip"] = (str(truncated), [], ("truncated.csv.gz",
                                                    "Compressed file ended before the end-of-stream"))
    unparseable = tmp_path / "unparseable.csv"
    unparseable.write_text("ts,v\n" + rows + "2024-01-01T00:01:00Z,1\nyesterday,2\n")
    cases["a timestamp that does not parse"] = (str(unparseable), [], ("line 53", "'yesterday'", "column 'ts'",
                                                                        "--on-bad-timestamp skip"))
    dates = tmp_path / "dates.csv"
    dates.write_text("when,v\n01 Mar 2024,1\n02 Mar 2024,2\n")
    cases["--at-format that matches nothing"] = (str(dates), ["--at", "when", "--at-format", "%Y-%m-%d"],
                                                 ("--at-format '%Y-%m-%d' does not parse column 'when'",
                                                  "'01 Mar 2024'"))
    cases["unknown --tz"] = (str(dates), ["--at", "when", "--tz", "Europe/Atlantis"],
                             ("--tz", "unknown time zone 'Europe/Atlantis'"))
    cases["--at-unit on a text column"] = (str(dates), ["--at", "when", "--at-unit", "s"],
                                           ("--at-unit s", "column 'when' holds text", "leave --at-unit out"))
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text('{"ts": "2024-01-01T00:00:00Z", "v": 1}\n{"ts": "2024-01-01T00:00:01Z", v: 2}\n')
    cases["a JSON-lines file with a malformed line"] = (str(malformed), [], ("malformed.jsonl", "line 2 is not JSON"))
    empty_folder = tmp_path / "empty-folder"
    empty_folder.mkdir()
    cases["an empty folder"] = (str(empty_folder), [], ("empty-folder", "no files to read"))
    differ = tmp_path / "differ"
    differ.mkdir()
    sample_frame(10).to_parquet(differ / "a.parquet")
    sample_frame(10).assign(load=lambda frame: frame.load.astype(str)).to_parquet(differ / "b.parquet")
    cases["a folder whose files' schemas differ"] = (str(differ), [], ("a.parquet and", "b.parquet differ in column "
                                                                       "'load'"))
    early = tmp_path / "early.csv"
    early.write_text("launch,boat\n1912-04-15 00:45:00,7\n1912-04-15 00:55:00,5\n")
    cases["a designated timestamp before 1970"] = (str(early), [], ("'launch' holds 1912-04-15 00:45:00 at row 1",
                                                                   "start at 1970-01-01"))
    early_parquet = tmp_path / "early.parquet"
    sample_frame().assign(ts=lambda frame: frame.ts - pd.Timedelta(days=365 * 60)).to_parquet(early_parquet)
    cases["a Parquet designated timestamp before 1970"] = (str(early_parquet), [], ("'ts' holds 1964-",
                                                                                   "at row 1"))
    latin = tmp_path / "late_latin.csv"  # UTF-8 for longer than the dialect's sample, then a Latin-1 byte
    latin.write_bytes(b"ts,name\n" + ("2024-01-01T00:00:00Z,plain\n" * 3000).encode() +
                      "2024-01-01T00:00:01Z,caf\xe9\n".encode("latin-1"))
    cases["Latin-1 past the sniffed start"] = (str(latin), [], ("column 'name' holds text that is not utf-8",
                                                                "--encoding"))
    array = tmp_path / "array.json"
    array.write_text('[{"ts": "2024-01-01T00:00:00Z", "v": 1}]\n')
    cases["a JSON array"] = (str(array), [], ("a JSON array, not JSON lines", "jq -c"))
    good = write(sample_frame(), tmp_path / "good.csv")
    cases["--rename of a column the file lacks"] = (good, ["--rename", "lode=load"], ("--rename lode=load",
                                                                                      "no column 'lode'"))
    cases["a name still invalid after --rename"] = (good, ["--rename", "load=load (%)"],
                                                    ("--rename load=load (%)", "QuestDB refuses the column name"))
    dashes = tmp_path / "dashes.csv"
    dashes.write_text("ts,v,w\n" + "".join(f"2024-01-01T00:00:{second:02d}Z,-,{second}\n" for second in range(50)))
    cases["--na-values that empties a column"] = (str(dashes), ["--na-values", "-"],
                                                  ("--na-values -", "every value of column 'v'", "--keep-text v"))
    two = tmp_path / ".zips" / "two.zip"  # a hidden folder: the case of a folder of files of two formats reads past it
    two.parent.mkdir()
    with zipfile.ZipFile(two, "w") as archive:
        archive.writestr("a.csv", "ts,v\n" + rows)
        archive.writestr("b.csv", "ts,v\n" + rows)
    cases["a .zip of two files"] = (str(two), [], ("two.zip", "a .zip holding 2 files (a.csv, b.csv)"))
    return cases


def _tables(questdb) -> set[str]:
    return {str(row[0]) for row in questdb.client.query("select table_name from tables()")[1]}


@pytest.mark.slow
def test_every_bad_input_is_refused_and_nothing_is_touched(fresh, tmp_path, devnull):
    before = _tables(fresh)
    for name, (path, flags, fragments) in _bad_files(tmp_path).items():
        values = dict(zip((flag.lstrip("-").replace("-", "_") for flag in flags[::2]), flags[1::2]))
        values = {key: int(value) if key == "scale" else value for key, value in values.items()}
        with pytest.raises(UsageError) as refused:
            run_bench(data_options(tmp_path, fresh, data=path, send=True, results=str(tmp_path / f"{name}.json"),
                                   **values), out=devnull)
        said = said_by_flags(refused.value, BenchOptions)  # as the command line says it
        assert all(fragment in said for fragment in fragments), (name, said)
        assert "\n" not in said, name
    # Nothing was made on the server (the harness's own claims table aside).
    assert _tables(fresh) - before <= {"harness_runs"}


@pytest.mark.slow
@pytest.mark.parametrize("case", ["ragged csv", "a dtype the client refuses", "TSBS data-set flag",
                                  "--na-values that empties a column", "a .zip of two files"])
def test_bad_input_on_the_command_line_is_one_line_and_exit_2(fresh, tmp_path, case):
    path, flags, fragments = _bad_files(tmp_path)[case]
    result = run_cli("bench", "--send", "--data", path, *flags, *server_args(fresh),
                     "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, *fragments)


def test_an_error_names_the_file_it_was_met_in(tmp_path):
    """The place of an error is given where it is met: a ragged row of a dataset's first file, met while every
    file's schema is read, names the first file, not the last one read."""
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "a.csv").write_text("ts,v\n2024-01-01T00:00:00Z,1,5\n")
    (folder / "b.csv").write_text("ts,v\n2024-01-01T00:00:01Z,1\n")
    with pytest.raises(UsageError) as refused:
        DataFile(folder)
    assert said_by_flags(refused.value, BenchOptions) == (f"--data {folder / 'a.csv'}: line 2 has 3 fields, the header "
                                                         f"2: '2024-01-01T00:00:00Z,1,5'")


def test_every_format_a_suffix_names_has_its_reader():
    from harness.own_data.formats import FORMATS
    from harness.own_data.readers.registry import READERS

    assert set(FORMATS.values()) == set(READERS)
    assert all(reader.format == name for name, reader in READERS.items())


@pytest.mark.slow
def test_a_dry_run_checks_the_file_without_a_server(tmp_path):
    good = write(sample_frame(), tmp_path / "good.parquet")
    ok = run_cli("bench", "--send", "--data", good, "--dry-run", "--http-port", "1")
    assert ok.returncode == 0, ok.stderr
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("ts,v\n2024-01-01T00:00:00Z,1\n2024-01-01T00:00:01Z\n")
    assert_one_line_error(run_cli("bench", "--data", str(ragged), "--dry-run"), 2, "line 3")


def test_tsbs_only_options_are_refused_beside_data(tmp_path, devnull):
    good = write(sample_frame(), tmp_path / "good.parquet")
    for flags, fragment in ((dict(write_ilp=str(tmp_path / "x.ilp")), "--write-ilp"),
                            (dict(clients=2, send=True), "--clients"),
                            (dict(use_case="devops"), "--use-case")):
        with pytest.raises(UsageError, match=fragment):
            run_bench(data_options(tmp_path, data=good, **flags), out=devnull)
    with pytest.raises(UsageError, match="--at is for the user's data: it needs --data"):
        run_bench(data_options(tmp_path, at="ts"), out=devnull)


# --- safety --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_table_of_the_datas_name_is_never_dropped_or_written(fresh, tmp_path, devnull):
    path = write(sample_frame(), tmp_path / "users_table.parquet")
    fresh.client.exec("create table users_table (x INT)")
    fresh.client.exec("insert into users_table values (42)")
    result = run_cli("bench", "--send", "--data", path, *server_args(fresh), "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "table users_table exists", "never drops or writes", "--keep-table")
    assert fresh.client.table_columns("users_table") == [("x", "INT")] and fresh.client.count("users_table") == 1
    # The run is recorded, failed with its reason.
    recorded = json.loads((tmp_path / "r.json").read_text())
    assert recorded["status"] == "failed" and "users_table exists" in recorded["error"]


@pytest.mark.slow
def test_keep_table_appends_after_a_schema_check(fresh, tmp_path, devnull):
    path = write(sample_frame(), tmp_path / "own_data.parquet")
    run_bench(data_options(tmp_path, fresh, data=path, send=True), out=devnull)
    second = run_bench(data_options(tmp_path, fresh, data=path, send=True, keep_table=True), out=devnull)
    assert second.validation.visible_rows == 2 * ROWS == fresh.client.count("own_data")
    other = write(sample_frame().assign(load=lambda frame: frame["load"].astype(str)), tmp_path / "other.parquet")
    with pytest.raises(UsageError, match="load is DOUBLE, needs VARCHAR"):
        run_bench(data_options(tmp_path, fresh, data=other, table="own_data", send=True, keep_table=True),
                  out=devnull)
    assert fresh.client.count("own_data") == 2 * ROWS


def test_replace_table_drops_it_when_asked(fresh, tmp_path, devnull):
    path = write(sample_frame(), tmp_path / "users_table.parquet")
    fresh.client.exec("create table users_table (x INT)")
    record = run_bench(data_options(tmp_path, fresh, data=path, send=True, replace_table=True), out=devnull)
    assert record.status == "ok" and fresh.client.count("users_table") == ROWS


# --- inspect --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_inspect_prints_the_audit_and_refuses_a_column_the_client_refuses(tmp_path):
    good = write(sample_frame(), tmp_path / "good.parquet")
    result = run_cli("inspect", "--data", good)
    assert result.returncode == 0, result.stderr
    assert "designated timestamp ts" in result.stdout and "host" in result.stdout and "SYMBOL" in result.stdout
    bad = tmp_path / "bad.parquet"
    sample_frame().assign(took=pd.to_timedelta(np.arange(ROWS), unit="s")).to_parquet(bad)
    refused = run_cli("inspect", "--data", str(bad))
    assert "took" in refused.stdout  # the whole audit is printed first
    assert_one_line_error(refused, 2, "'took'", "timedelta64", "total_seconds")


@pytest.mark.slow
def test_exactly_once_and_compare_take_the_users_data(fresh, tmp_path, devnull):
    path = write(sample_frame(), tmp_path / "own_data.parquet")
    once = run_bench(data_options(tmp_path, fresh, data=path, send=True, transport="http", exactly_once=True,
                                  results=str(tmp_path / "once.json")), out=devnull)
    assert once.validation.visible_rows == ROWS and fresh.client.deduplicates("own_data")
    # The audit, as the run printed it, is in its record.
    assert [entry["column"] for entry in once.parameters["audit"]] == list(sample_frame().columns)
    plain = run_bench(data_options(tmp_path, fresh, data=path, send=True, replace_table=True, workers=2,
                                   results=str(tmp_path / "plain.json")), out=devnull)
    assert plain.validation.visible_rows == ROWS
    compared = run_cli("compare", str(tmp_path / "once.json"), str(tmp_path / "plain.json"))
    assert compared.returncode == 0, compared.stderr
    assert "data-own_data-send-1t" in compared.stdout and "data-own_data-send-2w" in compared.stdout
