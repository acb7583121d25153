"""End-to-end runs of the benchmark against real servers: QuestDB from its jar and the socat sink."""

from __future__ import annotations

import gc
import gzip
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from harness.tsbs.choices import SymbolDtype
from harness.commands.bench import run_bench
from harness.run.bench_options import BenchOptions
from harness.ingest.ilp_file import IlpFile
from harness.records.run_record import SCHEMA_VERSION
from harness.commands.replay import ReplayOptions, run_replay
from harness.errors import RunError, UsageError
from harness.ingest import file_send
from harness.ingest.phase_loop import PhaseFailed, Worker, run_phase
from harness.telemetry.phase import PhaseProgress
from harness.tsbs.cpu_only import generator as cpu_only
from harness.tsbs.use_cases import make_spec
from helpers import GOLDEN_DIR, assert_one_line_error, free_port, run_cli
from harness.questdb.schema import create_table

GOLDEN = GOLDEN_DIR / "cpu-only_seed123_scale10_1h_10s.ilp.gz"


def options(tmp_path, server=None, **overrides) -> BenchOptions:
    values = dict(scale=100, seed=7, row_count=20_000, worker_chunk_row_count=1_000, reporting_period=0,
                  results_dir=str(tmp_path / "results"), validation_query_timeout=60)
    if server is not None:
        values.update(host=server.host, ilp_port=server.ilp_port, http_port=server.http_port)
    values.update(overrides)
    return BenchOptions(**values)


# --- serialize only -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("fields", ["double", "long"])
def test_serialize_single_and_workers_agree(tmp_path, fields, devnull):
    single = run_bench(options(tmp_path, fields=fields), out=devnull)
    multi = run_bench(options(tmp_path, fields=fields, workers=3), out=devnull)
    for record in (single, multi):
        phase = record.phases["serialize"]
        assert phase.rows == 20_000
        assert phase.rows_per_second == pytest.approx(phase.rows / phase.seconds)
        assert record.status == "ok" and record.seed == 7
    assert single.phases["serialize"].bytes == multi.phases["serialize"].bytes
    assert [w.rows for w in multi.phases["serialize"].workers] == [7_000, 7_000, 6_000]
    assert "send" not in single.phases


def test_results_file_records_the_run(tmp_path, devnull):
    path = tmp_path / "run.json"
    run_bench(options(tmp_path, seed=None, results=str(path)), out=devnull)
    record = json.loads(path.read_text())
    assert record["schema_version"] == SCHEMA_VERSION and record["kind"] == "bench"
    assert isinstance(record["seed"], int) and record["parameters"]["seed"] == record["seed"]
    system = record["system"]
    for key in ("python", "pandas", "pyarrow", "numpy", "questdb_client"):
        assert key in json.dumps(system), key
    assert record["parameters"]["worker_chunk_row_count"] == 1_000


def test_write_ilp_matches_generate(tmp_path, devnull):
    ilp = tmp_path / "out.ilp"
    run_bench(options(tmp_path, fields="long", write_ilp=str(ilp), row_count=3_000), out=devnull)
    generated = run_cli("generate", "--seed", "7", "--scale", "100", "--max-data-points", "3000", "--fields", "long")
    assert ilp.read_bytes() == generated.stdout.encode()


def test_progress_lines_are_printed_every_period(tmp_path, capsys):
    run_bench(options(tmp_path, op="itertuples", row_count=20_000, reporting_period=0.05), out=sys.stdout)
    printed = capsys.readouterr().out
    assert "time,phase,per. row/s,row total" in printed
    assert ",serialize," in printed
    assert "\r" not in printed  # not a terminal: no bar


# --- QuestDB --------------------------------------------------------------------------------------


def read_back(client, table: str) -> pd.DataFrame:
    columns, rows = client.query(f"select * from {table} where hostname = 'host_3' order by timestamp limit 5")
    return pd.DataFrame(rows, columns=columns)


