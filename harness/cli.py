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
    # dataframe() costs ~2 ms per call whatever the rows (per-column set-up), so chunks should be large;
    # but a chunk's ILP copy must stay under glibc's 32 MiB mmap ceiling (100k rows ~ 34 MB of long ILP
    # is mmapped and zeroed anew every time). Measured on 2 cores, long, M rows/s: 20k 1.64, 50k 1.80,
    # 80k 1.85, 100k 1.40. 50k leaves room for double's longer lines.
    chunk_rows: int = typer.Option(50_000, help="Rows per generated DataFrame."),
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
def bench(
    scale: int = typer.Option(4000, help="Number of hosts (TSBS --scale)."),
    seed: Optional[int] = typer.Option(None, help="PRNG seed. Default: random, printed and recorded."),
    row_count: int = typer.Option(10_000_000, help="Rows to generate (ignored when --timestamp-end is given)."),
    timestamp_start: str = typer.Option(params.DEFAULT_TIMESTAMP_START, help="First epoch (RFC 3339)."),
    timestamp_end: Optional[str] = typer.Option(None, help="End of a TSBS time range instead of --row-count."),
    log_interval: str = typer.Option(params.DEFAULT_LOG_INTERVAL, help="Time between epochs (Go duration)."),
    fields: str = typer.Option("double", help="double (10 DOUBLE columns) or long (TSBS's integers, LONG)."),
    symbol_dtype: str = typer.Option("category", help="Tag column dtype: " + ", ".join(cpu_only.SYMBOL_DTYPES) + "."),
    workers: Optional[int] = typer.Option(None, help="Threads, each with its own buffer/connection. Default: one, single-threaded."),
    worker_chunk_row_count: int = typer.Option(10_000, help="Rows per chunk (dealt round-robin to workers; one flush each)."),
    send: bool = typer.Option(False, "--send", help="After serializing, send to the target."),
    stream: bool = typer.Option(False, "--stream", help="Generate chunks while sending (bounded memory); skips the serialize-only phase when sending."),
    op: str = typer.Option("dataframe", help="dataframe (Sender.dataframe), iterrows or itertuples (Sender.row per row)."),
    target: str = typer.Option("questdb", help="questdb (DDL and validation) or sink (a no-op socat sink: no DDL, no validation)."),
    transport: str = typer.Option("tcp", help="tcp or http."),
    protocol_version: str = typer.Option("auto", help="ILP protocol version: 1 (text), 2 (binary doubles), 3, or auto."),
    conf: Optional[str] = typer.Option(None, help="A full client configuration string (auth, TLS, auto-flush...); overrides --transport/--protocol-version/--ilp-port for sending. Secrets are recorded as ***."),
    host: str = typer.Option("localhost", help="Server host."),
    ilp_port: int = typer.Option(9009, help="ILP/TCP port."),
    http_port: int = typer.Option(9000, help="HTTP port (ILP/HTTP, DDL and validation queries)."),
    table: str = typer.Option(cpu_only.TABLE_NAME, help="Table name."),
    keep_table: bool = typer.Option(False, "--keep-table", help="Do not drop the table: append, after checking its schema."),
    validation_query_timeout: float = typer.Option(120.0, help="Seconds to wait for all rows to become visible."),
    write_ilp: Optional[str] = typer.Option(None, help="Also write the serialized ILP to this file (not timed)."),
    reporting_period: float = typer.Option(10.0, help="Seconds between progress lines (0: none)."),
    results: Optional[str] = typer.Option(None, help="Results JSON path. Default: results/<UTC time>-<mode>.json."),
    metrics_port: Optional[int] = typer.Option(None, help="Serve Prometheus metrics on this port during the run."),
    metrics_linger: float = typer.Option(0.0, help="Seconds to keep serving metrics after the run, for a final scrape."),
) -> None:
    """Serialize (and with --send, send) TSBS DataFrames, validate the count, record the run."""
    from harness.bench import BenchOptions, run_bench

    run_bench(BenchOptions(
        scale=scale, seed=seed, row_count=row_count, timestamp_start=timestamp_start,
        timestamp_end=timestamp_end, log_interval=log_interval, fields=fields, symbol_dtype=symbol_dtype,
        workers=workers, worker_chunk_row_count=worker_chunk_row_count, send=send, stream=stream, op=op,
        target=target, transport=transport, protocol_version=protocol_version, conf=conf, host=host,
        ilp_port=ilp_port, http_port=http_port, table=table, keep_table=keep_table,
        validation_query_timeout=validation_query_timeout, write_ilp=write_ilp,
        reporting_period=reporting_period, results=results, metrics_port=metrics_port,
        metrics_linger=metrics_linger,
    ))


@app.command()
def replay(
    path: str = typer.Argument(..., help="ILP file (ours or tsbs_generate_data's; .gz is unzipped)."),
    target: str = typer.Option("questdb", help="questdb (DDL and validation) or sink."),
    host: str = typer.Option("localhost", help="Server host."),
    ilp_port: int = typer.Option(9009, help="ILP/TCP port."),
    http_port: int = typer.Option(9000, help="HTTP port (DDL and validation)."),
    table: str = typer.Option(cpu_only.TABLE_NAME, help="Table the file's lines go to (created before sending)."),
    keep_table: bool = typer.Option(False, "--keep-table", help="Do not drop the table: append, after checking its schema."),
    fields: str = typer.Option("long", help="Column type to create: long for TSBS's files, double for --fields double output."),
    write_size: int = typer.Option(4 << 20, help="Bytes per socket write."),
    validation_query_timeout: float = typer.Option(120.0, help="Seconds to wait for all rows to become visible."),
    results: Optional[str] = typer.Option(None, help="Results JSON path. Default: results/<UTC time>-replay.json."),
) -> None:
    """Send an ILP file raw over TCP in large writes (the loopback limit), then validate and record."""
    from harness.bench import ReplayOptions, run_replay

    run_replay(ReplayOptions(
        path=path, target=target, host=host, ilp_port=ilp_port, http_port=http_port, table=table,
        keep_table=keep_table, fields=fields, write_size=write_size,
        validation_query_timeout=validation_query_timeout, results=results,
    ))


@app.command()
def compare(paths: list[str] = typer.Argument(..., help="Results JSON files; ratios are against the first.")) -> None:
    """Print a comparison table of several results files."""
    from harness.results import comparison_table, load_results

    print(comparison_table(load_results(paths)))


@app.command()
def version() -> None:
    """Print the harness version."""
    from harness import __version__

    print(__version__)
