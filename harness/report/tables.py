"""Records as text: a phase's two lines as the original benchmark prints them, and ``harness compare``'s
tables (ingest runs with ratios to the first, query runs per type, read runs, benchmark records' medians
and paired ratios), which the HTML report also shows. Every table is one ``plain_table``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.records.benchmark_record import CORE_FIGURES, BenchmarkRecord, Comparison, FigureSummary
from harness.records.run_record import ALL_QUERIES, QueryFigures, RunRecord
from harness.records.store import load_records
from harness.telemetry.phase import PhaseRecord

MIB = 1024 * 1024


def format_phase(title: str, phase: PhaseRecord) -> str:
    """The original py-tsbs-benchmark's two-line report of a phase (rows handed over without a byte counted, QWP's:
    said so instead of the buffer's size)."""
    size = f"ILP Buffer size: {phase.bytes / MIB:.2f} MiB: {phase.mib_per_second:.2f} MiB/sec." \
        if phase.bytes or not phase.rows else "Bytes: not counted (QWP's client does not say what it sent)."
    return (
        f"{title}:\n"
        f"  {phase.rows} rows in {phase.seconds:.2f}s: {phase.rows_per_second / 1e6:.2f} mil rows/sec.\n"
        f"  {size}"
    )


def record_name(record: RunRecord) -> str:
    """What a report calls a run: its file's name, else (not yet written) its id."""
    return record.path.name if record.path else record.run_id


def plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, a rule under the header."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def comparison_tables(paths: list[str | Path]) -> str:
    """``harness compare``: the run records among ``paths`` side by side, then the benchmark records'
    medians and ratios."""
    runs, benchmarks = load_records(paths)
    parts = [comparison_table(runs)] if runs else []
    if benchmarks:
        parts.append(benchmark_table(benchmarks))
    return "\n\n".join(parts)


def _ratio(value: float | None, baseline: float | None) -> str | None:
    return f"{value / baseline:.2f}x" if value and baseline else None


def _rate(phase: PhaseRecord | None) -> float | None:
    return phase.rows_per_second if phase else None


def comparison_table(records: list[RunRecord]) -> str:
    """The runs side by side by kind (``_kind_tables``), then, where any was profiled, each side's buckets."""
    tables = _kind_tables(records)
    profiled = [record for record in records if record.profile is not None]
    return f"{tables}\n\n{profile_table(profiled)}" if profiled else tables


def profile_table(records: list[RunRecord]) -> str:
    """Profiled runs side by side, a column a file: each side's CPUs and the share of its samples in each bucket
    (all phases), then each run's verdict: what a setting moved."""
    names = [record_name(record) for record in records]
    rows = []
    for side_name, side_of in (("client", lambda figures: figures.client), ("QuestDB", lambda figures: figures.server)):
        sides = [side_of(record.profile) for record in records]
        if all(side is None for side in sides):
            continue
        rows.append((f"{side_name} CPUs", *(f"{side.cpus:.2f}" if side is not None and side.cpus is not None
                                          else "-" for side in sides)))
        rows.append((f"{side_name} samples", *(str(side.samples) if side is not None else "-" for side in sides)))
        buckets = list(dict.fromkeys(bucket for side in sides if side is not None for bucket in side.buckets))
        for bucket in buckets:
            rows.append((f"  {bucket}", *(f"{side.shares().get(bucket, 0.0):.1%}" if side is not None and side.samples
                                          else "-" for side in sides)))
    verdicts = [f"{name}: {record.profile.verdict}" for name, record in zip(names, records)]
    return "\n".join([plain_table(("profile", *names), rows), *verdicts])


