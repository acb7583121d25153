import sys
sys.path.append("/tmp/reqs"); sys.path.insert(0, "/work/original/py-tsbs-benchmark")
import functools, types, time
from py_tsbs_benchmark import bench_pandas
client = bench_pandas.qi
bench_pandas.qi = types.SimpleNamespace(**{n: getattr(client, n) for n in dir(client)})
bench_pandas.qi.Buffer = functools.partial(client.Buffer, protocol_version=1)
cpu = []
def monotonic():
    cpu.append(time.process_time()); return time.monotonic()
bench_pandas.time = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if not n.startswith("__")})
bench_pandas.time.monotonic = monotonic
orig = bench_pandas.serialize_workers
def clocked(*a, **k):
    cpu.clear(); r = orig(*a, **k); print(f"Serialize CPU: {cpu[-1]-cpu[0]:.3f}s"); return r
bench_pandas.serialize_workers = clocked
sys.argv = ["bench_pandas", "--row-count", "2000000", "--seed", "1", "--workers", "2"]
bench_pandas.main()
