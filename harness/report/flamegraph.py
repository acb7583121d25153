"""A flame graph of collapsed stacks as a static SVG: the root at the bottom, each frame as wide as its samples,
coloured by the bucket it belongs to (``harness.telemetry.stack_buckets``: by its name, or by the frames down to it,
as a wait for the GIL; a frame no bucket names takes its caller's colour), each frame's name, samples and share in
its tooltip. No script: the report opens from disk. Frames narrower than ``MIN_SHARE`` of the samples are left out
(their samples stay in their callers' widths)."""

from __future__ import annotations

import html

from harness.telemetry.stack_buckets import OTHER_COLOUR, Bucket, frame_bucket
from harness.telemetry.stacks import Stacks, frames

WIDTH = 1080
ROW = 16
MIN_SHARE = 0.002
CHARACTER = 6.5  # px of an 11 px monospace character


class _Node:
    __slots__ = ("name", "value", "children")

    def __init__(self, name: str):
        self.name, self.value, self.children = name, 0, {}


def _tree(stacks: Stacks) -> _Node:
    root = _Node("all")
    for stack, samples in stacks.items():
        root.value += samples
        node = root
        for frame in frames(stack):
            node = node.children.setdefault(frame, _Node(frame))
            node.value += samples
    return root


def flame_graph(stacks: Stacks, title: str, buckets: tuple[Bucket, ...]) -> str:
    """The SVG of ``stacks`` (empty stacks: a line that says so)."""
    root = _tree(stacks)
    if not root.value:
        return f"<p class=\"missing\">{html.escape(title)}: no samples.</p>"
    total = root.value
    cells: list[tuple[float, int, float, str, str, int]] = []  # x, depth, width, name, colour, samples

    def place(node: _Node, x: float, depth: int, colour: str, path: str) -> int:
        path = f"{path};{node.name}" if path else node.name
        own = frame_bucket(node.name, buckets, path) if node is not root else None
        colour = own.colour if own is not None else colour
        width = node.value / total * WIDTH
        cells.append((x, depth, width, node.name, colour, node.value))
        deepest = depth
        for child in sorted(node.children.values(), key=lambda child: -child.value):
            if child.value / total >= MIN_SHARE:
                deepest = max(deepest, place(child, x, depth + 1, colour, path if node is not root else ""))
            x += child.value / total * WIDTH
        return deepest

    deepest = place(root, 0.0, 0, OTHER_COLOUR, "")
    height = (deepest + 1) * ROW
    shapes = []
    for x, depth, width, name, colour, samples in cells:
        y = height - (depth + 1) * ROW
        tip = html.escape(f"{name}: {samples} samples, {samples / total:.1%}")
        label = name if len(name) * CHARACTER <= width - 4 else name[:max(int((width - 4) / CHARACTER) - 1, 0)] + "…"
        text = (f"<text x=\"{x + 2:.1f}\" y=\"{y + ROW - 4}\">{html.escape(label)}</text>"
                if width >= 3 * CHARACTER else "")
        shapes.append(f"<g><title>{tip}</title><rect x=\"{x:.1f}\" y=\"{y}\" width=\"{max(width - 0.5, 0.5):.1f}\" "
                      f"height=\"{ROW - 1}\" fill=\"{colour}\"/>{text}</g>")
    return (f"<div class=\"chart\"><p><b>{html.escape(title)}</b>: {total} samples</p>"
            f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" "
            f"viewBox=\"0 0 {WIDTH} {height}\" font-family=\"monospace\" font-size=\"11\">{''.join(shapes)}</svg></div>")
