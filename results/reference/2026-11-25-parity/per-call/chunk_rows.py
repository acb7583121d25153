"""One thread, in-process: CPU seconds to serialize 1M rows of bench's chunks (category tags, protocol 1) by chunk
size (2,000 / 10,000 / 50,000 rows) and the buffer's initial size. Run from the repository root."""
import sys, time, statistics
from harness.bench import BenchOptions
from harness.tsbs.choices import SymbolDtype
from harness.ingest.ilp import new_buffer, append_frame
ROWS = 1_000_000
def frames(chunk):
    o = BenchOptions(row_count=ROWS, seed=1, symbol_dtype=SymbolDtype.category, worker_chunk_row_count=chunk)
    return [(t, f) for c in o.chunks(o.dataset()) for t, f in c.items()]
f10, f50, f2 = frames(10_000), frames(50_000), frames(2_000)
variants = {"10k-1MiB": (f10, 1 << 20), "10k-16MiB": (f10, 16 << 20), "50k-1MiB": (f50, 1 << 20), "2k-1MiB": (f2, 1 << 20)}
cpu = {k: [] for k in variants}
for r in range(5):
    for name, (fs, init) in variants.items():
        buf = new_buffer(1, init)
        c0 = time.process_time()
        for t, f in fs:
            append_frame(buf, f, t); len(buf); buf.clear()
        cpu[name].append((time.process_time() - c0))
for n in variants: print(n, round(statistics.median(cpu[n]), 3), [round(x, 3) for x in cpu[n]])
