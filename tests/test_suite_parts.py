"""The suite's own machinery (tests/conftest.py, tests/helpers.py): the parallel part's units and order, the
rule that a serial test is also slow, and each xdist worker's ports apart from the others'."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from conftest import DOCKER_MODULES, ModuleScheduling, module_weights, pytest_collection_modifyitems

TESTS = Path(__file__).resolve().parent


def test_the_docker_modules_are_one_unit_and_every_other_module_its_own():
    split = ModuleScheduling._split_scope.__get__(object.__new__(ModuleScheduling))
    assert {split(f"tests/{module}::test_x[a]") for module in DOCKER_MODULES} == {"docker"}
    assert split("tests/test_bench.py::test_x[tcp-1]") == "tests/test_bench.py"
    assert split("tests/test_bench.py::test_y") == split("tests/test_bench.py::test_x[tcp-1]")


class Item:
    """What the collection hook reads of a test item."""

    def __init__(self, module: str, *marks: str, fixtures: tuple[str, ...] = ()):
        self.path = TESTS / module
        self.nodeid = f"tests/{module}::test_{len(marks)}"
        self.fixturenames = fixtures
        self.marks = set(marks)

    def get_closest_marker(self, name: str):
        return name if name in self.marks else None

    def add_marker(self, mark) -> None:
        self.marks.add(mark.name)


def test_the_longest_go_first_each_modules_tests_in_their_order(monkeypatch):
    items = [Item("test_a.py", "slow"), Item("test_b.py", "slow"), Item("test_b.py"), Item("test_b.py", "slow"),
             Item("test_docker_e2e.py", "slow"), Item("test_c.py")]
    assert module_weights(items)["test_docker_e2e.py"] > module_weights(items)["test_b.py"] == 2
    order = list(items)
    # As in an xdist worker: conftest reads the worker's name once, as it is imported.
    monkeypatch.setattr(conftest, "WORKER", "gw0")
    pytest_collection_modifyitems(None, order)
    assert [item.path.name for item in order] == ["test_docker_e2e.py", "test_b.py", "test_b.py", "test_b.py",
                                                  "test_a.py", "test_c.py"]
    assert [item for item in order if item.path.name == "test_b.py"] == items[1:4]
    assert "docker" in order[0].marks and "server" not in order[1].marks


def test_the_collection_marks_server_tests_and_refuses_a_serial_test_that_is_not_slow(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    uses = Item("test_a.py", fixtures=("questdb",))
    pytest_collection_modifyitems(None, [uses, Item("test_a.py", "slow", "serial")])
    assert "server" in uses.marks
    with pytest.raises(pytest.UsageError, match="serial but not slow"):
        pytest_collection_modifyitems(None, [Item("test_a.py", "serial")])


def ports_of(worker: str, offset: str = "0") -> list[int]:
    """Every fixed port of tests/helpers.py as worker ``worker`` (PYTEST_XDIST_WORKER) sees them."""
    script = ("import json, helpers; print(json.dumps([v for k, v in vars(helpers).items() if k.isupper() and "
              "(k.endswith('_PORT') or k.endswith('_PORTS'))]))")
    env = {**os.environ, "PYTEST_XDIST_WORKER": worker, "HARNESS_TEST_PORT_OFFSET": offset}
    found = json.loads(subprocess.run([sys.executable, "-c", script], cwd=TESTS, env=env, capture_output=True,
                                      text=True, check=True).stdout)
    return sorted(port for value in found for port in (value.values() if isinstance(value, dict) else [value]))


@pytest.mark.slow
def test_each_worker_has_ports_of_its_own_below_the_ephemeral_range():
    first, second = ports_of("gw0"), ports_of("gw1")
    assert len(first) > 30 and [port + 1000 for port in first] == second
    assert not set(first) & set(second)
    assert max(second) < 32768
    assert ports_of("gw1", "7") == [port + 7 for port in second]
    assert ports_of("") == first  # a plain run's ports are the first worker's
