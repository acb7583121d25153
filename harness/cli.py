"""Command-line shell over the library API: parses options, calls the library, maps errors to exit codes.

Every user-caused error ends in one line on stderr and exit code 2 (bad input); a run that fails
(server down, killed mid-send, validation) ends in one line and exit code 1. No traceback reaches the user.
"""

from __future__ import annotations

import sys

from typing import Optional

import typer

# typer >= 0.20 vendors click; its usage-error class is not re-exported publicly.
from typer._click.exceptions import UsageError as CommandLineError

from harness.errors import HarnessError, RunError, UsageError
from harness.tsbs import cpu_only, params

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
def generate(
    use_case: str = typer.Option("cpu-only", help="TSBS use case (only cpu-only)."),
    seed: Optional[int] = typer.Option(None, help="PRNG seed, as tsbs_generate_data --seed. Default: random, printed."),
    scale: int = typer.Option(4000, help="Number of hosts."),
    timestamp_start: str = typer.Option(params.DEFAULT_TIMESTAMP_START, help="First epoch (RFC 3339)."),
    timestamp_end: str = typer.Option(params.DEFAULT_TIMESTAMP_END, help="End of the range, exclusive (RFC 3339)."),
    log_interval: str = typer.Option(params.DEFAULT_LOG_INTERVAL, help="Time between epochs (Go duration)."),
    max_data_points: int = typer.Option(0, help="Stop after this many rows (0: the whole range), as TSBS."),
    file: str = typer.Option("-", help="Output path; - for stdout."),
    fields: str = typer.Option("double", help="long: TSBS's integer values (byte-identical output); double: the walk states."),
    format: str = typer.Option("questdb", help="questdb or influx: TSBS prints the same bytes for both."),
    chunk_rows: int = typer.Option(cpu_only.DEFAULT_CHUNK_ROWS, help="Rows per generated DataFrame."),
    workers: int = typer.Option(0, help="Serializer threads; 0: one per available core."),
    symbol_dtype: str = typer.Option("category", help="Tag column dtype: " + ", ".join(cpu_only.SYMBOL_DTYPES) + "."),
) -> None:
    """Write TSBS data as ILP text (protocol 1), through the questdb client's serializer."""
    from harness.ingest.ilp import default_workers, write_ilp

    if format not in ("questdb", "influx"):
        raise UsageError(f"--format must be questdb or influx, got {format!r}")
    if workers < 0:
        raise UsageError(f"--workers must be >= 0, got {workers}")
    if max_data_points < 0:
        raise UsageError(f"--max-data-points must be >= 0, got {max_data_points}")
    cpu_only.check_frame_options(chunk_rows, fields, symbol_dtype)
    spec = params.make_spec(
        use_case=use_case,
        seed=seed,
        scale=scale,
        timestamp_start=timestamp_start,
        timestamp_end=timestamp_end,
        log_interval=log_interval,
        row_limit=max_data_points or None,
    )
    try:
        out = sys.stdout.buffer if file == "-" else open(file, "wb", buffering=8 << 20)
    except OSError as exc:
        raise UsageError(f"--file: cannot write {file}: {exc.strerror}") from None
    if seed is None:
        print(f"seed: {spec.seed}", file=sys.stderr, flush=True)
    try:
        write_ilp(cpu_only.frames(spec, chunk_rows, fields, symbol_dtype), out, workers=workers or default_workers())
    finally:
        out.flush()
        if out is not sys.stdout.buffer:
            out.close()


@app.command()
def version() -> None:
    """Print the harness version."""
    from harness import __version__

    print(__version__)
