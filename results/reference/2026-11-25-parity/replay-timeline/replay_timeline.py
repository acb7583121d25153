"""Where `replay`'s whole command spends its time outside the send, run by hand.

    python replay_timeline.py ROUNDS questdb|sink [FILE]

Each round runs `python -m harness replay FILE --workers 2` as a child process that marks, on stderr, the
time since the parent started it at each step: Python up, the imports, the file's first piece, the run's
set-up, every HTTP request to QuestDB and every scrape of /metrics (with their own durations), the send, the
validation, the sampler's last sample, the record, the interpreter's exit. Into QuestDB (the native one,
`make native-up`: HTTP 9000, ILP 9009) the table goes before each round, as the parity script drops it; into
the socat sink on 127.0.0.1:9019. The marks wrap the harness's functions from outside; nothing in the
harness is changed.
"""

import json
import os
import subprocess
import sys
import time

if os.environ.get("TIMELINE_STARTED"):
    # The child: the marks, then the command as `python -m harness` runs it.
    started = float(os.environ["TIMELINE_STARTED"])

    def mark(label: str) -> None:
        print(f"  {time.time() - started:7.3f} {label}", file=sys.stderr, flush=True)

    mark("python up")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the entry point sets it, before numpy loads
    import harness.cli as cli
    mark("harness.cli imported")
    import harness.replay as replay
    mark("harness.replay imported (numpy)")
    import harness.http_exec as http_exec
    import harness.ingest.ilp_file as ilp_file
    import harness.ingest.raw as raw
    import harness.session as session
    import harness.timeseries as timeseries

    def wrapped(function, label):
        def marked(*args, **kwargs):
            mark(f"{label} ->")
            result = function(*args, **kwargs)
            mark(f"{label} <-")
            return result
        return marked

    def timed(function, label):
        def marked(*args, **kwargs):
            began = time.time()
            result = function(*args, **kwargs)
            mark(f"    {label} {1000 * (time.time() - began):5.1f} ms {str(args[1])[:50] if len(args) > 1 else ''}")
            return result
        return marked

    http_exec.QuestDBSql.exec = timed(http_exec.QuestDBSql.exec, "http")
    timeseries.server_metrics = timed(timeseries.server_metrics, "scrape /metrics")
    for owner, name in [(ilp_file.IlpFile, "first_piece"), (ilp_file.IlpFile, "first_table_lines"),
                        (session.Run, "__init__"), (session.Run, "__exit__"), (timeseries.Sampler, "stop"),
                        (replay, "connect"), (replay, "validate"), (raw, "send_pieces")]:
        setattr(owner, name, wrapped(getattr(owner, name), f"{getattr(owner, '__name__', '')}.{name}"))
    import atexit
    atexit.register(lambda: mark("atexit (the interpreter's exit follows)"))
    sys.argv = ["harness", *sys.argv[1:]]
    cli.entry_point()
    sys.exit(0)

rounds, target = int(sys.argv[1]), sys.argv[2]
data_file = sys.argv[3] if len(sys.argv) > 3 else "/work/tsbs-build/data/cpu-only-4000-3h.ilp"
if target == "questdb":
    from harness.http_exec import QuestDBSql
    questdb = QuestDBSql("127.0.0.1", 9000)
for round_number in range(1, rounds + 1):
    if target == "questdb":
        questdb.exec("DROP TABLE IF EXISTS cpu")
    command = [sys.executable, __file__, "replay", data_file, "--workers", "2", "--host", "127.0.0.1",
               "--results", "/tmp/replay-timeline.json"]
    command += ["--ilp-port", "9009", "--http-port", "9000"] if target == "questdb" else \
        ["--ilp-port", "9019", "--target", "sink"]
    environment = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    environment["TIMELINE_STARTED"] = repr(time.time())
    began = time.perf_counter()
    child = subprocess.run(command, capture_output=True, text=True, env=environment)
    whole = time.perf_counter() - began
    record = json.load(open("/tmp/replay-timeline.json"))
    send = record["phases"]["send"]["seconds"]
    visible = (record.get("validation") or {}).get("time_to_visible_seconds") or 0.0
    print(f"round {round_number}: whole command {whole:.3f} s, send {send:.3f} s, until visible {visible:.3f} s, "
          f"outside them {whole - send - visible:.3f} s")
    print(child.stderr)