def _kind_tables(records: list[RunRecord]) -> str:
    """A plain-text table, one row per results file: what ran (date, mode, target, op, fields, transport,
    protocol, workers, the CPUs the process could use, rows) and its figures (serialize and send rates in
    million rows/s, the client's busy cores while sending, MiB/s of the send phase or else the serialize
    phase, time-to-visible). The last column gives the serialize and send rates as ratios to the first
    file's."""
    read_runs = [record for record in records if record.kind == "read"]
    if read_runs:
        others = [record for record in records if record.kind != "read"]
        return "\n\n".join(([_kind_tables(others)] if others else []) + [read_comparison_table(read_runs)])
    query_runs = [record for record in records if record.kind == "queries"]
    if query_runs:
        others = [record for record in records if record.kind != "queries"]
        return "\n\n".join(([_kind_tables(others)] if others else []) + [query_comparison_table(query_runs)])
    tables = [_ingest_table(records)]
    # Out-of-order figures where they say something: a run that sent late rows or sorted its data.
    if any(record.shows_arrival for record in records):
        tables.append(arrival_table(records))
    if any(record.open_loop is not None for record in records):
        tables.append(open_loop_table(records))
    return "\n\n".join(tables)


def open_loop_table(records: list[RunRecord]) -> str:
    """Open-loop runs, a row per rate held: the target and achieved rates, whether it was sustained, late
    chunks, the chunks the source made after their time, the largest backlog, the rows never sent, and the latencies from the intended times (ms); a ramp's
    knee on its last row."""
    header = ("file", "target rows/s", "achieved", "held", "late", "src behind", "backlog max", "unsent",
              "freshness p50", "p99", "max", "ack p50", "p99", "sched p99", "knee")
    table = []
    for record in records:
        figures = record.open_loop
        if figures is None:
            continue
        for index, step in enumerate(figures.steps):
            last = index == len(figures.steps) - 1
            knee = figures.knee_rows_per_second if last and figures.closed_loop_rows_per_second else None
            table.append((
                record.path.name if record.path and index == 0 else "",
                f"{step.target_rows_per_second:,.0f}",
                f"{step.achieved_rows_per_second:,.0f}" if step.achieved_rows_per_second else "-",
                "yes" if step.sustained else "no", str(step.late_chunks),
                str(step.source_behind.count if step.source_behind is not None else 0), str(step.max_backlog_rows),
                str(step.unsent_rows), _milliseconds(step.freshness, "p50"), _milliseconds(step.freshness, "p99"),
                _milliseconds(step.freshness, "max"), _milliseconds(step.acknowledged, "p50"),
                _milliseconds(step.acknowledged, "p99"), _milliseconds(step.schedule_delay, "p99"),
                f"{knee:,.0f}" if knee else ("none held" if last and figures.closed_loop_rows_per_second else ""),
            ))
    return plain_table(header, table)


def _milliseconds(summary, quantile: str) -> str:
    value = summary.figure(quantile) if summary is not None and summary.count else None
    return "-" if value is None else f"{value * 1e3:.1f}"


def _ingest_table(records: list[RunRecord]) -> str:
    header = ("file", "date", "mode", "target", "op", "fields", "transport", "proto", "workers", "cpus", "rows",
              "serialize Mrows/s", "send Mrows/s", "send cores", "MiB/s", "visible s", "status", "vs first")
    table = []
    first_serialize = first_send = None
    for index, record in enumerate(records):
        parameters = record.parameters
        serialize, send = record.phases.get("serialize"), record.phases.get("send")
        main = send or serialize
        if index == 0:
            first_serialize, first_send = _rate(serialize), _rate(send)
        ratios = [f"{name} {ratio}" for name, ratio in (("ser", _ratio(_rate(serialize), first_serialize)),
                                                         ("send", _ratio(_rate(send), first_send))) if ratio]
        visible = record.validation.time_to_visible_seconds if record.validation else None
        cores = send.client_cpu_cores if send else None

        def shown(key: str) -> str:
            return str(parameters.get(key) or "-")

        table.append((
            record.path.name if record.path else "-",
            record.started_at[:19],
            record.mode,
            shown("target"), shown("op"), shown("fields"), shown("transport"), shown("protocol_version"),
            str(parameters.get("workers") or 1),
            str(len(record.system.get("cpu_affinity") or []) or "-"),
            str(main.rows) if main else "-",
            f"{serialize.rows_per_second / 1e6:.2f}" if serialize else "-",
            f"{send.rows_per_second / 1e6:.2f}" if send else "-",
            f"{cores:.2f}" if cores is not None else "-",
            f"{main.mib_per_second:.1f}" if main else "-",
            f"{visible:.2f}" if visible is not None else "-",
            record.status,
            " ".join(ratios) or "-",
        ))
    return plain_table(header, table)


