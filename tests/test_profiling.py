"""``--profile`` against real processes: py-spy sampling the client, async-profiler loaded into a real QuestDB's JVM
through HotSpot's attach. A profiled bench run leaves both sides' stacks, their buckets in the record, flame graphs in
the report and a verdict; into the sink the verdict names the client; a server paused mid-run shows as the client waiting; a
profiler that dies leaves the run whole and its side marked missing; what cannot be profiled ends in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest
from helpers import assert_one_line_error, free_port, run_cli

from harness.records.store import load_results
from harness.telemetry.stacks import read_collapsed

pytestmark = pytest.mark.slow


def questdb_flags(server) -> list[str]:
    return ["--host", server.host, "--http-port", str(server.http_port), "--ilp-port", str(server.ilp_port),
            "--pg-port", str(server.pg_port), "--server-metrics-port", str(server.server.min_port)]


def test_a_profiled_bench_run_leaves_both_sides_buckets_flame_graphs_and_a_verdict(questdb, tmp_path):
    results = tmp_path / "bench.json"
    # ILP over TCP, the default, which native frames allow.
    result = run_cli("bench", "--send", "--stream", "--row-count", "300000", "--workers", "2",
                     *questdb_flags(questdb), "--profile", "--profile-native", "--report", "--results", str(results),
                     timeout=300)
    assert result.returncode == 0, result.stderr
    (verdict,) = [line for line in result.stdout.splitlines() if line.startswith("Verdict: ")]
    assert verdict.endswith("(the send phase)")
    (record,) = load_results([results])
    profile = record.profile
    assert profile.client.profiler.startswith("py-spy") and profile.server.profiler.startswith("async-profiler")
    assert profile.server.mode in ("ctimer", "itimer") and profile.client.mode.endswith("native frames")
    # The send phase whole on both sides (a recording after the phases, py-spy stopped as the run ends, may come
    # back missing on a loaded machine: the record then says so, as it does here when it does).
    assert "collapsed send" in profile.client.files and "collapsed send" in profile.server.files
    assert profile.client.missing is None or profile.client.missing.startswith("after the phases: ")
    assert profile.client.samples > 0 and profile.server.samples > 0
    assert profile.client.buckets["serialization"] > 0 and profile.client.buckets["send/flush"] > 0
    assert profile.server.buckets["ILP/HTTP parsing"] + profile.server.buckets["WAL writing"] > 0
    assert set(profile.client.phases) >= {"send"}
    folder = results.parent / profile.folder
    client = read_collapsed(folder / profile.client.files["collapsed send"])
    server = read_collapsed(folder / profile.server.files["collapsed send"])
    assert any("io/questdb/" in stack for stack in server)
    # The client's native serializer: the questdb client's Rust frames, by name.
    assert any("questdb" in frame and "::" in frame for stack in client for frame in stack.split(";"))
    speedscope = json.loads((folder / profile.client.files["speedscope"]).read_text())
    assert [one["name"] for one in speedscope["profiles"]][0].endswith(": send") or \
        any(one["name"].endswith(": send") for one in speedscope["profiles"])
    page = results.with_suffix(".html").read_text()
    assert page.count("<b>client, all phases</b>") == 1 and page.count("<b>QuestDB, all phases</b>") == 1
    assert "io/questdb/" in page and "Verdict" in page
    compared = run_cli("compare", str(results), str(results))
    assert compared.returncode == 0, compared.stderr
    assert "  serialization" in compared.stdout and compared.stdout.count("Verdict") == 0


def test_by_default_the_client_is_sampled_without_pausing_it_its_calls_told_apart(questdb, tmp_path):
    results = tmp_path / "python.json"
    result = run_cli("bench", "--send", "--stream", "--transport", "http", "--row-count", "300000",
                     *questdb_flags(questdb), "--profile", "--results", str(results), timeout=300)
    assert result.returncode == 0, result.stderr  # ILP/HTTP's flush unharmed
    (record,) = load_results([results])
    client = record.profile.client
    assert client.mode == "wall, all threads, Python frames" and client.missing is None
    assert client.buckets["serialization"] > 0 and client.buckets["send/flush"] > 0
    folder = results.parent / record.profile.folder
    stacks = read_collapsed(folder / client.files["collapsed send"])
    assert not any("::" in stack for stack in stacks)  # no native frame


def test_native_frames_over_ilp_http_are_refused_in_one_line(questdb, tmp_path):
    result = run_cli("bench", "--send", "--transport", "http", "--row-count", "1000", *questdb_flags(questdb),
                     "--profile", "--profile-native", "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "--profile-native pauses the client at each sample, which breaks its ILP/HTTP "
                                     "flush")
    assert questdb.client.table_columns("cpu") is None


def test_into_the_sink_the_verdict_names_the_client(socat_sink, tmp_path):
    results = tmp_path / "sink.json"
    result = run_cli("bench", "--send", "--stream", "--target", "sink", "--host", socat_sink.host, "--ilp-port",
                     str(socat_sink.port), "--row-count", "200000", "--profile", "--results", str(results),
                     timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Profile: the client only: into the sink" in result.stdout
    (record,) = load_results([results])
    assert record.profile.bound == "client" and record.profile.server is None
    assert record.profile.verdict.startswith("client-bound (into the sink")


def waiting_share(record) -> float:
    """The share of the client's working samples (``Side.working``) of the send phase spent in send/flush."""
    from harness.profiling.verdict import Side

    phase = record.profile.client.phases["send"]
    total = sum(phase.values())
    return Side(None, {name: count / total for name, count in phase.items()}).working().get("send/flush", 0.0)


