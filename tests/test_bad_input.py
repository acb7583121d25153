"""Bad input, table-driven: each command line must end in one line on stderr, the documented exit code,
no traceback, within its time bound, and must touch nothing: the QuestDB table it names is still there, rows and all.

The commands run in this process (``harness.cli.main``), so a hundred of them cost seconds; the ones that
start servers or runs are covered by the end-to-end tests. The Make targets' variables (``make -s TARGET
VAR=...``) run in a process each, and must end before the target starts QuestDB.
"""

from __future__ import annotations

import functools
import gzip
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.tsbs.cpu_only import generator as cpu_only
from harness.cli import main
from helpers import GOLDEN_DIR, assert_one_error_line
from harness.questdb.schema import create_table
from harness.questdb.wal import wait_for_count

GOLDEN = GOLDEN_DIR / "cpu-only_seed123_scale10_1h_10s.ilp.gz"
PROJECT_ROOT = Path(__file__).resolve().parents[1]

# (arguments, exit code, a fragment the one line must hold). {server} becomes the test QuestDB's host and
# ports, so that a check that came too late would drop the sentinel table; {tmp} a per-test folder.
# Every case ends well within this (a hang guard: most end in milliseconds, a few load a use case's kernels).
CASE_SECONDS = 30
BENCH = ["bench", "--send", "--row-count", "1000", "{server}", "--results", "{tmp}/r.json"]
CASES = [
    # generate
    (["generate", "--use-case", "trucks"], 2, "--use-case"),
    (["generate", "--scale", "0"], 2, "--scale"),
    (["generate", "--scale", "-5"], 2, "--scale"),
    (["generate", "--scale", "1e9"], 2, "--scale"),
    (["generate", "--scale", "1000000000"], 2, "GiB"),
    (["generate", "--seed", "x"], 2, "--seed"),
    (["generate", "--seed", str(2**63)], 2, "--seed"),
    (["generate", "--seed", str(-(2**63) - 1)], 2, "--seed"),
    (["generate", "--timestamp-start", "yesterday"], 2, "--timestamp-start"),
    (["generate", "--timestamp-start", "2016-13-01T00:00:00Z"], 2, "--timestamp-start"),
    (["generate", "--timestamp-start", "2016-02-30T00:00:00Z"], 2, "--timestamp-start"),
    (["generate", "--timestamp-start", "1969-12-31T23:59:59Z"], 2, "1970"),
    (["generate", "--timestamp-start", "2300-01-01T00:00:00Z", "--timestamp-end", "2301-01-01T00:00:00Z"], 2, "2262"),
    (["generate", "--timestamp-end", "2262-04-12T00:00:00Z"], 2, "2262"),
    (["generate", "--timestamp-end", "2015-01-01T00:00:00Z"], 2, "--timestamp-end"),
    (["generate", "--timestamp-end", "2016-01-01T00:00:00Z"], 2, "--timestamp-end"),
    (["generate", "--log-interval", "10"], 2, "--log-interval"),
    (["generate", "--log-interval", "0s"], 2, "--log-interval"),
    (["generate", "--log-interval", "-10s"], 2, "--log-interval"),
    (["generate", "--log-interval", "9999999999h"], 2, "--log-interval"),
    (["generate", "--log-interval", "10x"], 2, "--log-interval"),
    (["generate", "--log-interval", "48h"], 2, "--log-interval"),
    (["generate", "--max-data-points", "-1"], 2, "--max-data-points"),
    (["generate", "--fields", "float"], 2, "--fields"),
    (["generate", "--format", "csv"], 2, "--format"),
    (["generate", "--chunk-rows", "0"], 2, "--chunk-rows"),
    (["generate", "--workers", "-1"], 2, "--workers"),
    (["generate", "--symbol-dtype", "bytes"], 2, "--symbol-dtype"),
    (["generate", "--file", "{tmp}/garbage.ilp/out.ilp"], 2, "--file"),
    (["generate", "--file", "{tmp}"], 2, "--file"),
    (["generate", "--no-such-flag"], 2, "--no-such-flag"),
    (["generate", "extra-argument"], 2, "extra-argument"),
    # bench: every check before the table is touched
    (BENCH + ["--workers", "0"], 2, "--workers"),
    (BENCH + ["--workers", "two"], 2, "--workers"),
    (BENCH + ["--workers", "-3"], 2, "--workers"),
    (BENCH + ["--worker-chunk-row-count", "0"], 2, "--worker-chunk-row-count"),
    (BENCH + ["--worker-chunk-row-count", "1.5"], 2, "--worker-chunk-row-count"),
    (BENCH + ["--transport", "udp"], 2, "--transport"),
    (BENCH + ["--protocol-version", "4"], 2, "--protocol-version"),
    (BENCH + ["--protocol-version", "0"], 2, "--protocol-version"),
    (BENCH + ["--op", "pandas"], 2, "--op"),
    (BENCH + ["--op", "iterrows", "--workers", "2"], 2, "--op iterrows"),
    (BENCH + ["--target", "elsewhere"], 2, "--target"),
    (BENCH + ["--target", "sink", "--transport", "http"], 2, "sink"),
    (BENCH + ["--fields", "float"], 2, "--fields"),
    (BENCH + ["--rate", "1000", "--grace", "a while"], 2, "--grace"),
    (BENCH + ["--grace", "5s"], 2, "--grace belongs to an open-loop run"),
    (BENCH + ["--search"], 2, "--search belongs to an open-loop run"),
    (BENCH + ["--rate", "1000", "--search", "--duration", "1s"], 2, "--search bisects between two rates"),
    (BENCH + ["--rate", "100:500", "--search", "--duration", "1s", "--repeat", "0"], 2, "--repeat"),
    (BENCH + ["--symbol-dtype", "int"], 2, "--symbol-dtype"),
    (BENCH + ["--row-count", "0"], 2, "--row-count"),
    (BENCH + ["--row-count", "-1"], 2, "--row-count"),
    (BENCH + ["--scale", "0"], 2, "--scale"),
    (BENCH + ["--scale", "1000000000"], 2, "GiB"),
    (BENCH + ["--seed", str(2**64)], 2, "--seed"),
    (BENCH + ["--timestamp-start", "2016-01-01"], 2, "--timestamp-start"),
    (BENCH + ["--timestamp-start", "1900-01-01T00:00:00Z"], 2, "1970"),
    (BENCH + ["--timestamp-end", "2999-01-01T00:00:00Z"], 2, "2262"),
    (BENCH + ["--timestamp-end", "2015-01-01T00:00:00Z"], 2, "--timestamp-end"),
    (BENCH + ["--log-interval", "soon"], 2, "--log-interval"),
    (BENCH + ["--log-interval", "9999999999h"], 2, "--log-interval"),
    (BENCH + ["--validation-query-timeout", "0"], 2, "--validation-query-timeout"),
    (BENCH + ["--validation-query-timeout", "-1"], 2, "--validation-query-timeout"),
    (BENCH + ["--validation-query-timeout", "nan"], 2, "--validation-query-timeout"),
    (BENCH + ["--validation-query-timeout", "inf"], 2, "--validation-query-timeout"),
    (BENCH + ["--reporting-period", "-1"], 2, "--reporting-period"),
    (BENCH + ["--reporting-period", "inf"], 2, "--reporting-period"),
    (BENCH + ["--reporting-period", "nan"], 2, "--reporting-period"),
    (BENCH + ["--metrics-port", "0"], 2, "--metrics-port"),
    (BENCH + ["--metrics-port", "70000"], 2, "--metrics-port"),
    (BENCH + ["--metrics-linger", "-1"], 2, "--metrics-linger"),
    (BENCH + ["--metrics-linger", "inf"], 2, "--metrics-linger"),
    (BENCH + ["--ilp-port", "0"], 2, "--ilp-port"),
    (BENCH + ["--ilp-port", "65536"], 2, "--ilp-port"),
    (BENCH + ["--http-port", "99999"], 2, "--http-port"),
    (BENCH + ["--http-port", "-80"], 2, "--http-port"),
    (BENCH + ["--retry-timeout", "0"], 2, "--retry-timeout"),
    (BENCH + ["--exactly-once"], 2, "--exactly-once"),
    (BENCH + ["--exactly-once", "--transport", "http", "--target", "sink"], 2, "sink"),
    (BENCH + ["--conf", "addr=localhost:9009"], 2, "--conf"),
    (BENCH + ["--conf", "udp::addr=localhost:9009;"], 2, "--conf"),
    (BENCH + ["--conf", "tcp::protocol_version=2;"], 2, "addr"),
    (BENCH + ["--conf", "tcp::addr=localhost:9009;password"], 2, "key=value"),
    (BENCH + ["--conf", "tcp::addr=localhost:9009;protocol_versoin=2;"], 2, "protocol_versoin"),
    (BENCH + ["--conf", "tcp::addr=localhost:9009;PASSWORD=secret;"], 2, "PASSWORD"),
    (BENCH + ["--table", "cpu'; drop table cpu; --"], 2, "invalid table name"),
    (BENCH + ["--table", "a/b"], 2, "invalid table name"),
    (BENCH + ["--results", "{tmp}/garbage.ilp/r.json"], 2, "results"),
    (BENCH + ["--results", "{tmp}"], 2, "directory"),
    (BENCH + ["--write-ilp", "{tmp}/garbage.ilp/out.ilp"], 2, "--write-ilp"),
    (BENCH + ["--no-such-flag"], 2, "--no-such-flag"),
    # limits of this machine, named before anything starts
    (["bench", "--row-count", "100", "--workers", "100000", "--results", "{tmp}/r.json"], 2, "GiB of memory"),
    (BENCH + ["--workers", "100000"], 2, "--workers 100000"),
    (BENCH + ["--workers", "1000000000"], 2, "--workers 1000000000"),
    (BENCH + ["--flush-timeout", "1e300"], 2, "longest wait"),
    (BENCH + ["--row-count", "100000000000"], 2, "without --stream"),
    (BENCH + ["--timestamp-end", "2100-01-01T00:00:00Z", "--scale", "100000"], 2, "without --stream"),
    (BENCH + ["--retry-timeout", "1e12"], 2, "longest wait"),
    (BENCH + ["--metrics-linger", "1e10"], 2, "longest wait"),
    (["generate", "--workers", "100000"], 2, "--workers 100000"),
    (["replay", str(GOLDEN), "{server}", "--workers", "100000"], 2, "--workers 100000"),
    (["queries", "run", "--generate", "--workers", "100000"], 2, "--workers 100000"),
    (["bench", "--send", "--row-count", "1000", "--host", "127.0.0.1", "--http-port", "1", "--ilp-port", "1",
      "--results", "{tmp}/r.json"], 1, "127.0.0.1:1"),
    # replay
    (["replay"], 2, "'path'"),
    (["replay", "{tmp}/missing.ilp", "{server}"], 2, "missing.ilp"),
    (["replay", "{tmp}", "{server}"], 2, "cannot read"),
    (["replay", "{tmp}/empty.ilp", "{server}"], 2, "empty"),
    (["replay", "{tmp}/garbage.ilp", "{server}"], 2, "not ILP"),
    (["replay", "{tmp}/truncated.ilp.gz", "{server}"], 2, "not ILP"),
    (["replay", "{tmp}/corrupt.ilp.gz", "{server}"], 2, "cannot read"),
    (["replay", "{tmp}/not-gzip.ilp.gz", "{server}"], 2, "cannot read"),
    (["replay", "{tmp}/no-newline.ilp", "{server}"], 2, "truncated"),
    (["replay", str(GOLDEN), "{server}", "--write-size", "0"], 2, "--write-size"),
    (["replay", str(GOLDEN), "{server}", "--target", "nowhere"], 2, "--target"),
    (["replay", str(GOLDEN), "{server}", "--validation-query-timeout", "nan"], 2, "--validation-query-timeout"),
    (["replay", str(GOLDEN), "{server}", "--workers", "0"], 2, "--workers"),
    (["replay", str(GOLDEN), "{server}", "--ilp-port", "0"], 2, "--ilp-port"),
    (["replay", str(GOLDEN), "{server}", "--table", "a/b"], 2, "invalid table name"),
    (["replay", str(GOLDEN), "{server}", "--results", "{tmp}"], 2, "directory"),
    (["replay", str(GOLDEN), "{server}", "--sample-interval", "-1"], 2, "--sample-interval"),
    # queries generate
    (["queries", "generate"], 2, "--query-type"),
    (["queries", "generate", "--query-type", "no-such-type"], 2, "no-such-type"),
    (["queries", "generate", "--query-type", "all", "--scale", "0"], 2, "--scale"),
    (["queries", "generate", "--query-type", "all", "--queries", "-1"], 2, "--queries"),
    (["queries", "generate", "--query-type", "all", "--seed", "x"], 2, "--seed"),
    (["queries", "generate", "--query-type", "all", "--use-case", "trucks"], 2, "--use-case"),
    (["queries", "generate", "--query-type", "all", "--timestamp-start", "soon"], 2, "--timestamp-start"),
    (["queries", "generate", "--query-type", "all", "--timestamp-end", "2015-01-01T00:00:00Z"], 2,
     "--timestamp-end"),
    (["queries", "generate", "--query-type", "all", "--file", "{tmp}"], 2, "directory"),
    (["queries", "generate", "--query-type", "all", "--file", "{tmp}/garbage.ilp/q.jsonl"], 2, "query file"),
    (["queries", "generate", "--query-type", "cpu-max-all-32-24", "--scale", "10"], 2, "cpu-max-all-32-24"),
    (["queries", "generate", "--no-such-flag"], 2, "--no-such-flag"),
    # queries run
    (["queries", "run"], 2, "--generate"),
    (["queries", "run", "{tmp}/missing.jsonl"], 2, "missing.jsonl"),
    (["queries", "run", "{tmp}/garbage.ilp"], 2, "garbage.ilp"),
    (["queries", "run", "{tmp}/empty.ilp"], 2, "empty.ilp"),
    (["queries", "run", "--generate", "{tmp}/q.jsonl"], 2, "not both"),
    (["queries", "run", "--generate", "--protocol", "udp"], 2, "--protocol"),
    (["queries", "run", "--generate", "--workers", "0"], 2, "--workers"),
    (["queries", "run", "--generate", "--timeout", "0"], 2, "--timeout"),
    (["queries", "run", "--generate", "--pg-port", "70000"], 2, "--pg-port"),
    (["queries", "run", "--generate", "--queries-only-after"], 2, "--under-load"),
    (["queries", "run", "--generate", "--check"], 2, "--seed"),
    (["queries", "run", "--generate", "--under-load", "--check"], 2, "--under-load"),
    (["queries", "run", "--generate", "--query-types", "no-such-type"], 2, "no-such-type"),
    (["queries", "run", "--generate", "--load-workers", "100000", "--under-load"], 2, "--load-workers 100000"),
    (["queries", "run", "--generate", "--results", "{tmp}"], 2, "directory"),
    # report
    (["report"], 2, "'paths'"),
    (["report", "{tmp}/missing.json"], 2, "missing.json"),
    (["report", "{tmp}/garbage.ilp"], 2, "garbage.ilp"),
    (["report", "{tmp}/not-ours.json"], 2, "not a harness results file"),
    (["report", "{tmp}/future.json"], 2, "schema version 99"),
    # compare, native, the command itself
    (["compare", "{tmp}/missing.json"], 2, "missing.json"),
    (["compare", "{tmp}/garbage.ilp"], 2, "garbage.ilp"),
    (["compare", "{tmp}/not-ours.json"], 2, "not a harness results file"),
    (["compare", "{tmp}/future.json"], 2, "schema version 99"),
    (["compare", "{tmp}/malformed.json"], 2, "not a well-formed results file"),
    (["compare"], 2, "'paths'"),
    (["native", "up", "--http-port", "70000"], 2, "--http-port"),
    (["native", "up", "--timeout", "0"], 2, "--timeout"),
    (["native", "launch"], 2, "launch"),
    (["native", "up", "--ilp-port", "0"], 2, "--ilp-port"),
    (["native", "up", "--pg-port", "-1"], 2, "--pg-port"),
    (["native", "up", "--min-port", "65536"], 2, "--min-port"),
    (["native", "up", "--sink-port", "x"], 2, "--sink-port"),
    (["native", "up", "--timeout", "-5"], 2, "--timeout"),
    (["native", "up", "--timeout", "1e300"], 2, "--timeout"),
    (["native", "status", "--no-such-flag"], 2, "--no-such-flag"),
    (["queries", "no-such-command"], 2, "no-such-command"),
    (["no-such-command"], 2, "no-such-command"),
]


