"""The profile's parts that need no profiler: collapsed stacks read, merged and turned into speedscope; frames put in
the named buckets (``harness.telemetry.stack_buckets``, with frames as py-spy and async-profiler write them); the
verdict's rules; the flame graph's SVG; compare's table of two profiled runs. The profilers themselves, against real
processes, are tests/test_profiling.py's."""

from __future__ import annotations

import re
import json
from collections import Counter

from harness.profiling.verdict import Side, verdict
from harness.records.run_record import ProfileFigures, RunRecord, SideProfile
from harness.report.flamegraph import flame_graph
from harness.report.tables import profile_table
from harness.telemetry.stack_buckets import CLIENT_BUCKETS, OTHER, SERVER_BUCKETS, bucket_of, bucket_samples, shares
from harness.telemetry.stacks import parse_collapsed, speedscope, top_frames


def test_collapsed_stacks_are_read_and_counted():
    stacks = parse_collapsed(["a;b;c 3\n", "a;b 2\n", "a;b;c 1\n", "a note without a count\n", "\n"])
    assert stacks == Counter({"a;b;c": 4, "a;b": 2})
    assert top_frames(stacks) == [("c", 4), ("b", 2)]


def test_a_speedscope_file_has_a_profile_a_phase_sharing_its_frames():
    document = speedscope({"send": Counter({"a;b": 3}), "serialize": Counter({"a;c": 1})}, "client", 100)
    names = [frame["name"] for frame in document["shared"]["frames"]]
    assert names == ["a", "b", "c"]
    send, serialize = document["profiles"]
    assert send["name"] == "client: send" and send["samples"] == [[0, 1]] and send["weights"] == [0.03]
    assert serialize["samples"] == [[0, 2]] and serialize["endValue"] == 0.01
    json.dumps(document)


# Stacks as the profilers write them (taken from real profiles of bench runs on the reference machine).
CLIENT_STACKS = {
    "process 1;thread (32176): send-0;_send_chunk (harness/ingest/senders.py);_client__dataframe (questdb/dataframe.pxi);"
    "line_sender_buffer_column_f64 (questdb/_client.so);questdb::ingress::buffer::ilp::F64Serializer::as_str "
    "(questdb/_client.so)": "serialization",
    "process 1;thread (32177): send-1;_send_chunk (harness/ingest/senders.py);questdb::ingress::sender::Sender::flush "
    "(questdb/_client.so);questdb::ingress::sender::tcp::SyncConnection::core::io::write::Write::write_all "
    "(questdb/_client.so)": "send/flush",
    "process 1;thread (32176): send-0;_client__dataframe (questdb/dataframe.pxi);take_gil (libpython3.11.so.1.0)":
        "waiting for the GIL",
    # take_gil inlined (libpython 3.11): a condition wait straight from the code re-taking the GIL ...
    "process 1;thread (16524): send-1;_client__dataframe (questdb/dataframe.pxi);_client__ensure_has_gil "
    "(questdb/_client.pyx);pthread_cond_timedwait (libc.so.6);0x7f799f6a3f16 (libc.so.6)": "waiting for the GIL",
    "process 1;thread (16524): send-1;arrow::py::NumPyConverter::VisitNative<arrow::Int16Type> "
    "(pyarrow/libarrow_python.so.2600);arrow::py::NumPyBuffer::NumPyBuffer (pyarrow/libarrow_python.so.2600);"
    "pthread_cond_timedwait (libc.so.6)": "waiting for the GIL",
    # ... where a lock's wait comes through PyThread_acquire_lock.
    "process 1;thread (16525): chunk-generator;Condition.wait (threading.py);lock_PyThread_acquire_lock "
    "(libpython3.11.so.1.0);pthread_cond_timedwait (libc.so.6)": "idle",
    "process 1;thread (32178): chunk-generator;chunks (harness/tsbs/cpu_only/generate.py)": "TSBS generation",
    "process 1;thread (32147): MainThread;Thread.join (threading.py);Thread._wait_for_tstate_lock (threading.py);"
    "lock_PyThread_acquire_lock (libpython3.11.so.1.0)": "idle",
    "process 1;thread (32149): sampler;_run (harness/telemetry/timeseries.py);Condition.wait (threading.py)":
        "the harness's threads",
    "process 1;thread (32147): MainThread;<module> (harness/__main__.py)": OTHER,
    # Python frames only (the default): the harness's named calls into the client.
    "process 1;thread (423): send-0;SendWorker.process (harness/ingest/workers.py);SendWorker._send "
    "(harness/ingest/workers.py);IlpConnection.frame (harness/ingest/wire/ilp.py);append_frame_to_sender "
    "(harness/ingest/wire/ilp.py)": "serialization",
    "process 1;thread (424): send-1;SendWorker._send (harness/ingest/workers.py);IlpConnection.commit "
    "(harness/ingest/wire/ilp.py);flush_sender (harness/ingest/wire/ilp.py)": "send/flush",
    # QWP: one dataframe() call encodes, sends and waits for the commit (pandas' own frames inside it too).
    "process 1583;thread (1624): send-0;SendWorker._send (harness/ingest/workers.py);QwpConnection.frame "
    "(harness/ingest/wire/qwp.py);load_frame (harness/ingest/wire/qwp.py);NDFrame.dtypes (pandas/core/generic.py)":
        "QWP dataframe()",
}
SERVER_STACKS = {
    "[GC Thread#0 tid=12];thread_native_entry;G1ParScanThreadState::trim_queue": "GC",
    "[questdb-shared-network-1 tid=40];io/questdb/mp/Worker.run;io/questdb/cutlass/http/HttpConnectionContext.handleClientRecv;"
    "io/questdb/cutlass/line/http/LineHttpProcessorImpl.onChunk;io/questdb/cutlass/line/tcp/LineTcpParser.parse": "ILP/HTTP parsing",
    "[questdb-shared-network-1 tid=40];io/questdb/cutlass/line/http/LineHttpProcessorImpl.commit;"
    "io/questdb/cairo/wal/WalWriter.commit;io/questdb/std/Files.msync": "commits and fsync",
    "[questdb-wal-apply-2 tid=51];io/questdb/cairo/wal/ApplyWal2TableJob.doRun;"
    "io/questdb/cairo/TableWriter.processWalBlock;io/questdb/cairo/O3CopyJob.copy": "WAL apply and O3 merge",
    "[questdb-shared-network-1 tid=40];io/questdb/cairo/wal/WalWriter.putDouble": "WAL writing",
    "[questdb-shared-query-1 tid=42];io/questdb/griffin/SqlCompilerImpl.compile": "SQL",
    "[shared-network_1 tid=26838];io/questdb/mp/Worker.run;io/questdb/cutlass/http/HttpServer.handleClientOperation;"
    "io/questdb/cutlass/qwp/server/QwpIngressUpgradeProcessor.handleBinaryMessage;"
    "io/questdb/cutlass/qwp/server/QwpIngressProcessorState.processMessage": "QWP decoding",
    "[questdb-worker-3 tid=44];io/questdb/mp/Worker.run;java/util/concurrent/locks/LockSupport.parkNanos": "idle",
    "[shared-write_3 tid=23928];io/questdb/mp/Worker.run;__x64_sys_sched_yield_[k];schedule_[k]": "idle",
    "[wal-apply_0 tid=23936];io/questdb/mp/Worker.run;io/questdb/cairo/TableWriter.commit": "commits and fsync",
    "[C2 CompilerThread0 tid=20];C2Compiler::compile_method": "JIT compiler",
}


