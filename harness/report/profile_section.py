"""A profiled run's part of the report (``--profile``): the verdict, each side's buckets (overall and per
phase), its top frames and its flame graph, drawn from the collapsed stacks beside the record."""

from __future__ import annotations

import html

from harness.records.run_record import RunRecord
from harness.report.flamegraph import flame_graph
from harness.telemetry.stack_buckets import CLIENT_BUCKETS, SERVER_BUCKETS
from harness.telemetry.stacks import merged, read_collapsed


def profile_section(record: RunRecord) -> str:
    """``--profile``'s part: the verdict, each side's buckets (overall and per phase), top frames and flame graph
    (drawn from the collapsed stacks beside the record)."""
    figures = record.profile
    parts = ["<h3>Profile</h3>", f"<p><b>Verdict</b>: {html.escape(figures.verdict)}</p>"]
    if figures.server_not_profiled:
        parts.append(f"<p>QuestDB not profiled: {html.escape(figures.server_not_profiled)}</p>")
    folder = record.path.parent / figures.folder if record.path is not None and figures.folder else None
    for name, side, buckets in (("client", figures.client, CLIENT_BUCKETS), ("QuestDB", figures.server, SERVER_BUCKETS)):
        if side is None:
            continue
        phases = list(side.phases)
        header = "".join(f"<th>{html.escape(phase)}</th>" for phase in ["bucket", "all", *phases])
        rows = []
        for bucket, count in side.buckets.items():
            cells = [_share(count, side.samples)] + [_share(side.phases[phase].get(bucket, 0),
                                                            sum(side.phases[phase].values())) for phase in phases]
            rows.append(f"<tr><th>{html.escape(bucket)}</th>{''.join(f'<td>{cell}</td>' for cell in cells)}</tr>")
        cpus = f", {side.cpus:.2f} CPUs busy" if side.cpus is not None else ""
        cpus += f" (the profiler itself {side.profiler_cpus:.2f})" if side.profiler_cpus is not None else ""
        cpus += f", {side.samples / side.seconds:.0f} samples/s over {side.seconds:.1f} s" if side.seconds else ""
        parts.append(f"<h4>{name}: {html.escape(side.profiler)}, {html.escape(side.mode)}, {side.rate_hz} Hz, "
                     f"{side.samples} samples{cpus}</h4>")
        if side.missing:
            parts.append(f"<p class=\"missing\">Missing: {html.escape(side.missing)}</p>")
        parts.append(f"<table><tr>{header}</tr>{''.join(rows)}</table>")
        top = "".join(f"<tr><td>{html.escape(str(frame))}</td><td>{_share(count, side.samples)}</td></tr>"
                      for frame, count in side.top_frames[:10])
        parts.append(f"<details><summary>Top frames (samples of their own)</summary><table>{top}</table></details>")
        stacks = [folder / file for what, file in side.files.items() if what.startswith("collapsed ")] \
            if folder is not None else []
        present = [path for path in stacks if path.exists()]
        if stacks and len(present) == len(stacks):
            parts.append(flame_graph(merged(read_collapsed(path) for path in present), f"{name}, all phases",
                                     buckets))
        elif side.files:
            parts.append(f"<p class=\"missing\">The {name}'s stacks are not beside this record "
                         f"({html.escape(str(folder))}): no flame graph.</p>")
    return "\n".join(parts)


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else "-"