def generated_rows(host: str, count: int, fields: str, scale: int = 100, rows: int = 20_000) -> pd.DataFrame:
    spec = make_spec(seed=7, scale=scale, timestamp_end=None, row_limit=rows)
    frame = pd.concat(cpu_only.frames(spec, 5_000, fields), ignore_index=True)
    return frame[frame["hostname"] == host].head(count).reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "transport,workers,protocol,fields",
    [("tcp", None, "auto", "double"), ("tcp", 3, "2", "long"), ("http", None, "auto", "long"), ("http", 2, "1", "double")],
)
def test_send_validates_count_schema_and_rows(tmp_path, questdb, transport, workers, protocol, fields, devnull):
    record = run_bench(
        options(tmp_path, questdb, send=True, transport=transport, workers=workers, protocol_version=protocol,
                fields=fields),
        out=devnull,
    )
    assert record.phases["send"].rows == 20_000
    assert record.validation.visible_rows == 20_000
    assert record.validation.time_to_visible_seconds is not None
    assert record.server["questdb_version"]
    client = questdb.client
    assert client.count("cpu") == 20_000
    column_types = dict(client.table_columns("cpu"))
    assert list(column_types) == list(cpu_only.COLUMNS)
    assert {column_types[tag] for tag in cpu_only.TAG_COLUMNS} == {"SYMBOL"}
    assert {column_types[f] for f in cpu_only.FIELD_COLUMNS} == {"DOUBLE" if fields == "double" else "LONG"}
    assert column_types["timestamp"] == "TIMESTAMP"
    stored = read_back(client, "cpu")
    expected = generated_rows("host_3", 5, fields)
    for tag in cpu_only.TAG_COLUMNS:
        assert list(stored[tag]) == list(expected[tag].astype(str)), tag
    for field in cpu_only.FIELD_COLUMNS:
        # Shortest round-trip text (protocol 1) and binary doubles (2) both carry the exact value.
        assert list(stored[field]) == list(expected[field]), field
    assert list(pd.to_datetime(stored["timestamp"], utc=True).dt.tz_convert(None)) == list(expected["timestamp"])


@pytest.mark.slow
def test_stream_send(tmp_path, questdb, devnull):
    record = run_bench(options(tmp_path, questdb, send=True, stream=True, workers=2), out=devnull)
    assert "serialize" not in record.phases
    assert record.validation.visible_rows == 20_000


@pytest.mark.slow
def test_iterrows_baseline_sends(tmp_path, questdb, devnull):
    record = run_bench(options(tmp_path, questdb, send=True, op="iterrows", row_count=2_000), out=devnull)
    assert record.phases["serialize"].rows == 2_000
    assert record.validation.visible_rows == 2_000
    assert read_back(questdb.client, "cpu")["hostname"].tolist() == ["host_3"] * 5


def test_phases_record_the_clients_cpu(tmp_path, socat_sink, devnull):
    """Every timed phase records the client process's CPU seconds and the cores that keeps busy: some CPU
    was used, and never more than the cores the process may run on allow."""
    record = run_bench(options(tmp_path, send=True, target="sink", host=socat_sink.host, ilp_port=socat_sink.port,
                               workers=2), out=devnull)
    cores = len(os.sched_getaffinity(0))
    for name in ("generate", "serialize", "send"):
        phase = record.phases[name]
        assert phase.client_cpu_seconds > 0, name
        assert phase.client_cpu_cores == pytest.approx(phase.client_cpu_seconds / phase.seconds)
        assert phase.client_cpu_cores <= cores + 0.1, name


def test_a_phase_sets_the_objects_it_starts_with_aside_from_the_collector_and_gives_them_back():
    """While a phase runs, the objects alive at its start are frozen (a full collection would scan them all
    with every worker stalled); when it ends, whether it finished or failed, none stay frozen."""
    seen = []

    class Counting(Worker):
        def __init__(self, fail: bool):
            self.fail = fail

        def process(self, chunk) -> int:
            seen.append(gc.get_freeze_count())
            if self.fail:
                raise RuntimeError("worker failed")
            return 1

    chunks = [[(0, {"cpu": pd.DataFrame({"x": [1.0]})})]]
    run_phase(PhaseProgress("serialize", 1), [Counting(fail=False)], chunks)
    assert seen[-1] > 1_000 and gc.get_freeze_count() == 0
    with pytest.raises(PhaseFailed):
        run_phase(PhaseProgress("serialize", 1), [Counting(fail=True)], chunks)
    assert seen[-1] > 1_000 and gc.get_freeze_count() == 0


def test_itertuples_and_dataframe_serialize_alike(tmp_path, devnull):
    rows = run_bench(options(tmp_path, op="itertuples", row_count=2_000), out=devnull)
    frames = run_bench(options(tmp_path, row_count=2_000), out=devnull)
    assert rows.phases["serialize"].bytes == frames.phases["serialize"].bytes