def test_each_frame_goes_to_its_bucket_in_the_buckets_order():
    for stacks, buckets in ((CLIENT_STACKS, CLIENT_BUCKETS), (SERVER_STACKS, SERVER_BUCKETS)):
        for stack, expected in stacks.items():
            assert bucket_of(stack, buckets) == expected, stack


def test_bucket_samples_name_every_bucket_other_last():
    counts = bucket_samples(Counter({stack: 1 for stack in CLIENT_STACKS}), CLIENT_BUCKETS)
    assert list(counts) == [bucket.name for bucket in CLIENT_BUCKETS] + [OTHER]
    assert counts["dtype conversion"] == 0 and sum(counts.values()) == len(CLIENT_STACKS)
    assert abs(sum(shares(counts).values()) - 1) < 1e-9


def test_the_verdict_names_the_saturated_side_with_its_numbers():
    busy_client = Side(1.97, {"serialization": 0.71, "waiting for the GIL": 0.12, "send/flush": 0.07, "idle": 0.1})
    idle_server = Side(0.41, {"WAL apply and O3 merge": 0.6, "idle": 0.4})
    found = verdict(busy_client, idle_server, 4, into_sink=False, same_machine=False)
    assert found.bound == "client" and found.text.startswith("client-bound: the client used 1.97 of 4 CPUs")
    # Shares of the working samples: the idle ones left out.
    assert "of its working samples, 79 % in serialization, 13 % waiting for the GIL" in found.text
    assert "QuestDB used 0.41 of 4 CPUs; of its working samples, 100 % in WAL apply and O3 merge" in found.text
    # A client that mostly waits in flush: QuestDB's queue is full, whatever its CPUs.
    waiting_client = Side(0.3, {"send/flush": 0.7, "serialization": 0.1, "idle": 0.2})
    assert verdict(waiting_client, Side(0.6, {"ILP/HTTP parsing": 0.5}), 4, False, False).bound == "server"
    quiet = verdict(Side(0.2, {"serialization": 0.3, "idle": 0.7}), Side(0.1, {"idle": 0.9}), 2, into_sink=False,
                    same_machine=True)
    assert quiet.bound == "neither" and quiet.text.startswith("neither saturated")
    # Into the sink the client is the bottleneck by construction, however little it used.
    assert verdict(waiting_client, None, 2, into_sink=True, same_machine=True).text.startswith(
        "client-bound (into the sink")
    # Both sides on one machine keeping its CPUs busy: the larger user of CPU, and the machine said.
    both = verdict(Side(0.6, {"serialization": 0.9}), Side(1.35, {"ILP/HTTP parsing": 0.5}), 2, into_sink=False,
                   same_machine=True)
    assert both.bound == "server" and both.text.startswith("server-bound (the machine's 2 CPUs saturated)")
    # A client whose working samples wait for the GIL is saturated, whatever its CPUs.
    assert verdict(Side(0.8, {"waiting for the GIL": 0.4, "serialization": 0.6}), Side(0.2, {}), 4, False,
                   False).bound == "client"
    # CPU sets that do not meet (Docker's cpusets): each side against its own; QuestDB's full one CPU is its limit.
    apart = verdict(Side(0.13, {"send/flush": 0.3, "serialization": 0.7}), Side(0.97, {"ILP/HTTP parsing": 1.0}), 1,
                    into_sink=False, same_machine=False, server_cores=1)
    assert apart.bound == "server" and apart.text.startswith("server-bound: QuestDB used 0.97 of 1 CPUs")
    assert "the client used 0.13 of 1 CPUs" in apart.text
    assert verdict(Side(0.95, {"serialization": 1.0}), Side(0.3, {}), 1, False, False, server_cores=3).bound == "client"
    # The harness's own threads are no work of the client's.
    assert Side(1.0, {"the harness's threads": 0.5, "serialization": 0.5}).working() == {"serialization": 1.0}


