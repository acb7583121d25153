"""What the harness itself costs (a script that prints figures, not a test).

1. Serialize: the runner's single-threaded serialize phase against a bare loop of
   ``Buffer.dataframe`` over the same chunks, alternating, several repetitions; the runner's overhead
   is 1 - the median of the pairs' runner/bare rows/s (it must stay under 3 %).
2. Send: the client sending to the socat no-op sink against ``replay`` of the same ILP bytes raw over
   TCP, which is the loopback limit; reports the ratio.

    .venv/bin/python benchmarks/runner_overhead.py [--rows 2000000] [--repetitions 5] [--sink-port 19410]
        [--json PATH]

The benchmark record (every repetition, medians, ratios) goes to --json (default
results/<UTC time>-runner-overhead.json).
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

from benchmarks.alternate import alternate, write_record
from harness.commands.bench import run_bench
from harness.commands.replay import ReplayOptions, run_replay
from harness.ingest.ilp import append_frame, new_buffer
from harness.records.benchmark_record import BenchmarkRecord, Measurement
from harness.records.intervals import round_ratios
from harness.run.bench_options import BenchOptions
from harness.servers.process import port_in_use
from harness.servers.sink import SocatSink
from harness.tsbs.cpu_only import generator as cpu_only
from harness.tsbs.use_cases import make_spec

CHUNK_ROWS = 10_000


def bare_serialize(rows: int, seed: int, protocol_version: int) -> Measurement:
    frames = list(cpu_only.frames(make_spec(seed=seed, scale=4000, timestamp_end=None, row_limit=rows), CHUNK_ROWS))
    buffer = new_buffer(protocol_version)
    started = time.perf_counter()
    total = 0
    for frame in frames:
        append_frame(buffer, frame, cpu_only.TABLE_NAME)
        total += len(buffer)
        buffer.clear()
    return Measurement(seconds=time.perf_counter() - started, rows=rows)


def runner_serialize(rows: int, seed: int, protocol_version: int, results_dir: str) -> Measurement:
    record = run_bench(BenchOptions(seed=seed, row_count=rows, worker_chunk_row_count=CHUNK_ROWS, reporting_period=0,
                                    protocol_version=str(protocol_version), results_dir=results_dir),
                       out=io.StringIO())
    serialize = record.phases["serialize"]
    return Measurement(seconds=serialize.seconds, rows=serialize.rows, client_cpu_seconds=serialize.client_cpu_seconds,
                       run_record=str(record.path))


def send_measurement(record) -> Measurement:
    """A run's send phase, with its MiB/s (the figure compared: the same bytes go both ways)."""
    send = record.phases["send"]
    return Measurement(seconds=send.seconds, rows=send.rows, client_cpu_seconds=send.client_cpu_seconds,
                       extra={"mib_per_second": send.mib_per_second}, run_record=str(record.path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--sink-port", type=int, default=19410)
    parser.add_argument("--json", help="the benchmark record's path")
    options = parser.parse_args()
    record = BenchmarkRecord("runner-overhead", parameters=dict(rows=options.rows, repetitions=options.repetitions,
                                                                sink_port=options.sink_port, chunk_rows=CHUNK_ROWS))
    system = record.system
    print(f"host: {system['cpu_model']}, {system['cpu_count']} cores; {options.rows} rows, scale 4000, "
          f"chunks of {CHUNK_ROWS}")
    results_dir = tempfile.mkdtemp(prefix="overhead-")

    for protocol_version in (1, 2):
        # Repetition N uses seed N - 1 on both sides: the same chunks, a different data set each repetition.
        comparison = alternate({
            "bare loop": lambda repetition: bare_serialize(options.rows, repetition - 1, protocol_version),
            "runner": lambda repetition: runner_serialize(options.rows, repetition - 1, protocol_version,
                                                          results_dir),
        }, options.repetitions, name=f"serialize ILP v{protocol_version}", rotate=False,
            parameters={"protocol_version": protocol_version})
        record.comparisons.append(comparison)
        bare_rate = comparison.summary["bare loop"]["rows_per_second"].median
        runner = comparison.summary["runner"]["rows_per_second"]
        # Each repetition pairs a bare and a runner run back to back, so a slow spell of a shared machine
        # hits both: the median of the pairs' ratios is the steadier figure, the range shows the noise.
        ratios = sorted(round_ratios(comparison, "runner", "rows_per_second"))
        ratio = runner.paired_ratio
        print(f"serialize ILP v{protocol_version}: bare loop {bare_rate / 1e6:.3f} M rows/s, runner "
              f"{runner.median / 1e6:.3f} M rows/s (medians of {options.repetitions}); runner/bare per pair: median "
              f"{ratio:.3f} (range {ratios[0]:.3f}-{ratios[-1]:.3f}), overhead {100 * (1 - ratio):+.1f} %")

    sink = None
    if not port_in_use(options.sink_port):
        sink = SocatSink(options.sink_port, pid_file=Path(results_dir) / "sink.pid").start()
    try:
        ilp = str(Path(results_dir) / "same-bytes.ilp")
        # replay sends the file the bench run of the same repetition wrote, so bench runs first in each.
        comparison = alternate({
            "bench --send to sink": lambda _: send_measurement(run_bench(BenchOptions(
                seed=1, row_count=options.rows, send=True, target="sink", ilp_port=options.sink_port,
                protocol_version="1", write_ilp=ilp, reporting_period=0, results_dir=results_dir), out=io.StringIO())),
            "replay": lambda _: send_measurement(run_replay(ReplayOptions(
                path=ilp, target="sink", ilp_port=options.sink_port, results_dir=results_dir), out=io.StringIO())),
        }, options.repetitions, name="send to socat sink", baseline="replay", rotate=False)
        record.comparisons.append(comparison)
        client_rate, raw_rate = (comparison.summary[variant]["mib_per_second"]
                                 for variant in ("bench --send to sink", "replay"))
        print(f"send to socat sink (client, 1 connection): {client_rate.median:.1f} MiB/s; replay of the same bytes "
              f"raw: {raw_rate.median:.1f} MiB/s (medians of {options.repetitions}); "
              f"client/raw = {client_rate.ratio:.3f}")
    finally:
        if sink is not None:
            sink.stop()
    write_record(record, options.json)


if __name__ == "__main__":
    main()
