"""Command-line shell over the library API: declares the commands, maps errors to exit codes.

Every command's options are declared once, in its options dataclass (``harness.options.declare``); a command's
module is imported only when that command runs (``lazy_group``), so `generate` starts without what `bench`
or `queries run` import (matplotlib, asyncpg, ...). Every user-caused error ends in one line on stderr and
exit code 2 (bad input); a run that fails (server down, killed mid-send, validation) ends in one line and
exit code 1; an interrupted one in exit code 130. No traceback reaches the user.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

import typer

from harness.errors import HarnessError, RunError, ThresholdsFailed, UsageError, request_interrupt
from harness.options.declare import LazyCommand, lazy_group

if TYPE_CHECKING:
    from harness.commands.native import NativeOptions

# typer vendors click and re-exports only BadParameter; click's base of every command-line error is the
# class in its ancestry named ClickException.
_COMMAND_LINE_ERROR = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "ClickException")


def _native_status(options: NativeOptions) -> None:
    from harness.commands.native import status

    if not status(options):
        raise typer.Exit(3)


# Commands whose module is imported only when they run (or their help is printed): see lazy_group. Each
# group lists these first, in this order, then its commands declared below with @app.command().
_COMMANDS = [
    LazyCommand("generate", "harness.commands.generate:GenerateOptions", "harness.commands.generate:run_generate",
                help="Write TSBS data as ILP text (protocol 1), byte for byte as tsbs_generate_data prints it."),
    LazyCommand("bench", "harness.run.bench_options:BenchOptions", "harness.commands.bench:run_bench",
                help="Serialize (and with --send, send) TSBS DataFrames or your data (--data), validate the count, "
                     "record the run."),
    LazyCommand("inspect", "harness.commands.inspect:InspectOptions", "harness.commands.inspect:run_inspect",
                help="Audit the dtypes of your data (--data): how the client takes each column, the QuestDB type it "
                     "becomes, whether workers run in parallel on it, and the conversion that helps."),
    LazyCommand("tune", "harness.commands.tune:TuneOptions", "harness.commands.tune:run_tune",
                help="Sweep workers, chunk rows, protocol, transport and dtype conversions for your data (or a TSBS "
                     "data set), alternated against your setting: ranked, with a measured recommendation and its "
                     "code."),
    LazyCommand("paths", "harness.commands.paths:PathsOptions", "harness.commands.paths:run_paths",
                help="Send the same rows (your data, --data, or a TSBS data set) into QuestDB by every path a Python "
                     "user takes (ILP over HTTP and TCP, asyncpg and psycopg INSERTs, /imp, COPY, read_parquet), "
                     "alternated: rows/s "
                     "until visible against ILP/HTTP with paired intervals, CPU, every value read back."),
    LazyCommand("matrix", "harness.commands.matrix:MatrixOptions", "harness.commands.matrix:run_matrix",
                help="Run the same bench against several QuestDB releases and server.conf overrides (cells), each "
                     "natively on its own root and ports, alternated over rounds: paired intervals of rows/s, time "
                     "to visible and the server's CPU and memory per cell."),
    LazyCommand("replay", "harness.commands.replay:ReplayOptions", "harness.commands.replay:run_replay",
                help="Send an ILP file raw over TCP in large writes (the loopback limit), then validate and "
                     "record."),
    LazyCommand("read", "harness.commands.read:ReadOptions", "harness.commands.read:run_read",
                help="Read a table (whole, --from/--to, or --sql) into pandas DataFrames over one protocol, measure "
                     "it, record the run; --check compares every value with the data set."),
]
_NATIVE_COMMANDS = [
    LazyCommand("up", "harness.commands.native:NativeServerOptions", "harness.commands.native:up",
                help="Start QuestDB (the pinned release's jar, or --questdb-jar; conf/server.conf) and the socat "
                     "sink; wait until healthy."),
    LazyCommand("down", "harness.commands.native:NativeOptions", "harness.commands.native:down",
                help="Stop the native QuestDB (SIGTERM, then SIGKILL after 30 s) and the sink."),
    LazyCommand("status", "harness.commands.native:NativeOptions", _native_status,
                help="Show whether the native QuestDB and sink run (exit 3 if QuestDB does not)."),
    LazyCommand("fetch", "harness.commands.native:NativeServerOptions", "harness.commands.native:fetch",
                help="Only fetch the QuestDB jar (or find the one --questdb-jar names) and the Java that runs it."),
]
_QUERIES_COMMANDS = [
    LazyCommand("generate", "harness.commands.queries_generate:QueriesGenerateOptions",
                "harness.commands.queries_generate:run_queries_generate",
                help="Write TSBS's queries as JSON lines, as tsbs_generate_queries --format=questdb does."),
    LazyCommand("run", "harness.commands.queries_run:QueriesRunOptions", "harness.commands.queries_run:run_queries",
                help="Run TSBS's queries (a file, or --generate) over PGWire, HTTP or QWP, print TSBS's summary, record "
                     "the run; --check compares every answer with the NumPy reference."),
]

app = typer.Typer(
    cls=lazy_group(*_COMMANDS),
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="TSBS-exact pandas -> QuestDB ingestion benchmark.",
)
native_app = typer.Typer(cls=lazy_group(*_NATIVE_COMMANDS), no_args_is_help=True,
                         help="QuestDB (a release's jar, or a server jar of your choice) and the socat sink, run "
                              "natively.")
app.add_typer(native_app, name="native")
queries_app = typer.Typer(cls=lazy_group(*_QUERIES_COMMANDS), no_args_is_help=True,
                          help="TSBS's queries: generate them, run them, check every answer.")
app.add_typer(queries_app, name="queries")


@app.callback()
def _group() -> None:
    """TSBS-exact pandas -> QuestDB ingestion benchmark."""


_received_signal: int | None = None


def _interrupt(signum: int, frame) -> None:
    """SIGINT or SIGTERM: end the run as Ctrl-C does (workers told, senders and metrics closed, the record
    written as interrupted); a second signal while that happens exits at once."""
    global _received_signal
    if _received_signal is not None:
        os._exit(128 + _received_signal)
    _received_signal = signum
    request_interrupt()  # for the loops that ask, should this exception be lost on its way
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    """Entry point of `python -m harness` and the `harness` console script."""
    # A shell starts background jobs with SIGINT ignored; such a run keeps ignoring it, as asked.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        code = app(args=argv, standalone_mode=False, prog_name="harness")
    except _COMMAND_LINE_ERROR as exc:
        _die(exc.format_message(), 2)
    except UsageError as exc:
        _die(str(exc), 2)
    except ThresholdsFailed as exc:  # the run itself ended well: a line per threshold it missed
        for line in exc.lines[:-1]:
            print(f"error: {line}", file=sys.stderr)
        _die(exc.lines[-1], 1)
    except (RunError, HarnessError) as exc:
        _die(str(exc), 1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _die("interrupted" if _received_signal != signal.SIGTERM else "terminated", 128 + (_received_signal or 2))
    except BrokenPipeError:
        sys.exit(1)
    except OSError as exc:  # the system refused something no check foresaw: still one line, never a traceback
        where = f" ({exc.filename})" if exc.filename else ""
        _die(f"{exc.strerror or exc}{where}", 1)
    # click turns an interrupt it caught itself into an exit code instead of raising it.
    if _received_signal is not None:
        _die("interrupted" if _received_signal != signal.SIGTERM else "terminated", 128 + _received_signal)
    if isinstance(code, int) and code:
        sys.exit(code)


def entry_point() -> None:
    """The process's own entry (`python -m harness`, the `harness` script): one BLAS thread, ``main``, then an
    exit that ends the native threads instead of destroying them (``_end_process``)."""
    # numpy's OpenBLAS starts a thread per core when numpy is imported, and each spins about 0.1 s before it
    # sleeps: on a small machine a core taken from the server as a run begins (a 500-query run of lastpoint
    # ran at two thirds of the rate). Nothing the harness does multiplies matrices. A value the user set stands.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = _exit_status(exc.code)
    _end_process(code)


def _exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives: None is 0, a number itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _end_process(code: int) -> None:
    """Exit with ``code`` as the interpreter would, less its last step. Threads that are not daemons are joined
    and the exit handlers run (temporary files, logging), as at any exit; then the process ends without the
    native libraries' static destructors. A native thread still inside pyarrow's or a client's code as a
    refusal ends the run made one of them call std::terminate under load (``terminate called without an active
    exception``, exit 134) after the error line was printed. Skipping the final collections also saves the
    ~20 ms they spent over every object still alive."""
    # threading's own exit step: it also tells idle thread pools to end, so that joining them cannot hang.
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away, a stream closed: nothing left to say there
            pass
    os._exit(code)


def _die(message: str, code: int) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


@app.command()
def compare(paths: list[str] = typer.Argument(..., help="Results JSON files (run records or benchmark records); "
                                                      "ratios are against the first.")) -> None:
    """Print a comparison table of several results files."""
    from harness.report.tables import comparison_tables

    print(comparison_tables(paths))


@app.command()
def merge(paths: list[str] = typer.Argument(None, help="The records of one scale-out run's clients (bench --barrier), "
                                                     "one per interleaved group, from any hosts."),
          results: str | None = typer.Option(None, "--results", help="Where the merged record goes. Default: "
                                                                     "results/<UTC time>-<mode>-<N>clients.json."),
          report: bool = typer.Option(False, "--report", help="Also write its HTML report beside it."),
          from_server: str | None = typer.Option(None, "--from-server", metavar="RUN",
                                                 help="Instead of files: the records run RUN's clients delivered to "
                                                      "the QuestDB they met at (--host, --http-port; its login from "
                                                      "QDB_CLIENT_CONF), written beside the merged record."),
          clients: int = typer.Option(0, "--clients", min=0, help="With --from-server: the run's N clients."),
          host: str = typer.Option("localhost", "--host", help="With --from-server: QuestDB's host."),
          http_port: int = typer.Option(9000, "--http-port", min=1, max=65535,
                                        help="With --from-server: QuestDB's HTTP port."),
          lost: list[str] = typer.Option(None, "--lost", metavar="CLIENT:REASON",
                                         help="With --from-server: client CLIENT was lost (its host is down): the "
                                              "others are told it failed, and the merged record names it."),
          wait: float = typer.Option(60.0, "--wait", min=0,
                                     help="With --from-server: seconds to wait for the records not yet delivered.")
          ) -> None:
    """Merge a scale-out run's client records into the whole run's record and print its result."""
    if from_server is None:
        if not paths or clients or lost:
            raise UsageError("merge: give the clients' records, or --from-server RUN --clients N")
        from harness.scaleout.merge import run_merge

        merged = run_merge(paths, results)
    else:
        if paths or not clients:
            raise UsageError("merge --from-server RUN takes --clients N and no files")
        from harness.scaleout.delivery import run_gather

        merged = run_gather(from_server, clients, host, http_port, lost or [], wait, results, "results", sys.stdout)
    if report:
        from harness.report.html import write_report

        print(f"Report: {write_report([merged], merged.path.with_suffix('.html'))}")


@app.command()
def report(paths: list[str] = typer.Argument(..., help="Results JSON files; the first is the baseline."),
           output: str | None = typer.Option(None, "--output", "-o",
                                             help="HTML file. Default: the first results file's name with .html.")
           ) -> None:
    """Write one self-contained HTML report (charts of the time series, phases, comparison) of results files."""
    from pathlib import Path

    from harness.records.store import load_records
    from harness.report.html import write_report

    records, benchmarks = load_records(paths)
    print(f"Report: {write_report(records, output or Path(paths[0]).with_suffix('.html'), benchmarks)}")


@app.command()
def version() -> None:
    """Print the harness version."""
    from harness.versions import HARNESS_VERSION

    print(HARNESS_VERSION)