def test_a_flame_graph_is_a_static_svg_coloured_by_bucket():
    stacks = Counter({"[w tid=1];io/questdb/cairo/wal/WalWriter.commit;io/questdb/std/Files.msync": 30,
                      "[w tid=1];io/questdb/cutlass/line/tcp/LineTcpParser.parse": 70, "[w tid=1];tiny": 0})
    svg = flame_graph(stacks, "QuestDB", SERVER_BUCKETS)
    assert svg.count("<rect") == 5 and "<script" not in svg  # all, the thread, three frames
    colours = {bucket.name: bucket.colour for bucket in SERVER_BUCKETS}
    assert colours["commits and fsync"] in svg and colours["ILP/HTTP parsing"] in svg
    assert "LineTcpParser.parse: 70 samples, 70.0%" in svg
    assert "no samples" in flame_graph(Counter(), "QuestDB", SERVER_BUCKETS)
    # A wait for the GIL is known by the frames it ends with, not by a name: coloured as its bucket all the same.
    gil, idle = (f"thread (1): send-1;_client__dataframe (questdb/dataframe.pxi);{above};pthread_cond_timedwait "
                 f"(libc.so.6)" for above in ("_client__ensure_has_gil (questdb/_client.pyx)",
                                              "lock_PyThread_acquire_lock (libpython3.11.so.1.0)"))
    client = flame_graph(Counter({gil: 60, idle: 40}), "client", CLIENT_BUCKETS)
    fills = re.findall(r'<title>pthread_cond_timedwait \(libc.so.6\): (\d+) samples[^<]*</title>'
                       r'<rect [^>]*fill="([^"]+)"', client)
    by_bucket = {bucket.name: bucket.colour for bucket in CLIENT_BUCKETS}
    assert dict(fills) == {"60": by_bucket["waiting for the GIL"], "40": by_bucket["idle"]}, fills


def profiled_record(name: str, serialization: int, gil: int, verdict_text: str) -> RunRecord:
    client = SideProfile("py-spy 0.4.3", "wall", 100, serialization + gil,
                         {"serialization": serialization, "waiting for the GIL": gil, OTHER: 0}, cpus=0.9)
    record = RunRecord(kind="bench", mode="send", parameters={})
    record.profile = ProfileFigures(client=client, server=None, verdict=verdict_text, bound="client")
    record.run_id = name
    return record


def test_compare_sets_two_profiled_runs_buckets_side_by_side():
    table = profile_table([profiled_record("one", 70, 30, "client-bound: one"),
                           profiled_record("two", 90, 10, "client-bound: two")])
    lines = table.splitlines()
    assert lines[0].split() == ["profile", "one", "two"]
    assert next(line for line in lines if "serialization" in line).split()[-2:] == ["70.0%", "90.0%"]
    assert next(line for line in lines if "GIL" in line).split()[-2:] == ["30.0%", "10.0%"]
    assert lines[-2:] == ["one: client-bound: one", "two: client-bound: two"]