@functools.cache
def bad_file_contents() -> dict[str, bytes]:
    """The bad files' bytes, made once (the golden file gunzipped and gzipped again took most of a case)."""
    golden = gzip.open(GOLDEN).read()
    return {"empty.ilp": b"", "garbage.ilp": b"hello world\nthis is not ILP\n",
            "truncated.ilp.gz": gzip.compress(golden[:5000]), "corrupt.ilp.gz": gzip.compress(golden)[:2000],
            "not-gzip.ilp.gz": b"plain text, not gzip\n", "no-newline.ilp": golden[: golden.index(b"\n", 1000)],
            "not-ours.json": b'{"hello": 1}', "future.json": b'{"schema_version": 99, "phases": {}}',
            "malformed.json": b'{"schema_version": 2, "phases": {"send": {"rows": 1}}}'}


@pytest.fixture
def bad_files(tmp_path) -> Path:
    """A folder of the test's own holding the bad files (a case may write beside them)."""
    for name, contents in bad_file_contents().items():
        (tmp_path / name).write_bytes(contents)
    return tmp_path


SENTINEL_ROWS = [["sentinel", 1, "1970-01-01T00:00:00.000000Z"]]
_sentinel_columns: list = []  # the columns QuestDB gave the table this module made first


@pytest.fixture
def sentinel(questdb_server):
    """The session's QuestDB holding table ``cpu`` with one sentinel row, which a case must leave alone. Made
    anew unless ``cpu`` is exactly that already (the case before, on this worker, checked it last): the
    state is read from the server, not assumed."""
    client = questdb_server.client
    columns = client.table_columns("cpu")
    if not (columns and columns == _sentinel_columns
            and client.query("select hostname, usage_user, timestamp from cpu")[1] == SENTINEL_ROWS):
        client.drop_table("cpu")
        create_table(client, cpu_only.schema("long", "cpu"))
        client.exec("insert into cpu (hostname, usage_user, timestamp) values ('sentinel', 1, 0)")
        wait_for_count(client, "cpu", 1, 30)
        _sentinel_columns[:] = client.table_columns("cpu")
    return questdb_server


