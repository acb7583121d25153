"""The documentation matches the code: docs/cli.md is what the commands' --help says today, every relative
link of README.md and docs/ leads to a file that exists (scripts/check_links.py, which `make check-reference`
runs on the reference runs' READMEs), and the README stays a short entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripts.check_links import missing_links

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]


def test_cli_reference_is_generated_from_the_current_help():
    generated = subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "cli_reference.py")],
                               capture_output=True, text=True, check=True).stdout
    assert (PROJECT_ROOT / "docs" / "cli.md").read_text() == generated, "docs/cli.md is stale: run make docs"


def test_the_reference_names_every_option_of_bench():
    text = (PROJECT_ROOT / "docs" / "cli.md").read_text()
    for flag in ("--exactly-once", "--resume", "--retry-timeout", "--worker-chunk-row-count", "--conf"):
        assert f"`{flag}" in text, flag


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(PROJECT_ROOT)))
def test_relative_links_lead_to_existing_files(document):
    missing = missing_links(document)
    assert not missing, f"{document.name} links to missing files: {missing}"


def test_readme_stays_an_entry_point():
    assert len((PROJECT_ROOT / "README.md").read_text().splitlines()) <= 130
