"""Collapsed stacks, the profilers' common currency: one line a distinct stack, its frames from the root to the leaf
joined by ``;``, then a space and its samples (py-spy's ``raw`` format, async-profiler's ``collapsed``). Read,
merged, written, their top frames counted, and turned into a speedscope file (one profile a phase)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

Stacks = Counter  # "root;...;leaf" -> samples


def parse_collapsed(lines: Iterable[str]) -> Stacks:
    """Stacks of collapsed lines; a line that is not ``stack count`` is skipped (a profiler's note)."""
    stacks: Stacks = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            stacks[stack] += int(count)
    return stacks


def read_collapsed(path: Path) -> Stacks:
    with open(path, encoding="utf-8", errors="replace") as lines:
        return parse_collapsed(lines)


def write_collapsed(stacks: Stacks, path: Path) -> None:
    path.write_text("".join(f"{stack} {count}\n" for stack, count in stacks.most_common()), encoding="utf-8")


def merged(profiles: Iterable[Stacks]) -> Stacks:
    total: Stacks = Counter()
    for stacks in profiles:
        total.update(stacks)
    return total


def frames(stack: str) -> list[str]:
    return stack.split(";")


def top_frames(stacks: Stacks, count: int = 10) -> list[tuple[str, int]]:
    """The frames with the most samples of their own (the stack's leaf), most first."""
    leaves: Counter = Counter()
    for stack, samples in stacks.items():
        leaves[frames(stack)[-1]] += samples
    return leaves.most_common(count)


def speedscope(profiles: Mapping[str, Stacks], name: str, rate_hz: int) -> dict:
    """A speedscope file (https://www.speedscope.app/file-format-schema.json) of ``profiles`` (a phase's name to its
    stacks), one sampled profile each, a sample weighing its time at ``rate_hz``."""
    index: dict[str, int] = {}
    shared = []
    out = []
    for phase, stacks in profiles.items():
        samples, weights = [], []
        for stack, count in stacks.most_common():
            path = []
            for frame in frames(stack):
                if frame not in index:
                    index[frame] = len(shared)
                    shared.append({"name": frame})
                path.append(index[frame])
            samples.append(path)
            weights.append(count / rate_hz)
        out.append({"type": "sampled", "name": f"{name}: {phase}", "unit": "seconds", "startValue": 0,
                    "endValue": sum(weights), "samples": samples, "weights": weights})
    return {"$schema": "https://www.speedscope.app/file-format-schema.json", "name": name,
            "exporter": "harness", "shared": {"frames": shared}, "profiles": out}


def write_speedscope(profiles: Mapping[str, Stacks], name: str, rate_hz: int, path: Path) -> None:
    path.write_text(json.dumps(speedscope(profiles, name, rate_hz)), encoding="utf-8")