def case_id(args: list[str]) -> str:
    return " ".join(["bench..."] + args[len(BENCH):] if args[:len(BENCH)] == BENCH else args)


@pytest.mark.parametrize("args, code, fragment", CASES, ids=[case_id(case[0]) for case in CASES])
def test_bad_input_is_one_line_and_touches_nothing(sentinel, bad_files, capsys, args, code, fragment):
    questdb, client = sentinel, sentinel.client
    server = ["--host", questdb.host, "--http-port", str(questdb.http_port), "--ilp-port", str(questdb.ilp_port)]
    argv = []
    for arg in args:
        argv.extend(server if arg == "{server}" else [arg.replace("{tmp}", str(bad_files))])
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    took = time.monotonic() - started
    stderr = capsys.readouterr().err
    assert exit_.value.code == code, stderr
    assert_one_error_line(stderr, fragment)
    assert "secret" not in stderr
    assert client.count("cpu") == 1, "the table was touched"
    assert took < CASE_SECONDS, f"took {took:.1f}s"


# The Make targets' variables: (make arguments, a fragment of make's one line). Every target here starts a
# native QuestDB; its variables are checked while make reads the Makefile, before anything starts.
MAKE_CASES = [
    (["bench-native", "WORKERS=abc"], "bench-native: Invalid value for '--workers'"),
    (["bench-native", "ROWS=-1"], "bench-native: Invalid value for '--row-count'"),
    (["bench-native", "CLIENTS=0"], "bench-native: Invalid value for '--clients'"),
    (["bench-native", "USE_CASE=nope"], "unknown use case 'nope'"),
    (["bench-native", "FIELDS=float"], "'float' is not one of 'double', 'long'"),
    (["bench-native", "TRANSPORT=udp"], "--transport"),
    (["bench-native", "OP=iterrows", "WORKERS=2"], "--op iterrows is the single-threaded row-by-row baseline"),
    (["bench-native", "ARGS=--no-such-flag"], "No such option: --no-such-flag"),
    (["bench-queries", "QWORKERS=0"], "bench-queries: Invalid value for '--workers'"),
    (["bench-queries", "QPROTOCOL=grpc"], "'grpc' is not one of 'pgwire', 'http'"),
    (["bench-queries", "QLOAD=yes"], "QLOAD must be 1 (load the data set first) or 0 (got 'yes')"),
    (["bench-queries", "QHTTP_PORT=70000"], "--http-port"),
    (["bench-queries", "QARGS=--query-types nope"], "unknown cpu-only query type 'nope'"),
    (["bench-read", "READ_ROUNDS=0"], "READ_ROUNDS must be a positive integer (got '0')"),
    (["bench-read", "READ_WORKERS=1,x"], "READ_WORKERS must be positive integers separated by commas (got '1,x')"),
    (["bench-read", "READ_ROWS=0"], "bench-read: Invalid value for '--row-count'"),
    (["bench-table", "WORKERS=0"], "bench-table: Invalid value for '--workers'"),
    (["bench-exactly-once", "ROWS=ten"], "bench-exactly-once: Invalid value for '--row-count'"),
    (["bench-sampler-overhead", "WORKERS=-2"], "bench-sampler-overhead: Invalid value for '--workers'"),
]