def arrival_table(records: list[RunRecord]) -> str:
    """Ingest runs' out-of-order figures side by side: per table the share of rows sent behind a newer one
    (``harness.ingest.arrival``), then what the server says it cost over the run (its O3 commits, rows the WAL apply
    wrote to disk per row applied, the apply's largest lag in transactions) and the time to visible."""
    header = ("file", "mode", "sorted", "workers", "late rows (share, up to s)", "send Mrows/s", "O3 commits",
              "disk rows/row", "most txns behind", "visible s")
    rows = []
    for record in records:
        series = record.timeseries
        arrival = record.arrival or {}
        late = ", ".join(f"{table} {figures.late_share:.2%} ({figures.max_late_seconds:g}s)"
                         for table, figures in arrival.items()) or "-"
        o3 = series.server_increase("o3_commits") if series else None
        disk = series.disk_rows_per_applied_row() if series else None
        behind = series.most_transactions_behind() if series else None
        send = record.phases.get("send")
        visible = record.validation.time_to_visible_seconds if record.validation else None
        rows.append((
            record.path.name if record.path else "-", record.mode,
            "yes" if record.parameters.get("time_ordered") else "no", str(record.parameters.get("workers") or 1),
            late, f"{send.rows_per_second / 1e6:.2f}" if send else "-",
            f"{o3:.0f}" if o3 is not None else "-", f"{disk:.2f}" if disk is not None else "-",
            f"{behind:.0f}" if behind is not None else "-", f"{visible:.2f}" if visible is not None else "-",
        ))
    return plain_table(header, rows)


def query_comparison_table(records: list[RunRecord]) -> str:
    """Query runs side by side: one line per file (protocol, workers, counted queries, overall queries/s,
    median and p99 latency, failures, check, the rate as a ratio to the first file's), then each query
    type's median latency in ms and queries/s, one column per file."""
    header = ("file", "date", "protocol", "workers", "cpus", "queries", "queries/s", "median ms", "p99 ms",
              "failed", "check", "status", "vs first")
    rows, first_rate, types = [], None, []
    for index, record in enumerate(records):
        queries = record.queries or QueryFigures()
        statistics = queries.statistics
        overall = statistics.get(ALL_QUERIES)
        rate = overall.queries_per_second if overall else None
        if index == 0:
            first_rate = rate
        for name in statistics:
            if name != ALL_QUERIES and name not in types:
                types.append(name)
        failed = sum(sum(kinds.values()) for kinds in queries.failures.values())
        check = queries.check
        parameters = record.parameters
        rows.append((
            record.path.name if record.path else "-", record.started_at[:19], str(parameters.get("protocol", "-")),
            str(parameters.get("workers", "-")), str(len(record.system.get("cpu_affinity") or []) or "-"),
            str(overall.count) if overall else "-", f"{rate:.2f}" if rate else "-",
            f"{overall.median_ms:.2f}" if overall else "-", f"{overall.p99_ms:.2f}" if overall else "-",
            str(failed), "-" if not check else f"{check.mismatches} of {check.checked} differ",
            record.status, _ratio(rate, first_rate) or "-",
        ))
    per_type = []
    for name in types:
        cells = []
        for record in records:
            figures = record.queries.statistics.get(name) if record.queries else None
            cells.append(f"{figures.median_ms:.2f} ms, {figures.queries_per_second:.1f}/s" if figures else "-")
        per_type.append((name, *cells))
    names = tuple(f"[{index + 1}] median, rate" for index in range(len(records)))
    return plain_table(header, rows) + "\n\n" + plain_table(("query type", *names), per_type)


