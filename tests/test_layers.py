"""The package's layers, read from its source: which module imports which (function-level imports too),
no circle among them, the domain (``harness/tsbs/``) free of the command line, no module over 400 lines,
and a plain ``queries run`` that loads neither numba, matplotlib nor the questdb client."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
COMMAND_LINE = {"harness.cli", "harness.options", "harness.option_groups"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Every module of ours that ``path`` imports, wherever the import stands (``from harness.tsbs import
    cpu_only`` counts as importing harness.tsbs.cpu_only; ``"module:attribute"`` strings of lazy commands
    and the use-case registry count too; imports under ``if TYPE_CHECKING:`` do not)."""
    found = set()
    tree = ast.parse(path.read_text())
    # Imports for type checkers only never run.
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                   for statement in block.body for node in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("harness."):
            found.add(node.value.partition(":")[0])
    return {name for name in found if name in modules} - {module_name(path)}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def test_no_import_circle(graph):
    visiting, done = [], set()

    def visit(name: str) -> None:
        if name in done:
            return
        assert name not in visiting, "import circle: " + " -> ".join(visiting[visiting.index(name):] + [name])
        visiting.append(name)
        for imported in sorted(graph[name]):
            visit(imported)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_the_domain_imports_no_command_line(graph):
    for name, imported in graph.items():
        if name.startswith("harness.tsbs"):
            assert not imported & COMMAND_LINE, f"{name} imports {sorted(imported & COMMAND_LINE)}"


def test_no_module_over_400_lines():
    long = {module_name(path): count for path in PACKAGE.rglob("*.py")
            if (count := len(path.read_text().splitlines())) > 400}
    assert not long, long


def test_a_plain_query_run_loads_no_numba_matplotlib_or_client(tmp_path):
    """``-X importtime`` lists every module a run imported; the query file is missing, so the run ends at
    once, after its imports."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "harness", "queries", "run",
                          str(tmp_path / "queries.jsonl"), "--results", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=120)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in run.stderr.splitlines() if "|" in line}
    assert "harness" in imported, run.stderr[-2000:]
    assert not imported & {"numba", "matplotlib", "questdb"}, sorted(imported & {"numba", "matplotlib", "questdb"})
