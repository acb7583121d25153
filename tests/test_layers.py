"""The package's layers, read from its source: which module imports which (function-level and type-only
imports too), every import against the order ``harness.LAYERS`` writes down, no circle among modules nor
among the folders that hold them, the domain (``harness/tsbs/``) free of the command line, the top level
small, no module over 450 lines nor function over 60, and a plain ``queries run`` that loads neither numba,
matplotlib nor the questdb client."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from harness import LAYERS

PACKAGE = Path(__file__).resolve().parents[1] / "harness"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Every module of ours that ``path`` imports, wherever the import stands, under ``if TYPE_CHECKING:``
    too (``from harness.tsbs import groups`` counts as importing harness.tsbs.groups; ``"module:attribute"``
    strings of lazy commands and the use-case registry count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("harness."):
            found.add(node.value.partition(":")[0])
    return {name for name in found if name in modules} - {module_name(path)}


def layer_of(name: str) -> int:
    """The index in ``LAYERS`` of the longest entry that is ``name`` or holds it (the package's face, which
    names the notebook API, is a front door: the top layer's)."""
    if name == "harness":
        return len(LAYERS) - 1
    best, index = "", None
    for position, (_, entries) in enumerate(LAYERS):
        for entry in (f"harness.{entry}" for entry in entries):
            if (name == entry or name.startswith(entry + ".")) and len(entry) > len(best):
                best, index = entry, position
    assert index is not None, f"{name} is in no layer of harness.LAYERS"
    return index


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def _assert_no_circle(graph: dict[str, set[str]], what: str) -> None:
    visiting, done = [], set()

    def visit(name: str) -> None:
        if name in done:
            return
        assert name not in visiting, f"{what} circle: " + " -> ".join(visiting[visiting.index(name):] + [name])
        visiting.append(name)
        for imported in sorted(graph[name]):
            visit(imported)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_no_import_circle(graph):
    _assert_no_circle(graph, "import")


def test_no_circle_among_folders(graph):
    """Folder A's modules importing folder B's, and B's importing A's, is a circle of the house's plan even
    where no two modules close one."""
    def folder(name: str) -> str:
        return name if (PACKAGE.parent / name.replace(".", "/")).is_dir() else name.rpartition(".")[0]

    folders: dict[str, set[str]] = {}
    for name, imported in graph.items():
        mine = folder(name)
        others = {folder(other) for other in imported} - {mine}
        # A package's face may name what is inside it; a folder inside another is part of it.
        folders.setdefault(mine, set()).update(other for other in others if not other.startswith(mine + ".")
                                               and not mine.startswith(other + "."))
    for other in {other for imported in folders.values() for other in imported}:
        folders.setdefault(other, set())
    _assert_no_circle(folders, "folder")


def test_every_import_keeps_to_the_layers(graph):
    upward = sorted(f"{name} ({LAYERS[layer_of(name)][0]}) imports {imported} ({LAYERS[layer_of(imported)][0]})"
                    for name, imports in graph.items() for imported in imports
                    if layer_of(imported) > layer_of(name))
    assert not upward, "\n".join(upward)


def test_every_module_has_a_layer_and_a_docstring(graph):
    for name in graph:
        layer_of(name)
    undocumented = sorted(module_name(path) for path in PACKAGE.rglob("*.py")
                          if path.name != "__main__.py" and not ast.get_docstring(ast.parse(path.read_text())))
    assert not undocumented, undocumented


def test_the_top_level_holds_few_modules():
    modules = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(modules) <= 8, modules


# A module or function past these is split by concept (a module) or where a name explains the part (a function).
MODULE_LINES, FUNCTION_LINES = 450, 60


def test_no_module_nor_function_too_long():
    long_modules, long_functions = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > MODULE_LINES:
            long_modules.append((module_name(path), len(text.splitlines())))
        long_functions += [(module_name(path), node.name, node.end_lineno - node.lineno + 1)
                           for node in ast.walk(ast.parse(text))
                           if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and node.end_lineno - node.lineno + 1 > FUNCTION_LINES]
    assert not long_modules and not long_functions, (long_modules, long_functions)


def test_a_use_case_per_subpackage():
    assert {path.name for path in (PACKAGE / "tsbs").iterdir() if (path / "__init__.py").is_file()} >= {
        "cpu_only", "devops", "iot"}


def test_a_plain_query_run_loads_no_numba_matplotlib_or_client(tmp_path):
    """``-X importtime`` lists every module a run imported; the query file is missing, so the run ends at
    once, after its imports."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "harness", "queries", "run",
                          str(tmp_path / "queries.jsonl"), "--results", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=120)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in run.stderr.splitlines() if "|" in line}
    assert "harness" in imported, run.stderr[-2000:]
    assert not imported & {"numba", "matplotlib", "questdb"}, sorted(imported & {"numba", "matplotlib", "questdb"})