@pytest.mark.serial  # a pause at a moment of a run, whose share of the samples another test's load would blur
def test_a_server_paused_mid_run_shows_as_the_client_waiting(killable_questdb, tmp_path):
    server = killable_questdb

    def run(name: str, pause: bool):
        results = tmp_path / f"{name}.json"
        command = [sys.executable, "-m", "harness", "bench", "--send", "--stream", "--transport", "http",
                   "--row-count", "1000000", *questdb_flags(server), "--reporting-period", "0", "--profile",
                   "--results", str(results)]
        server.client.drop_table("cpu")  # the pause waits for this run's own table
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if pause:
            # In the send phase: the run has made its table and sends (1 M rows take seconds), the pause a large part
            # of it; not once rows are visible, which under load can be after the send phase has ended.
            deadline = time.monotonic() + 120
            while not server.client.table_columns("cpu"):
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.05)
            time.sleep(0.5)
            assert process.poll() is None
            pid = server.server.pid()
            os.kill(pid, signal.SIGSTOP)
            time.sleep(2)
            os.kill(pid, signal.SIGCONT)
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        (record,) = load_results([results])
        return record

    # A fresh server: its JVM warmed up first, or the first run's share says its warm-up.
    warmed = run_cli("bench", "--send", "--row-count", "1000000", *questdb_flags(server), "--results",
                     str(tmp_path / "warm-up.json"), timeout=300)
    assert warmed.returncode == 0, warmed.stderr
    plain, paused = run("plain", False), run("paused", True)
    assert waiting_share(paused) > waiting_share(plain), (waiting_share(paused), waiting_share(plain))


@pytest.mark.serial  # a kill at a moment of a run
def test_a_profiler_that_dies_mid_run_leaves_the_run_whole_and_says_so(questdb, tmp_path):
    results = tmp_path / "died.json"
    command = [sys.executable, "-m", "harness", "bench", "--send", "--stream", "--row-count", "2000000",
               *questdb_flags(questdb), "--reporting-period", "0", "--profile", "--results", str(results)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = []

    def kill_py_spy():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            spies = [child for child in psutil.Process(process.pid).children(recursive=True)
                     if "py-spy" in child.name()]
            if spies and questdb.client.table_columns("cpu") and questdb.client.count("cpu") > 0:
                spies[0].kill()
                killed.append(spies[0].pid)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_py_spy)
    killer.start()
    out, err = process.communicate(timeout=300)
    killer.join()
    assert killed and process.returncode == 0, err
    assert "part of the client's profile is missing: send: py-spy ended" in out
    (record,) = load_results([results])
    assert record.status == "ok" and record.validation.visible_rows == 2000000
    assert record.profile.client.missing.startswith("send: py-spy ended")
    assert record.profile.server.samples > 0 and "collapsed send" in record.profile.server.files


