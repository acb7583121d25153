"""The cost of one Buffer.dataframe() call by its rows (1 / 1,000 / 10,000) on a 21-column frame shaped as
TSBS's cpu (10 string[pyarrow] tags, 10 doubles, a timestamp), in whichever interpreter runs it: the
original's pins (questdb 1.1.0), those pins with questdb 6.0.0, ours."""
import time, statistics, sys, warnings
import numpy as np, pandas as pd
warnings.simplefilter("ignore")
import questdb, questdb.ingress as qi
n = 10000
cols = {f"t{i}": pd.Series([f"v{j % 7}" for j in range(n)], dtype="string[pyarrow]") for i in range(10)}
cols.update({f"f{i}": np.random.default_rng(i).normal(size=n) for i in range(10)})
cols["timestamp"] = pd.date_range("2016-01-01", periods=n, freq="10s")
f = pd.DataFrame(cols); f.index.name = "cpu"
try:
    buf = qi.Buffer(protocol_version=1)
except TypeError:
    buf = qi.Buffer()
for rows in (1, 1000, 10000):
    part = f.iloc[:rows]
    ts = []
    for _ in range(50):
        c = time.perf_counter(); buf.dataframe(part, symbols=True, at="timestamp"); ts.append(time.perf_counter() - c); buf.clear()
    print(questdb.__version__ if hasattr(questdb, "__version__") else "?", pd.__version__, rows, f"{statistics.median(ts)*1e3:.3f} ms")
