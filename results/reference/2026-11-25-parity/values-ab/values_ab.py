"""Which part of the original's frame serializes faster: its loop, its layout or its values? (an A/B run by
hand; its output beside it). One interpreter (ours), one loop (the original's: 10,000-row slices, one
``Buffer`` a thread, cleared after each slice), three frames of 2M rows:

- ``ours``: the chunks ``bench`` makes (TSBS's cpu-only rows, seed 1, scale 4000, ``string[pyarrow]`` tags);
- ``original``: the frame the original's ``gen_dataframe`` makes (seed 1, scale 4000), sliced;
- ``orig+ourvals``: the original's frame with its ten fields replaced by ours (its tags and timestamps).

    .venv/bin/python results/reference/2026-11-25-parity/values-ab/values_ab.py ORIGINAL_REPO [THREADS] [ROUNDS]
"""

import statistics
import sys
import threading
import time
import types

sys.path.insert(0, sys.argv[1])
sys.modules["requests"] = types.ModuleType("requests")  # imported by the original, unused here

import pandas as pd  # noqa: E402
from py_tsbs_benchmark.bench_pandas import gen_dataframe  # noqa: E402
from questdb.ingress import Buffer  # noqa: E402

from harness.tsbs import use_cases  # noqa: E402
from harness.tsbs.choices import FieldType, SymbolDtype  # noqa: E402

ROWS, CHUNK = 2_000_000, 10_000
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 8

spec = use_cases.make_spec(use_case="cpu-only", seed=1, scale=4000, row_limit=ROWS)
ours = [chunk["cpu"] for chunk in use_cases.get("cpu-only").chunks(spec, CHUNK, FieldType.double,
                                                                    SymbolDtype.string_pyarrow)]
original = gen_dataframe(1, ROWS, 4000)
fields = [name for name in original.columns if original[name].dtype == "float64"]
mixed = original.copy()
whole = pd.concat(ours, ignore_index=True)
for name in fields:
    mixed[name] = whole[name].to_numpy()
frames = {"ours": ours,
          "original": [original.iloc[i:i + CHUNK] for i in range(0, ROWS, CHUNK)],
          "orig+ourvals": [mixed.iloc[i:i + CHUNK] for i in range(0, ROWS, CHUNK)]}


def serialize(chunks, threads: int) -> tuple[float, float]:
    """(M rows/s, CPU-s per M rows) of the original's loop over ``chunks`` dealt round-robin."""
    def work(part):
        buffer = Buffer(protocol_version=1)
        for frame in part:
            buffer.dataframe(frame, table_name="cpu", symbols=True, at="timestamp")
            buffer.clear()
    workers = [threading.Thread(target=work, args=(chunks[i::threads],)) for i in range(threads)]
    cpu, wall = time.process_time(), time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return ROWS / (time.perf_counter() - wall) / 1e6, (time.process_time() - cpu) / (ROWS / 1e6)


figures = {name: [] for name in frames}
names = list(frames)
for round_number in range(ROUNDS):
    for name in names[round_number % 3:] + names[:round_number % 3]:
        rate, cpu = serialize(frames[name], THREADS)
        figures[name].append((rate, cpu))
        print(f"T={THREADS} round {round_number} {name:12} {rate:.3f} M rows/s  cpu {cpu:.3f} s/M", flush=True)
for name, runs in figures.items():
    print(f"{name:12} median {statistics.median(r for r, _ in runs):.3f} M rows/s, "
          f"{statistics.median(c for _, c in runs):.3f} CPU-s/M rows")
