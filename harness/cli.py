"""Command-line shell over the library API: parses options, calls the library, maps errors to exit codes.

Every user-caused error ends in one line on stderr and exit code 2 (bad input); a run that fails
(server down, killed mid-send, validation) ends in one line and exit code 1. No traceback reaches the user.
"""

from __future__ import annotations

import sys

import typer

# typer >= 0.20 vendors click; its usage-error class is not re-exported publicly.
from typer._click.exceptions import UsageError as CommandLineError

from harness.errors import HarnessError, RunError, UsageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="TSBS-exact pandas -> QuestDB ingestion benchmark.",
)


@app.callback()
def _group() -> None:
    """TSBS-exact pandas -> QuestDB ingestion benchmark."""


def main(argv: list[str] | None = None) -> None:
    """Entry point of `python -m harness` and the `harness` console script."""
    try:
        app(args=argv, standalone_mode=False, prog_name="harness")
    except CommandLineError as exc:
        _die(exc.format_message(), 2)
    except UsageError as exc:
        _die(str(exc), 2)
    except (RunError, HarnessError) as exc:
        _die(str(exc), 1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _die("interrupted", 130)
    except BrokenPipeError:
        sys.exit(1)


def _die(message: str, code: int) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


@app.command()
def version() -> None:
    """Print the harness version."""
    from harness import __version__

    print(__version__)
