"""The fixture timer (a pytest plugin, loaded by conftest.py): ``--fixture-durations=N`` prints the N fixtures
whose set-up took longest in all, with their scope and how often each was set up.

pytest's ``--durations`` gives a test's set-up time, which is whatever fixtures it was the first to need; this
names them. Under pytest-xdist each worker times its own and the controller adds them up.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

# fixture name -> [scope, times set up, seconds in all]
_TIMES: dict[str, list] = defaultdict(lambda: ["", 0, 0.0])


def pytest_addoption(parser):
    parser.addoption("--fixture-durations", type=int, default=None, metavar="N",
                     help="print the N fixtures whose set-up took longest in all (N=0: every one)")


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    started = time.perf_counter()
    yield
    entry = _TIMES[fixturedef.argname]
    entry[0] = fixturedef.scope
    entry[1] += 1
    entry[2] += time.perf_counter() - started


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the times to the controller
        workeroutput["fixture_times"] = dict(_TIMES)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, called in the controller as a worker ends
def pytest_testnodedown(node, error):
    for name, (scope, count, seconds) in getattr(node, "workeroutput", {}).get("fixture_times", {}).items():
        entry = _TIMES[name]
        entry[0] = scope
        entry[1] += count
        entry[2] += seconds


def pytest_terminal_summary(terminalreporter, config):
    shown = config.getoption("--fixture-durations")
    if shown is None or getattr(config, "workeroutput", None) is not None:
        return
    rows = sorted(_TIMES.items(), key=lambda item: -item[1][2])
    terminalreporter.write_sep("=", "fixture set-up durations")
    terminalreporter.write_line(f"{'seconds':>9} {'set-ups':>7}  {'scope':9} fixture")
    for name, (scope, count, seconds) in rows[:shown or None]:
        terminalreporter.write_line(f"{seconds:9.2f} {count:7d}  {scope:9} {name}")
