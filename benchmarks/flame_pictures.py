"""Pictures of profiled runs' flame graphs: for each record, each side's flame graph of one phase (the report's
drawing, its buckets' colours with a legend) as a PNG, taken by headless Chromium.

    python benchmarks/flame_pictures.py results/reference/2026-11-29-profile/cpu-questdb-p1-2w.json ... \\
        --phase send --out results/reference/2026-11-29-profile/pictures
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.records.store import load_results
from harness.report.flamegraph import ROW, WIDTH, flame_graph
from harness.telemetry.stack_buckets import CLIENT_BUCKETS, SERVER_BUCKETS
from harness.telemetry.stacks import read_collapsed

MARGIN = 90  # px above the graph: its title and the legend


def page(svg: str, title: str, buckets) -> str:
    legend = " ".join(f"<span style=\"background:{bucket.colour};padding:1px 6px\">{html.escape(bucket.name)}</span>"
                      for bucket in buckets)
    return (f"<!doctype html><html><body style=\"margin:8px;font:12px sans-serif\"><p><b>{html.escape(title)}</b></p>"
            f"<p>{legend}</p>{svg}</body></html>")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path)
    parser.add_argument("--phase", default="send")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("Chromium is not installed (apt-get install chromium)")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        for record in load_results(args.records):
            folder = record.path.parent / record.profile.folder
            for name, side, buckets in (("client", record.profile.client, CLIENT_BUCKETS),
                                        ("server", record.profile.server, SERVER_BUCKETS)):
                file = side.files.get(f"collapsed {args.phase}") if side is not None else None
                if file is None:
                    continue
                title = f"{record.path.stem}: {'QuestDB' if name == 'server' else 'the client'}, {args.phase} phase"
                svg = flame_graph(read_collapsed(folder / file), title, buckets)
                html_file = Path(scratch) / f"{record.path.stem}-{name}.html"
                html_file.write_text(page(svg, f"{side.profiler}, {side.mode}", buckets))
                found = re.search(r'<svg[^>]* height="(\d+)"', svg)
                height = MARGIN + (int(found.group(1)) if found else ROW)
                picture = args.out / f"{record.path.stem}-{name}.png"
                subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                f"--user-data-dir={Path(scratch) / 'chromium'}", f"--screenshot={picture}",
                                f"--window-size={WIDTH + 20},{height + 20}", html_file.as_uri()],
                               capture_output=True, check=True, timeout=120)
                print(picture)
    return 0


if __name__ == "__main__":
    sys.exit(main())