@pytest.mark.slow
@pytest.mark.parametrize("workers, write_size", [(1, file_send.DEFAULT_WRITE_SIZE), (3, 4096)])
def test_replay_golden_file(tmp_path, questdb, workers, write_size, devnull):
    record = run_replay(
        ReplayOptions(path=str(GOLDEN), host=questdb.host, ilp_port=questdb.ilp_port, http_port=questdb.http_port,
                      results_dir=str(tmp_path), workers=workers, write_size=write_size),
        out=devnull,
    )
    lines = gzip.open(GOLDEN).read().count(b"\n")
    assert record.validation.visible_rows == lines == 3600
    assert questdb.client.count("cpu") == 3600
    _, distinct = questdb.client.query("select count() from (select distinct hostname, timestamp from cpu)")
    assert distinct == [[3600]]
    if workers > 1:  # the record splits rows by worker where there were several (as they took pieces)
        split = [worker.rows for worker in record.phases["send"].workers]
        assert len(split) == workers and sum(split) == 3600
    columns, rows = questdb.client.query("select usage_user from cpu where hostname = 'host_0' order by timestamp limit 1")
    assert rows == [[58]]  # the golden file's first line: usage_user=58i


@pytest.mark.slow
def test_keep_table_appends_and_counts_both(tmp_path, questdb, devnull):
    run_bench(options(tmp_path, questdb, send=True, row_count=5_000), out=devnull)
    record = run_bench(options(tmp_path, questdb, send=True, row_count=5_000, keep_table=True, seed=8),
                       out=devnull)
    assert record.validation.visible_rows == 10_000


@pytest.mark.slow
def test_conf_string_is_what_senders_use(tmp_path, questdb, devnull):
    """--conf wins over --transport and the ILP port: sending goes over HTTP to the conf's addr although
    --ilp-port names a port where nothing listens."""
    conf = f"http::addr={questdb.host}:{questdb.http_port};auto_flush=off;protocol_version=2;"
    record = run_bench(options(tmp_path, questdb, send=True, ilp_port=free_port(), conf=conf, workers=2),
                       out=devnull)
    assert record.validation.visible_rows == questdb.client.count("cpu") == 20_000
    assert record.parameters["conf"] == conf
    assert record.parameters["transport"] == "http"


def test_conf_secrets_are_never_printed_or_recorded(tmp_path, questdb, capsys):
    conf = f"http::addr=127.0.0.1:{free_port()};username=bench;password=hunter2;;x;"
    with pytest.raises(RunError, match="nothing listening at 127.0.0.1"):
        run_bench(options(tmp_path, questdb, send=True, conf=conf), out=sys.stdout)
    (results,) = (tmp_path / "results").glob("*.json")
    text = results.read_text()
    assert json.loads(text)["parameters"]["conf"].endswith(";username=bench;password=***;")
    assert "hunter2" not in text and "hunter2" not in capsys.readouterr().out


@pytest.mark.parametrize("conf, message", [
    ("addr=localhost:9009", "--conf must look like"),
    ("udp::addr=localhost:9009;", "--conf must look like"),
    ("tcp::protocol_version=2;", "--conf needs addr"),
    ("tcp::addr=localhost:9009;password", "is not key=value"),
])
def test_bad_conf_strings_are_usage_errors(tmp_path, conf, message, devnull):
    with pytest.raises(UsageError, match=message):
        run_bench(options(tmp_path, send=True, conf=conf), out=devnull)


@pytest.mark.slow
def test_table_option_names_the_table(tmp_path, questdb, devnull):
    questdb.client.drop_table("cpu")
    record = run_bench(options(tmp_path, questdb, send=True, table="cpu_other", row_count=3_000),
                       out=devnull)
    assert record.validation.visible_rows == questdb.client.count("cpu_other") == 3_000
    assert questdb.client.table_columns("cpu") is None
    questdb.client.drop_table("cpu_other")


@pytest.mark.slow
@pytest.mark.parametrize("symbol_dtype", tuple(SymbolDtype))
def test_symbol_dtype_changes_nothing_in_the_ilp(tmp_path, symbol_dtype, devnull):
    reference = tmp_path / "category.ilp"
    run_bench(options(tmp_path, row_count=3_000, write_ilp=str(reference)), out=devnull)
    written = tmp_path / f"{symbol_dtype}.ilp"
    record = run_bench(options(tmp_path, row_count=3_000, symbol_dtype=symbol_dtype, write_ilp=str(written)),
                       out=devnull)
    assert record.parameters["symbol_dtype"] == symbol_dtype
    assert written.read_bytes() == reference.read_bytes()


