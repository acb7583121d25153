"""Write docs/cli.md from the CLI itself: every command, argument and option, with the help text, default
and range that `--help` prints (click's own help records), so the reference cannot drift from the code.

    python scripts/cli_reference.py > docs/cli.md        (make docs)
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from harness.cli import app  # noqa: E402

INTRO = """\
# Command-line reference

`python -m harness COMMAND` (or the `harness` console script of `.venv/bin/`). Generated from the
commands' own `--help` by `make docs` (`scripts/cli_reference.py`); `tests/test_docs.py` fails when this
file and the code disagree. Defaults and ranges are the ones `--help` prints.

Exit codes: 0 done; 2 bad input (a bad option, an unreadable file, a schema clash), one line on stderr;
1 a run that failed (nothing listening, a server killed mid-send, a validation timeout), one line on
stderr, and its results file still written; 130 interrupted (143 terminated). `native status` exits 3
when QuestDB does not run.

Rules between `bench` options, checked before anything is sent (exit 2): `--op iterrows|itertuples` is
the single-threaded row-by-row baseline and takes no `--workers`; `--target sink` takes ILP over TCP only;
`--exactly-once` needs ILP over HTTP to QuestDB ([exactly-once.md](exactly-once.md)); `--keep-table`
checks an existing table's schema and refuses an incompatible one. `--conf` takes a full client
configuration string (`tcp`, `tcps`, `http`, `https`: auth, TLS, auto-flush ...); a key the client does not
document is refused, its `addr` is where the harness checks that something listens, and secret values
(`password`, `token`, `token_x`, `token_y`, `tls_roots_password`) are printed and recorded as `***`. How
each phase is timed: [methodology.md](methodology.md).
"""


def _cell(text: str) -> str:
    # Absolute paths of this checkout (defaults under .cache/) are shown relative to the project.
    text = " ".join(text.split()).replace(str(PROJECT_ROOT) + "/", "")
    return text.replace("|", "\\|")


def _command_section(path: list[str], command, ctx: typer.Context) -> list[str]:
    lines = [f"## `{' '.join(path)}`", ""]
    lines += [" ".join((command.help or "").split()), ""]
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines += ["```", f"{' '.join(path)} {usage}".rstrip(), "```", ""]
    records = [(param, param.get_help_record(ctx)) for param in command.get_params(ctx)]
    records = [(param, record) for param, record in records if record and param.name != "help"]
    if records:
        lines += ["| argument / option | meaning |", "|---|---|"]
        for param, (flags, help_text) in records:
            if param.param_type_name == "argument":
                flags = f"{flags} (argument)"
            help_text = _cell(help_text).replace("<", "&lt;").replace(">", "&gt;")
            lines.append(f"| `{_cell(flags)}` | {help_text} |")
        lines.append("")
    return lines


def _walk(path: list[str], command, parent: typer.Context | None) -> list[str]:
    ctx = typer.Context(command, info_name=path[-1], parent=parent)
    if hasattr(command, "list_commands"):
        lines = []
        if parent is not None:
            lines += [f"## `{' '.join(path)} ...`", "", " ".join((command.help or "").split()), ""]
        for name in command.list_commands(ctx):
            lines += _walk([*path, name], command.get_command(ctx, name), ctx)
        return lines
    return _command_section(path, command, ctx)


def reference() -> str:
    root = typer.main.get_command(app)
    return INTRO + "\n" + "\n".join(_walk(["harness"], root, None)).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference())
