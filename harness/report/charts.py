"""A report's charts as matplotlib figures inlined as SVG: a figure's common layout (a title, each row's axes
labelled and gridded, time on the last one) and its SVG, each with its own element ids, so that many charts
share one page."""

from __future__ import annotations

import html
import io

import matplotlib
from matplotlib.figure import Figure


class Charts:
    """Inlines the figures of one page as SVG, numbered in order (their element ids salted apart)."""

    def __init__(self):
        self.count = 0

    def svg(self, figure: Figure, title: str) -> str:
        self.count += 1
        buffer = io.StringIO()
        with matplotlib.rc_context({"svg.hashsalt": f"chart-{self.count}", "svg.fonttype": "none"}):
            figure.savefig(buffer, format="svg", bbox_inches="tight")
        svg = buffer.getvalue()
        svg = svg[svg.index("<svg"):]
        return f"<div class=\"chart\" title=\"{html.escape(title)}\">{svg}</div>"


def new_figure(title: str, ylabel: str, rows: int = 1) -> tuple[Figure, list]:
    """A figure of ``rows`` axes one above the other, the first titled, time along the last."""
    figure = Figure(figsize=(10, 3.2 * rows), layout="constrained")
    axes = figure.subplots(rows, 1, squeeze=False)[:, 0].tolist()
    axes[0].set_title(title)
    for ax in axes:
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("seconds since the run started")
    return figure, axes
