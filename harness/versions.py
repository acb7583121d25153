"""The harness's own version, and the pinned versions of the stack (QuestDB, images), read from the project's
``.env``: the one file that names them, which Compose and the Makefile read too."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from harness.errors import HarnessError

# The harness's version, as pyproject.toml gives it; every record carries it.
HARNESS_VERSION = "0.1.0"
ENV_FILE = Path(__file__).resolve().parents[1] / ".env"


@cache
def pinned() -> dict[str, str]:
    """``KEY=VALUE`` lines of ``.env`` (comments and blank lines skipped)."""
    try:
        lines = ENV_FILE.read_text().splitlines()
    except OSError as exc:
        raise HarnessError(f"cannot read the pinned versions in {ENV_FILE}: {exc.strerror}") from None
    entries = (line.split("=", 1) for line in lines if line.strip() and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in entries}


def questdb_version() -> str:
    return pinned()["QUESTDB_VERSION"]


def qwp_server() -> tuple[str, str | None]:
    """The pinned QWP server: a Maven version, or a server jar's path from the project root with its sha256."""
    return pinned()["QUESTDB_QWP"], pinned().get("QUESTDB_QWP_SHA256") or None


def async_profiler_version() -> str:
    """The pin, as ``.env`` gives it, or as Compose hands it to the client container (which has no ``.env``)."""
    return os.environ.get("ASYNC_PROFILER_VERSION") or pinned()["ASYNC_PROFILER_VERSION"]