def read_comparison_table(records: list[RunRecord]) -> str:
    """Read runs side by side, one line per file: protocol (and the kind of frame, where not pandas), workers, chunk
    rows, the CPUs the process could use, rows, million rows/s, MiB/s received, the client's CPU seconds per million
    rows, seconds to the first rows, peak RSS in MiB, the check, and the rate as a ratio to the first file's."""
    header = ("file", "date", "protocol", "workers", "chunk", "cpus", "rows", "Mrows/s", "MiB/s", "CPU s/Mrows",
              "first rows s", "peak RSS MiB", "check", "status", "vs first")
    rows, first_rate = [], None
    for index, record in enumerate(records):
        phase, figures = record.phases.get("read"), record.read
        rate = _rate(phase)
        if index == 0:
            first_rate = rate
        cpu = phase.client_cpu_seconds if phase else None
        check = "-"
        if figures is not None and figures.checked_rows is not None:
            check = "differs" if figures.check_error else f"{figures.checked_rows} equal"
        rows.append((
            record.path.name if record.path else "-", record.started_at[:19],
            figures.path() if figures else "-", str(figures.workers) if figures else "-",
            str(figures.chunk_rows) if figures else "-", str(len(record.system.get("cpu_affinity") or []) or "-"),
            str(phase.rows) if phase else "-", f"{rate / 1e6:.3f}" if rate else "-",
            f"{phase.mib_per_second:.1f}" if phase and phase.bytes else "-",
            f"{cpu / phase.rows * 1e6:.3f}" if cpu is not None and phase.rows else "-",
            f"{figures.first_rows_seconds:.3f}" if figures and figures.first_rows_seconds is not None else "-",
            f"{figures.peak_rss_bytes / 2**20:.0f}" if figures else "-", check, record.status,
            _ratio(rate, first_rate) or "-",
        ))
    return plain_table(header, rows)


def _number(value: float | None, scale: float = 1.0, digits: int = 3) -> str:
    return "-" if value is None else f"{value / scale:.{digits}f}"


def _median(figures: dict[str, FigureSummary], name: str) -> float | None:
    return figures[name].median if name in figures else None


def _versus_baseline(comparison: Comparison, variant: str, figures: dict[str, FigureSummary]) -> str:
    """The variant's main ratio: rows/s where its rounds counted rows, else seconds; then its paired ratio,
    interval and standing."""
    if variant == comparison.baseline:
        return "baseline"
    main, label = ("rows_per_second", "rows/s") if "rows_per_second" in figures else ("seconds", "s")
    if main not in figures or figures[main].ratio is None:
        return "-"
    figure = figures[main]
    return f"{label} {figure.ratio:.2f}x (paired {figure.paired_text(higher_is_better=main == 'rows_per_second')})"


def _other_figures(comparison: Comparison, variant: str, figures: dict[str, FigureSummary]) -> str:
    """The medians of the figures beyond the core ones, each with its ratio to the baseline's."""
    cells = []
    for name, figure in figures.items():
        if name in CORE_FIGURES:
            continue
        ratio = f" ({figure.ratio:.2f}x)" if figure.ratio is not None and variant != comparison.baseline else ""
        cells.append(f"{name} {figure.median:.4g}{ratio}")
    return " ".join(cells) or "-"


def benchmark_table(records: Sequence[BenchmarkRecord]) -> str:
    """A plain-text table, one line per variant of each comparison of each record: medians over the counted
    rounds (seconds, million rows/s, client CPU seconds, peak RSS in MiB), the ratio to the comparison's
    baseline (rows/s where the rounds counted rows, else seconds) with its paired ratio, interval and
    standing, and the other figures' medians with their ratios."""
    header = ("file", "date", "benchmark", "comparison", "variant", "rounds", "median s", "Mrows/s", "CPU s",
              "RSS MiB", "vs baseline", "other medians (vs baseline)")
    rows = []
    for record in records:
        for comparison in record.comparisons:
            counted = comparison.counted_rounds()
            for variant in comparison.variants:
                figures = comparison.summary.get(variant, {})
                rows.append((
                    record.path.name if record.path else "-", record.started_at[:19], record.benchmark,
                    comparison.name or "-", variant, str(sum(variant in one.measurements for one in counted)),
                    _number(_median(figures, "seconds")), _number(_median(figures, "rows_per_second"), 1e6),
                    _number(_median(figures, "client_cpu_seconds"), digits=2),
                    _number(_median(figures, "peak_rss_bytes"), 2**20, digits=0),
                    _versus_baseline(comparison, variant, figures), _other_figures(comparison, variant, figures),
                ))
    return plain_table(header, rows)