def test_a_tsbs_time_range_sets_rows_and_timestamps(tmp_path, devnull):
    written = tmp_path / "range.ilp"
    record = run_bench(options(tmp_path, scale=10, timestamp_start="2016-01-01T00:00:00Z",
                               timestamp_end="2016-01-01T01:00:00Z", log_interval="1m", write_ilp=str(written)),
                       out=devnull)
    assert record.phases["serialize"].rows == 60 * 10
    timestamps = [int(line.rsplit(b" ", 1)[1]) for line in written.read_bytes().splitlines()]
    start = 1451606400 * 10**9
    assert timestamps[:10] == [start] * 10 and timestamps[10] == start + 60 * 10**9
    assert timestamps[-1] == start + 59 * 60 * 10**9


# --- the no-op sink -------------------------------------------------------------------------------


def test_send_to_socat_sink(tmp_path, socat_sink, devnull):
    record = run_bench(
        options(tmp_path, send=True, target="sink", host=socat_sink.host, ilp_port=socat_sink.port, workers=2),
        out=devnull,
    )
    assert record.phases["send"].rows == 20_000
    assert record.phases["send"].bytes == record.phases["serialize"].bytes
    assert record.validation is None
    assert record.mode == "sink-dataframe-double-2w"
    assert len(list((tmp_path / "results").glob("*Z-sink-dataframe-double-2w.json"))) == 1


@pytest.mark.parametrize("overrides, mode", [
    ({}, "serialize-dataframe-double-1t"),
    ({"workers": 4, "fields": "long"}, "serialize-dataframe-long-4w"),
    ({"send": True, "op": "iterrows"}, "send-iterrows-double-1t"),
    ({"send": True, "target": "sink", "workers": 2}, "sink-dataframe-double-2w"),
])
def test_mode_names_the_run(overrides, mode):
    assert BenchOptions(**overrides).plan().mode == mode


def test_file_pieces_are_whole_lines_covering_the_file(tmp_path):
    data = gzip.open(GOLDEN).read()
    plain = tmp_path / "golden.ilp"
    plain.write_bytes(data)
    # A plain file is mapped (pieces are views of it), a gzip'd one read into buffers.
    for path, size in [(str(GOLDEN), 1), (str(plain), 1), (str(plain), 100), (str(GOLDEN), 4096), (str(plain), len(data)),
                       (str(plain), 10 * len(data))]:
        with IlpFile(path, size, file_send.buffers_needed(2)) as ilp:
            assert ilp.first_piece() == data[: data.index(b"\n")]
            pieces = []
            for piece in ilp.pieces():
                pieces.append(bytes(piece.buffer[: piece.size]))
                assert piece.rows == pieces[-1].count(b"\n") and piece.table_rows is None
                ilp.release(piece)
        assert b"".join(pieces) == data
        longest = max(len(line) + 1 for line in data.splitlines())
        assert all(one.endswith(b"\n") and len(one) <= max(size, 2 * longest) for one in pieces)
        assert len(pieces) > 1 or size >= len(data)