def test_profiled_read_and_query_runs_sample_the_server_answering(questdb, tmp_path):
    # 432,000 rows: a read and the queries of seconds, long enough for py-spy to begin sampling.
    data_set = ["--seed", "7", "--scale", "100", "--timestamp-start", "2016-01-01T00:00:00Z", "--timestamp-end",
                "2016-01-01T12:00:00Z"]
    loaded = run_cli("bench", "--send", *data_set, *questdb_flags(questdb), "--results", str(tmp_path / "load.json"))
    assert loaded.returncode == 0, loaded.stderr
    read = run_cli("read", "--table", "cpu", "--host", questdb.host, "--http-port", str(questdb.http_port),
                   "--pg-port", str(questdb.pg_port), "--server-metrics-port", str(questdb.server.min_port),
                   "--profile", "--results", str(tmp_path / "read.json"), timeout=300)
    assert read.returncode == 0, read.stderr
    (record,) = load_results([tmp_path / "read.json"])
    assert "read" in record.profile.client.phases and record.profile.server.samples > 0
    assert record.profile.server.buckets["SQL"] > 0 and "Verdict: " in read.stdout
    # The queries phase is a recording of its own on both sides, and the verdict reads it.
    queries = run_cli("queries", "run", "--generate", *data_set, "--queries", "5", "--host", questdb.host,
                      "--pg-port", str(questdb.pg_port), "--http-port", str(questdb.http_port), "--profile",
                      "--results", str(tmp_path / "queries.json"), timeout=300)
    assert queries.returncode == 0, queries.stderr
    (record,) = load_results([tmp_path / "queries.json"])
    assert "queries" in record.profile.client.phases and "queries" in record.profile.server.phases
    assert record.profile.verdict.endswith("(the queries phase)") and "not known" not in record.profile.verdict


@pytest.mark.parametrize("flag", ["--profile-wall", "--profile-native"])
def test_the_profiles_flags_are_only_with_profile(flag):
    assert_one_line_error(run_cli("bench", flag, "--http-port", str(free_port())), 2, f"{flag}: only with --profile")


def test_profile_with_clients_is_refused_in_one_line():
    assert_one_line_error(run_cli("bench", "--send", "--profile", "--clients", "2", "--http-port",
                                  str(free_port())), 2, "--profile samples one client process")


def bench_with(patch: str, questdb, tmp_path) -> subprocess.CompletedProcess:
    """A profiled bench run in a process whose harness ``patch`` (a statement) changed first: a component made
    unavailable there, as where it is not installed."""
    script = (f"{patch}; from harness.cli import main; main(['bench', '--send', '--row-count', '1000', '--profile', "
              f"'--http-port', '{questdb.http_port}', '--ilp-port', '{questdb.ilp_port}', "
              f"'--results', '{tmp_path / 'r.json'}'])")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)


def test_a_missing_py_spy_is_one_line_naming_how_to_install_it(questdb, tmp_path):
    result = bench_with("import harness.profiling.client as client; client.py_spy_binary = lambda: None", questdb,
                        tmp_path)
    assert_one_line_error(result, 2, "--profile needs py-spy", "pip install py-spy")
    assert questdb.client.table_columns("cpu") is None  # nothing ran


def test_an_async_profiler_that_cannot_be_had_is_one_line(questdb, tmp_path):
    result = bench_with("import harness.profiling.server as server; server.async_profiler_version = lambda: '0.0.404'",
                        questdb, tmp_path)
    assert_one_line_error(result, 2, "async-profiler's library", "tools.profiler:async-profiler:0.0.404")


