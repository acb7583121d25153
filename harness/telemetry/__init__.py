"""What a run measures while it runs: its phases' counters and figures, progress lines, the second-by-second
time series, Prometheus metrics."""
