import time, statistics
from urllib.request import urlopen
from harness.timeseries import MetricsEndpoint, metrics_values
from harness.http_exec import QuestDBSql
url="http://127.0.0.1:9003/metrics"
sql = QuestDBSql("127.0.0.1", 9000)
ep = MetricsEndpoint(url); ep.read()
res={"fresh":[], "kept":[]}
for i in range(16):
    for name in (("fresh","kept") if i%2 else ("kept","fresh")):
        time.sleep(0.9)   # the sampler's interval, roughly
        for _ in range(10):
            sql.exec("select 1"); time.sleep(0.01)
        t=time.perf_counter()
        if name=="fresh":
            with urlopen(url, timeout=0.5) as r: metrics_values(r.read().decode())
        else:
            ep.read()
        res[name].append(1000*(time.perf_counter()-t))
for k,v in res.items(): print(k, " ".join(f"{x:.0f}" for x in v), "median", round(statistics.median(v),1), "mean", round(statistics.mean(v),1))
