"""What the harness itself costs (a script that prints figures, not a test).

1. Serialize: the runner's single-threaded serialize phase against a bare loop of
   ``Buffer.dataframe`` over the same chunks, alternating, several repetitions; the runner's overhead
   is 1 - the median of the pairs' runner/bare rows/s (it must stay under 3 %).
2. Send: the client sending to the socat no-op sink against ``replay`` of the same ILP bytes raw over
   TCP, which is the loopback limit; reports the ratio.

    .venv/bin/python benchmarks/runner_overhead.py [--rows 2000000] [--repetitions 5] [--sink-port 19410]
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

from harness.run import BenchOptions, ReplayOptions, run_bench, run_replay
from harness.ingest.ilp import append_frame, new_buffer
from harness.native import SocatSink, port_in_use
from harness.results import system_info
from harness.tsbs import cpu_only
from harness.tsbs.params import make_spec

CHUNK_ROWS = 10_000


def bare_serialize_rate(rows: int, seed: int, protocol_version: int) -> float:
    frames = list(cpu_only.frames(make_spec(seed=seed, scale=4000, timestamp_end=None, row_limit=rows), CHUNK_ROWS))
    buffer = new_buffer(protocol_version)
    started = time.perf_counter()
    total = 0
    for frame in frames:
        append_frame(buffer, frame, cpu_only.TABLE_NAME)
        total += len(buffer)
        buffer.clear()
    return rows / (time.perf_counter() - started)


def runner_serialize_rate(rows: int, seed: int, protocol_version: int, results_dir: str) -> float:
    record = run_bench(BenchOptions(seed=seed, row_count=rows, worker_chunk_row_count=CHUNK_ROWS, reporting_period=0,
                                    protocol_version=str(protocol_version), results_dir=results_dir),
                       out=io.StringIO())
    return record.phases["serialize"].rows_per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--sink-port", type=int, default=19410)
    options = parser.parse_args()
    system = system_info()
    print(f"host: {system['cpu_model']}, {system['cpu_count']} cores; {options.rows} rows, scale 4000, "
          f"chunks of {CHUNK_ROWS}")
    results_dir = tempfile.mkdtemp(prefix="overhead-")

    for protocol_version in (1, 2):
        bare, runner = [], []
        for repetition in range(options.repetitions):
            bare.append(bare_serialize_rate(options.rows, repetition, protocol_version))
            runner.append(runner_serialize_rate(options.rows, repetition, protocol_version, results_dir))
        bare_rate, runner_rate = statistics.median(bare), statistics.median(runner)
        # Each repetition pairs a bare and a runner run back to back, so a slow spell of a shared machine
        # hits both: the median of the pairs' ratios is the steadier figure, the range shows the noise.
        ratios = sorted(r / b for r, b in zip(runner, bare))
        ratio = statistics.median(ratios)
        print(f"serialize ILP v{protocol_version}: bare loop {bare_rate / 1e6:.3f} M rows/s, runner "
              f"{runner_rate / 1e6:.3f} M rows/s (medians of {options.repetitions}); runner/bare per pair: median "
              f"{ratio:.3f} (range {ratios[0]:.3f}-{ratios[-1]:.3f}), overhead {100 * (1 - ratio):+.1f} %")

    sink = None
    if not port_in_use(options.sink_port):
        sink = SocatSink(options.sink_port, pid_file=Path(results_dir) / "sink.pid").start()
    try:
        ilp = str(Path(results_dir) / "same-bytes.ilp")
        sent, replayed = [], []
        for repetition in range(options.repetitions):
            record = run_bench(BenchOptions(seed=1, row_count=options.rows, send=True, target="sink",
                                            ilp_port=options.sink_port, protocol_version="1", write_ilp=ilp,
                                            reporting_period=0, results_dir=results_dir), out=io.StringIO())
            sent.append(record.phases["send"].mib_per_second)
            record = run_replay(ReplayOptions(path=ilp, target="sink", ilp_port=options.sink_port,
                                              results_dir=results_dir), out=io.StringIO())
            replayed.append(record.phases["send"].mib_per_second)
        client_rate, raw_rate = statistics.median(sent), statistics.median(replayed)
        print(f"send to socat sink (client, 1 connection): {client_rate:.1f} MiB/s; replay of the same bytes raw: "
              f"{raw_rate:.1f} MiB/s (medians of {options.repetitions}); client/raw = {client_rate / raw_rate:.3f}")
    finally:
        if sink is not None:
            sink.stop()


if __name__ == "__main__":
    main()