@pytest.fixture
def nothing_started():
    """Fails the test if the target started the native QuestDB (`make native-up`'s, in .cache/native/), and
    stops it then."""
    from harness.servers.questdb import NativeQuestDB

    server = NativeQuestDB()
    running_before = server.is_running()
    yield
    if not running_before and server.is_running():
        server.stop()
        pytest.fail("the target started QuestDB before refusing its input")


@pytest.mark.slow
@pytest.mark.parametrize("args, fragment", MAKE_CASES, ids=[" ".join(case[0]) for case in MAKE_CASES])
def test_a_make_targets_bad_variable_is_one_line_before_anything_starts(nothing_started, args, fragment):
    started = time.monotonic()
    # PY: the harness of these tests (make's own default, .venv/bin/python, may not exist here).
    result = subprocess.run(["make", "-s", *args, f"PY={sys.executable}"], cwd=PROJECT_ROOT, capture_output=True,
                            text=True, timeout=CASE_SECONDS)
    took = time.monotonic() - started
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == "", result.stdout
    assert result.stderr.count("\n") == 1 and "*** " in result.stderr and result.stderr.endswith("Stop.\n"), \
        result.stderr
    assert fragment in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert took < CASE_SECONDS, f"took {took:.1f}s"


@pytest.mark.parametrize("args", [["bench", "--send", "--row-count", "10"],
                                  ["queries", "run", "--generate", "--query-types", "lastpoint"]])