def test_a_jvm_that_refuses_the_agent_is_one_line(questdb_factory, tmp_path):
    # A JVM started with its attach mechanism disabled refuses every agent.
    server = questdb_factory(extra_env={"JDK_JAVA_OPTIONS": "-XX:+DisableAttachMechanism"})
    result = run_cli("bench", "--send", "--row-count", "1000", *questdb_flags(server), "--profile",
                     "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "async-profiler in QuestDB's JVM", "did not start its attach listener",
                          "-XX:+DisableAttachMechanism")


def test_a_jvm_of_another_user_is_refused_saying_whose_it_is(questdb):
    # HotSpot's attach answers only its own user or root: a client of another user is told so, not left hanging.
    from harness.profiling.jvm_attach import jvm_serving

    pid, why = jvm_serving(questdb.host, questdb.http_port)
    assert why is None, why
    # Imported first: the user it becomes may not read this checkout.
    script = ("import os\nfrom harness.profiling.jvm_attach import AttachError, Jvm\n"
              "os.setgid(65534); os.setuid(65534)\n"
              f"try:\n    Jvm({pid}).load('/nonexistent.so', 'start')\nexcept AttachError as exc:\n    print(exc)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith(f"QuestDB's JVM (pid {pid})"), done.stderr
    assert "this user" in done.stdout or "runs as 0:0 and this client as 65534:65534" in done.stdout


def test_a_stale_attach_socket_is_replaced(questdb, tmp_path):
    # A socket file nobody listens on at the JVM's attach path (a restarted container keeps its /tmp): the JVM is
    # asked to listen anew, and answers.
    import socket as sockets

    from harness.profiling.jvm_attach import Jvm, jvm_serving

    pid, why = jvm_serving(questdb.host, questdb.http_port)
    jvm = Jvm(pid)
    path = jvm.path(f"/tmp/.java_pid{jvm.own_pid}")
    path.unlink(missing_ok=True)
    stale = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()
    with pytest.raises(ConnectionRefusedError):
        probe = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        try:
            probe.connect(str(path))
        finally:
            probe.close()
    result = run_cli("bench", "--send", "--row-count", "1000", *questdb_flags(questdb), "--profile", "--results",
                     str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stderr
    (record,) = load_results([tmp_path / "r.json"])
    assert record.profile.server is not None and record.profile.server_not_profiled is None


def test_a_server_not_on_this_machine_is_not_profiled_and_the_run_says_why():
    from harness.profiling.profiled import server_to_profile
    from harness.run.bench_options import BenchOptions

    pid, why = server_to_profile(BenchOptions(host="db.example.invalid", send=True, profile=True).profiling())
    assert pid is None and why.startswith("QuestDB at db.example.invalid is not on this machine")


def test_tune_profiles_the_baseline_and_the_recommendation_after_the_sweep(questdb, tmp_path, devnull):
    from harness.commands.tune import TuneOptions, run_tune
    from harness.run.tune import AS_IS, Setting

    options = TuneOptions(row_count=20000, scale=10, target="questdb", host=questdb.host, http_port=questdb.http_port,
                          ilp_port=questdb.ilp_port, rounds=1, budget=300, results=str(tmp_path / "tune.json"),
                          settings=[Setting(AS_IS, {}), Setting("2 workers", {"workers": 2})], profile=True)
    record = run_tune(options, devnull)
    profiles = record.extra["profiles"]
    assert AS_IS in profiles and set(profiles) <= {AS_IS, "2 workers"}
    for profile in profiles.values():
        (profiled,) = load_results([tmp_path / profile["record"]])
        assert profiled.profile.verdict == profile["verdict"] and profiled.profile.server.samples > 0
    # The sweep's own trials were not profiled; the scratch table is gone after the profiled ones too.
    assert sorted(path.name for path in tmp_path.glob("*.profile")) == sorted(
        path.with_suffix(".profile").name for path in map(lambda entry: tmp_path / entry["record"], profiles.values()))
    assert questdb.client.table_columns(record.parameters["scratch_table"]) is None
