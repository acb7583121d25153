"""One thread, in-process: CPU per M rows of Buffer.dataframe() over the same rows, tags as string[pyarrow] or
category, in 10,000- or 50,000-row chunks. Run from the repository root: python dtype_chunk.py [ROWS] [ROUNDS]."""
import sys, time, statistics
import pandas as pd
from harness.bench import BenchOptions
from harness.tsbs.choices import SymbolDtype
from harness.ingest.ilp import new_buffer, append_frame

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5

def frames(dtype, chunk):
    o = BenchOptions(row_count=ROWS, seed=1, symbol_dtype=dtype, worker_chunk_row_count=chunk)
    return [(t, f) for c in o.chunks(o.dataset()) for t, f in c.items()]

variants = {
    "pyarrow-10k": frames(SymbolDtype.string_pyarrow, 10_000),
    "category-10k": frames(SymbolDtype.category, 10_000),
    "category-50k": frames(SymbolDtype.category, 50_000),
    "pyarrow-50k": frames(SymbolDtype.string_pyarrow, 50_000),
}
sizes = {}
cpu = {k: [] for k in variants}
for r in range(ROUNDS):
    for name, fs in (variants.items() if r % 2 == 0 else reversed(list(variants.items()))):
        buf = new_buffer(1)
        n = 0
        c0 = time.process_time()
        for t, f in fs:
            append_frame(buf, f, t)
            n += len(buf)
            buf.clear()
        cpu[name].append((time.process_time() - c0) / ROWS * 1e6)
        sizes[name] = n
for name in variants:
    print(f"{name:14s} {statistics.median(cpu[name]):.3f} cpu-s/M  rounds {[round(x,3) for x in cpu[name]]}  bytes {sizes[name]}")