def test_a_dry_run_takes_good_options_quietly(tmp_path, capsys, args):
    main([*args, "--dry-run", "--results", str(tmp_path / "r.json")])
    assert capsys.readouterr() == ("", "") and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_make_checks_let_good_variables_through():
    """`make -n`: the checks run as make reads the Makefile, and the targets' commands are printed, not run."""
    result = subprocess.run(["make", "-s", "-n", "bench-native", "bench-queries", "bench-read", f"PY={sys.executable}"],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=CASE_SECONDS)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "harness bench --send --report --clients 1" in result.stdout


def test_at_least_a_hundred_and_fifty_cases():
    assert len(CASES) + len(MAKE_CASES) >= 150


def test_a_parameter_named_in_a_message_is_said_as_each_edge_calls_it():
    """The library names a parameter by its own name; the command line says its flag (an options class's own
    spelling where it has one: ``time_ordered`` is ``--sort``), the notebook its keyword."""
    from harness.errors import ParameterError, keyword_of, named, spoken
    from harness.options.declare import said_by_flags
    from harness.run.bench_options import BenchOptions

    error = ParameterError("time_ordered", f"cannot be given with {named('at_format')}")
    assert str(error) == f"time_ordered: cannot be given with {named('at_format')}"
    assert said_by_flags(error, BenchOptions) == "--sort: cannot be given with --at-format"
    assert spoken(str(error), keyword_of) == "time_ordered: cannot be given with at_format="
