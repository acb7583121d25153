"""How long one sample's read of QuestDB's /metrics takes: a fresh urllib connection per scrape (the sampler
before 2026-11-27) against ``MetricsEndpoint`` (one kept connection, TCP_QUICKACK before each request),
alternated, N scrapes each a round, the given pause between scrapes (the sampler's interval is 1 s).

    python scrape_latency.py [URL] [ROUNDS] [SCRAPES] [PAUSE]
"""

import statistics
import sys
import time
from urllib.request import urlopen

from harness.timeseries import MetricsEndpoint, metrics_values

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9003/metrics"
rounds, scrapes, pause = (int(sys.argv[2]) if len(sys.argv) > 2 else 5, int(sys.argv[3]) if len(sys.argv) > 3 else 10,
                          float(sys.argv[4]) if len(sys.argv) > 4 else 0.2)


def fresh() -> dict:
    with urlopen(url, timeout=0.5) as response:
        return metrics_values(response.read().decode())


def timed(read) -> list[float]:
    times = []
    for _ in range(scrapes):
        began = time.perf_counter()
        assert "wal_written_rows" in read()
        times.append(1000 * (time.perf_counter() - began))
        time.sleep(pause)
    return times


everything = {"fresh connection (urllib)": [], "kept connection (MetricsEndpoint)": []}
for number in range(1, rounds + 1):
    endpoint = MetricsEndpoint(url)
    sides = [("fresh connection (urllib)", fresh), ("kept connection (MetricsEndpoint)", endpoint.read)]
    for name, read in (sides if number % 2 else sides[::-1]):
        times = timed(read)
        everything[name] += times
        print(f"round {number} {name:34} ms: {' '.join(f'{t:.1f}' for t in times)}")
    endpoint.close()
print()
for name, times in everything.items():
    slow = sum(t > 20 for t in times)
    print(f"{name:34} median {statistics.median(times):5.1f} ms, mean {statistics.mean(times):5.1f} ms, "
          f"{slow} of {len(times)} over 20 ms")
