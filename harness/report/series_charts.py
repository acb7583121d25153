"""Charts of a run's time series: rows/s and MiB/s per phase (in total and per worker), the client's and the
server's busy cores, the server's WAL written and applied rows/s and its apply lag; several runs' rates
overlaid; and a merged scale-out run's clients, each one's send window and rate."""

from __future__ import annotations

import html

from harness.records.run_record import RunRecord
from harness.report.charts import Charts, new_figure
from harness.report.tables import MIB, record_name
from harness.telemetry.timeseries import TimeSeries


def throughput(charts: Charts, record: RunRecord, series: TimeSeries) -> list[str]:
    result = []
    for counts, unit, scale in (("rows", "M rows/s", 1e6), ("bytes", "MiB/s", MIB)):
        figure, (ax,) = new_figure(f"{counts} per second, per phase (thin: per worker)", unit)
        drawn = False
        for phase in record.phases or {name for sample in series.samples for name in sample.rows}:
            times, totals, per_worker = _rates(series, phase, counts)
            if not times:
                continue
            line, = ax.plot(times, [value / scale for value in totals], label=f"{phase} (total)", linewidth=2)
            workers = len(per_worker[-1])
            if workers > 1:
                for worker in range(workers):
                    ax.plot(times, [rates[worker] / scale if worker < len(rates) else 0 for rates in per_worker],
                            color=line.get_color(), linewidth=0.7, alpha=0.6)
            drawn = True
        if drawn:
            ax.legend(loc="upper right")
            result.append(charts.svg(figure, f"{counts} per second"))
    return result


def busy_cores(charts: Charts, series: TimeSeries) -> str:
    times, cores = _differences(series, lambda sample: sample.client_cpu_seconds)
    server_times, server_cores = _differences(series, lambda sample: sample.server_cpu_seconds)
    who = "client and server" if server_times else "client"
    figure, (ax,) = new_figure(f"{who}: busy cores (CPU-seconds per second)", "cores")
    ax.plot(times, cores, label="client process")
    if server_times:  # the side pinned at its cores is the bottleneck
        ax.plot(server_times, server_cores, label="QuestDB server process")
    ax.legend(loc="upper right")
    return charts.svg(figure, f"{who} busy cores")


def client_windows(charts: Charts, record: RunRecord) -> str:
    """A merged scale-out run: each client's send window on one time axis, and its rate. (Each client's
    own time series is in its own record.)"""
    clients = [client for client in record.clients if client.started_at is not None]
    if not clients:
        return "<p class=\"missing\">No client recorded a send window.</p>"
    origin = min(client.started_at for client in clients)
    figure, (windows, rates) = new_figure("clients: send windows and rates", "client", rows=2)
    for client in clients:
        windows.barh(client.client, client.ended_at - client.started_at, left=client.started_at - origin)
    windows.set_xlabel("seconds since the first client started sending")
    windows.set_yticks([client.client for client in clients])
    rates.bar([str(client.client) for client in clients],
              [(client.rows_per_second or 0) / 1e6 for client in clients])
    rates.set_ylabel("M rows/s")
    rates.set_xlabel("client (its interleaved group)")
    return charts.svg(figure, "clients")


def server_wal(charts: Charts, series: TimeSeries) -> str:
    def server(key):
        return lambda sample: (sample.server or {}).get(key)

    written = _differences(series, server("wal_written_rows"))
    applied = _differences(series, server("wal_applied_rows"))
    if not written[0]:
        reason = series.server_error or "the run sampled no server (the sink, or no --server-metrics-port)"
        return f"<p class=\"missing\">No server series: {html.escape(reason)}</p>"
    figure, (rates, lag) = new_figure("server: WAL rows written and applied per second", "M rows/s", rows=2)
    rates.plot(written[0], [value / 1e6 for value in written[1]], label="written to the WAL")
    rates.plot(applied[0], [value / 1e6 for value in applied[1]], label="applied to tables")
    rates.legend(loc="upper right")
    points = series.transactions_behind()
    lag.plot([t for t, _ in points], [value for _, value in points], color="tab:red")
    lag.set_ylabel("apply lag (txns)")
    lag.set_title("WAL apply lag: sequencer txn minus writer txn")
    return charts.svg(figure, "server WAL")


def overlay(charts: Charts, records: list[RunRecord]) -> list[str]:
    with_series = [record for record in records if record.timeseries and len(record.timeseries.samples) > 1]
    if len(with_series) < 2:
        return []
    figure, (ax,) = new_figure("runs overlaid: rows per second of each run's send (else serialize) phase",
                               "M rows/s")
    for record in with_series:
        phase = "send" if "send" in record.phases else next(iter(record.phases), None)
        if phase is None:
            continue
        times, totals, _ = _rates(record.timeseries, phase, "rows")
        ax.plot(times, [value / 1e6 for value in totals], label=f"{record_name(record)} ({phase})")
    ax.legend(loc="upper right")
    return [charts.svg(figure, "runs overlaid")]


def _rates(series: TimeSeries, phase: str, counts: str) -> tuple[list[float], list[float], list[list[float]]]:
    """Times, the phase's total rate and each worker's rate between consecutive samples (``counts``: rows
    or bytes). A count that fell started again from zero (a ramp's next rate), as Prometheus reads a counter
    reset."""
    times, totals, per_worker = [], [], []
    previous = None
    for sample in series.samples:
        values = getattr(sample, counts).get(phase)
        if values is None:
            continue
        if previous is not None and sample.t > previous[0]:
            span = sample.t - previous[0]
            old = previous[1] + [0] * (len(values) - len(previous[1]))
            rates = [(new - before if new >= before else new) / span for new, before in zip(values, old)]
            times.append(sample.t)
            totals.append(sum(rates))
            per_worker.append(rates)
        previous = (sample.t, values)
    # The phase's own span: from the step before its first rows to the step after its last.
    active = [index for index, total in enumerate(totals) if total > 0]
    if not active:
        return [], [], []
    span = slice(max(active[0] - 1, 0), active[-1] + 2)
    return times[span], totals[span], per_worker[span]


def _differences(series: TimeSeries, value) -> tuple[list[float], list[float]]:
    """Times and the per-second change of ``value(sample)`` (None where a sample lacks it)."""
    times, rates, previous = [], [], None
    for sample in series.samples:
        current = value(sample)
        if current is None:
            continue
        if previous is not None and sample.t > previous[0]:
            times.append(sample.t)
            rates.append((current - previous[1]) / (sample.t - previous[0]))
        previous = (sample.t, current)
    return times, rates