def test_a_mapped_file_that_shrinks_while_read_is_named(tmp_path):
    """A plain file is mapped: reading past a new, shorter end would kill the process (SIGBUS), so a file cut
    short while it is replayed ends the reading with a UsageError naming it, before the next piece."""
    data = gzip.open(GOLDEN).read()
    plain = tmp_path / "golden.ilp"
    plain.write_bytes(data)
    with IlpFile(str(plain), 4096, file_send.buffers_needed(1)) as ilp:
        ilp.first_piece()
        pieces = ilp.pieces()
        ilp.release(next(pieces))
        os.truncate(plain, len(data) // 2)
        with pytest.raises(UsageError, match="shrank while it was read"):
            for piece in pieces:
                ilp.release(piece)


def test_replay_to_socat_sink(tmp_path, socat_sink, devnull):
    record = run_replay(ReplayOptions(path=str(GOLDEN), target="sink", host=socat_sink.host, ilp_port=socat_sink.port,
                                      results_dir=str(tmp_path)), out=devnull)
    assert record.phases["send"].bytes == len(gzip.open(GOLDEN).read())


# --- faults ---------------------------------------------------------------------------------------




@pytest.mark.slow
@pytest.mark.parametrize("target_args", [[], ["--target", "sink"], ["--transport", "http"]])
def test_nothing_listening_is_a_clear_error(tmp_path, target_args):
    port = free_port()
    result = run_cli("bench", "--send", "--row-count", "1000", "--host", "127.0.0.1", "--ilp-port", str(port),
                     "--http-port", str(port), "--results", str(tmp_path / "r.json"), *target_args, timeout=30)
    assert_one_line_error(result, 1, f"127.0.0.1:{port}")
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "failed"


def test_replay_to_closed_port(tmp_path):
    port = free_port()
    result = run_cli("replay", str(GOLDEN), "--target", "sink", "--ilp-port", str(port),
                     "--results", str(tmp_path / "r.json"), timeout=30)
    assert_one_line_error(result, 1, f"localhost:{port}")


@pytest.mark.slow
def test_validation_timeout_states_both_counts(tmp_path, questdb, devnull):
    """A deduplicating table keeps fewer rows than were sent: the run must fail, saying both counts."""
    client = questdb.client
    create_table(client, cpu_only.schema("double", "cpu"))
    client.exec("ALTER TABLE cpu DEDUP ENABLE UPSERT KEYS(timestamp, hostname)")
    first = run_bench(options(tmp_path, questdb, send=True, keep_table=True, row_count=2_000),
                      out=devnull)
    assert first.validation.visible_rows == 2_000
    with pytest.raises(RunError) as failure:
        run_bench(options(tmp_path, questdb, send=True, keep_table=True, row_count=2_000,
                          validation_query_timeout=3), out=devnull)
    message = str(failure.value)
    assert "expected 4000 rows" in message and "2000 visible" in message, message
    assert client.count("cpu") == 2_000


@pytest.mark.slow
def test_incompatible_schema_is_refused_before_sending(tmp_path, questdb, devnull):
    client = questdb.client
    client.drop_table("cpu")
    client.exec("CREATE TABLE cpu (hostname STRING, usage_user STRING, timestamp TIMESTAMP) TIMESTAMP(timestamp) "
                "PARTITION BY DAY WAL")
    with pytest.raises(UsageError):
        run_bench(options(tmp_path, questdb, send=True, keep_table=True), out=devnull)
    assert client.count("cpu") == 0
    result = run_cli("bench", "--send", "--keep-table", "--row-count", "1000", "--host", questdb.host,
                     "--ilp-port", str(questdb.ilp_port), "--http-port", str(questdb.http_port),
                     "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "cpu")


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,fragment",
    [
        (["--workers", "0"], "--workers"),
        (["--worker-chunk-row-count", "0"], "--worker-chunk-row-count"),
        (["--transport", "udp"], "--transport"),
        (["--protocol-version", "4"], "--protocol-version"),
        (["--op", "iterrows", "--workers", "2"], "--op iterrows"),
        (["--op", "pandas"], "--op"),
        (["--target", "elsewhere"], "--target"),
        (["--target", "sink", "--transport", "http"], "sink"),
        (["--fields", "float"], "--fields"),
        (["--row-count", "0"], "--row-count"),
        (["--scale", "-1"], "--scale"),
        (["--workers", "two"], "--workers"),
    ],
)
def test_invalid_bench_options(tmp_path, args, fragment):
    result = run_cli("bench", "--row-count", "1000", "--results", str(tmp_path / "r.json"), *args)
    assert_one_line_error(result, 2, fragment)


@pytest.mark.slow
def test_unreadable_replay_file(tmp_path):
    result = run_cli("replay", str(tmp_path / "missing.ilp"))
    assert_one_line_error(result, 2, "missing.ilp")


@pytest.mark.slow
def test_progress_bar_only_on_a_terminal(tmp_path):
    import os
    import pty

    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "bench", "--op", "itertuples", "--row-count", "20000", "--scale", "100",
         "--reporting-period", "0", "--results", str(tmp_path / "r.json")],
        stdout=secondary, stderr=subprocess.PIPE)
    os.close(secondary)
    captured = b""
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        captured += data
    assert process.wait(timeout=120) == 0
    os.close(primary)
    assert b"\r\x1b[K" in captured and b"100.0% 20000/20000 rows" in captured


def test_a_failed_run_still_leaves_a_record(tmp_path, devnull):
    path = tmp_path / "failed.json"
    with pytest.raises(Exception):
        run_bench(BenchOptions(row_count=1_000, send=True, host="127.0.0.1", http_port=1, ilp_port=1,
                               results=str(path), reporting_period=0), out=devnull)
    record = json.loads(path.read_text())
    assert record["status"] == "failed" and "127.0.0.1:1" in record["error"]
