"""Every relative link of the Markdown files named leads to a file that exists: each one that does not is
printed as ``FILE: TARGET``, and the exit code is 1 if any (2 for a file that cannot be read).

    python3 scripts/check_links.py FILE.md [...]        (make check-reference: the reference runs' READMEs)

tests/test_docs.py checks README.md and docs/ with ``missing_links``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_LINK = re.compile(r"\]\(([^)\s]+)\)")


def missing_links(document: Path) -> list[str]:
    """The targets of ``document``'s relative links that lead to no file (a URL or an anchor of its own is
    not checked; an anchor after a path is left out)."""
    missing = []
    for target in _LINK.findall(document.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (document.parent / target.split("#")[0]).resolve().exists():
            missing.append(target)
    return missing


def main(paths: list[str]) -> int:
    if not paths:
        print("usage: scripts/check_links.py FILE.md [...]", file=sys.stderr)
        return 2
    missing = 0
    for path in map(Path, paths):
        try:
            targets = missing_links(path)
        except OSError as exc:
            print(f"error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        for target in targets:
            print(f"{path}: {target}")
        missing += len(targets)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
