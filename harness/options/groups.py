"""The option groups commands compose: each flag declared once, with one default and one help text.

A command's options class inherits the groups it takes (``class BenchOptions(DataSetOptions, ServerOptions,
...)``); ``harness.options.declare.add_command`` turns the result into its typer command. Groups hold settings only;
what a run does with them is the session's (``harness.run.session``) and the commands' own.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

from harness.errors import ParameterError, UsageError

from harness.ingest.choices import AHEAD_MIB, AHEAD_ROWS, ChunksAhead, ProtocolVersion, Target, Transport
from harness.options.declare import option
from harness.own_data.choices import EpochUnit, OnBadTimestamp
from harness.profiling.run_profile import DEFAULT_RATE_HZ
from harness.questdb.conf import parse_conf
from harness.questdb.credentials import CLIENT_CONF_VARIABLE, HttpLogin, PgLogin, http_login, pg_login
from harness.questdb.http import QuestDBSql
from harness.questdb.schema import TableWal
from harness.questdb.tls import HttpTls, PgTls, http_tls, pg_tls
from harness.records.thresholds import Threshold
from harness.tsbs import params, use_cases
from harness.tsbs.choices import FieldType, SymbolDtype

USE_CASE_HELP = "TSBS use case: " + ", ".join(use_cases.NAMES) + "."


@dataclass
class EndpointOptions:
    """The server's address: what every command that talks to QuestDB takes."""

    host: str = option("localhost", "Server host.")
    http_port: int = option(9000, "HTTP port (ILP/HTTP, /exec: DDL, validation and HTTP queries).", min=1,
                            max=65535)

    def http_login(self) -> HttpLogin | None:
        """The login of the harness's own HTTP requests: HARNESS_HTTP_CONF's, else --conf's (where the command
        takes one) or QDB_CLIENT_CONF's (``harness.questdb.credentials``)."""
        return http_login(getattr(self, "conf", None))

    def http_tls(self) -> HttpTls:
        """The TLS of the harness's own HTTP requests: that configuration string's scheme (https:: means TLS) and
        trust (``harness.questdb.tls``)."""
        return http_tls(getattr(self, "conf", None))

    def questdb_sql(self) -> QuestDBSql:
        """The server's HTTP API, logged in, over TLS where the configuration string says."""
        return QuestDBSql(self.host, self.http_port, login=self.http_login(), tls=self.http_tls())


@dataclass
class RecordOptions:
    """Where a run's record goes."""

    results: str | None = option(None, "Results JSON path. Default: results/<UTC time>-<mode>.json.")
    results_dir: str = option("results", "Folder of default results paths.", cli=False)
    report: bool = option(False, "Also write the HTML run report beside the results file (as `harness report` "
                                 "does).", flags=("--report",))


@dataclass
class ProfileOptions:
    """Both sides of the run sampled (``harness.profiling``)."""

    profile: bool = option(False, "Sample the client (py-spy: Python, native and Rust frames, the GIL) and QuestDB on "
                                  "this machine (async-profiler: its JVM threads) during the run: flame graphs of "
                                  "both in the report, their samples in named buckets in the record, and a verdict "
                                  "on which side is the bottleneck (docs/profiling.md).", flags=("--profile",))
    profile_wall: bool = option(False, "With --profile, sample QuestDB's threads by wall clock (idle ones too), not "
                                       "by CPU.", flags=("--profile-wall",))
    profile_native: bool = option(False, "With --profile, sample the client's native frames too (the questdb "
                                         "client's Rust, pandas', NumPy's and Arrow's C, waits for the GIL): py-spy "
                                         "then pauses the client at each sample, which slows it (docs/profiling.md) "
                                         "and breaks its ILP/HTTP flush (refused there).",
                                  flags=("--profile-native",))
    profile_rate: int = option(DEFAULT_RATE_HZ, "Samples a second, each side, with --profile.", min=1, max=1000)

    def check_values(self) -> None:
        super().check_values()
        for name, given in (("--profile-wall", self.profile_wall), ("--profile-native", self.profile_native)):
            if given and not self.profile:
                raise UsageError(f"{name}: only with --profile")


@dataclass
class DryRunOptions:
    """A command line checked without running it."""

    dry_run: bool = option(False, "Only check the options (and this machine's limits), then exit: no server is "
                                  "asked, nothing is sent or written (the Makefile's native targets check their "
                                  "variables so before they start QuestDB).", flags=("--dry-run",))


@dataclass
class ProgressOptions:
    reporting_period: float = option(10.0, "Seconds between progress lines (0: none).", min=0)


@dataclass
class MetricsOptions:
    """The run's own Prometheus endpoint."""

    metrics_port: int | None = option(None, "Serve Prometheus metrics on this port during the run.", min=1,
                                      max=65535)
    metrics_linger: float = option(0.0, "Seconds to keep serving metrics after the run, for a final scrape.",
                                   min=0)
    metrics_host: str | None = option(None, "Address the metrics endpoint binds (default: $HARNESS_METRICS_HOST, "
                                            "else 127.0.0.1). 0.0.0.0 shows the run to the whole network.")


@dataclass
class PgwireOptions:
    """The server's PostgreSQL wire protocol port: what a command that talks PGWire takes."""

    pg_port: int = option(8812, "PGWire port.", min=1, max=65535)

    def pg_login(self) -> PgLogin:
        """The PGWire login (libpq's environment and password file), at the command's --host."""
        return pg_login(getattr(self, "host", "localhost"), self.pg_port)

    def pg_tls(self) -> PgTls:
        """The PGWire TLS settings (libpq's PGSSLMODE, PGSSLROOTCERT, PGSSLNEGOTIATION; none by default)."""
        return pg_tls()


@dataclass
class SamplingOptions:
    """The run's time series: how often it samples, and the server's metrics it samples."""

    sample_interval: float = option(1.0, "Seconds between the samples of the record's time series (rows, bytes, "
                                         "client CPU, server WAL); 0: none.", min=0)
    server_metrics_port: int = option(9003, "QuestDB's /metrics port (its min HTTP server), sampled for the WAL's "
                                            "written and applied rows and apply lag.", min=1, max=65535)


@dataclass
class ServerOptions(SamplingOptions, EndpointOptions):
    """Where an ingest run sends and the table it fills."""

    target: Target = option(Target.questdb, "questdb (DDL and validation) or sink (a no-op socat sink: no DDL, "
                                            "no validation).")
    ilp_port: int = option(9009, "ILP/TCP port.", min=1, max=65535)
    table: str | None = option(None, "Table name of a one-table use case (cpu-only: default cpu; --data: the file's "
                                     "name without its suffix).")
    keep_table: bool = option(False, "Do not drop the table: append, after checking its schema.",
                              flags=("--keep-table",))
    replace_table: bool = option(False, "Drop an existing table even when its schema is not the benchmark's (by "
                                        "default the run refuses: such a table is not the harness's to drop).",
                                 flags=("--replace-table",))
    table_wal: TableWal = option(TableWal.wal, "The tables the run makes: wal (WAL tables), bypass (BYPASS WAL) or "
                                               "server-default (the server's cairo.wal.enabled.default decides).")
    validation_query_timeout: float = option(120.0, "Seconds to wait for all rows to become visible.", min=0,
                                             min_open=True)

    def refuse_table_flags(self, why: str) -> None:
        """A UsageError naming the first of --table, --keep-table, --replace-table given, for a command that writes
        only tables of its own (``why``: where it writes instead)."""
        given = [flag for flag, value in (("--table", self.table), ("--keep-table", self.keep_table or None),
                                          ("--replace-table", self.replace_table or None)) if value is not None]
        if given:
            raise UsageError(f"{given[0]}: {why}, never into a table of yours")


@dataclass
class DataSetRangeOptions:
    """Which TSBS data set: use case, seed, hosts and time range (tsbs_generate_data's and
    tsbs_generate_queries's flags)."""

    use_case: str = option(use_cases.DEFAULT, USE_CASE_HELP)
    seed: int | None = option(None, "PRNG seed, as TSBS's --seed. Default: random, printed and recorded.")
    scale: int = option(4000, "Number of hosts (TSBS --scale).", min=1)
    timestamp_start: str = option(params.DEFAULT_TIMESTAMP_START, "First epoch (RFC 3339).")
    timestamp_end: str | None = option(None, "End of the time range, exclusive (RFC 3339). Default: "
                                             f"{params.DEFAULT_TIMESTAMP_END}; bench: as far as --row-count needs.")

    def range_end(self) -> str:
        """The end of the range, its default filled in."""
        return self.timestamp_end or params.DEFAULT_TIMESTAMP_END


@dataclass
class DataSetOptions(DataSetRangeOptions):
    """A data set's rows as well as its range: the interval between epochs and how fields are typed."""

    log_interval: str = option(params.DEFAULT_LOG_INTERVAL, "Time between epochs (Go duration).")
    fields: FieldType = option(FieldType.double, "double: the walk states (DOUBLE columns); long: TSBS's integer "
                                                 "values (LONG columns), as tsbs_generate_data prints them.")
    time_ordered: bool = option(False, "Each table's rows in time order (iot: TSBS sends some late, and this "
                                       "sorts them in bounded memory; the same rows): to measure what the late "
                                       "ones cost.", flags=("--sort",))

    def spec(self, row_limit: int | None = None, rows_set_the_end: bool = False) -> params.DatasetSpec:
        """The data set these flags name, its first ``row_limit`` rows; with ``rows_set_the_end`` and no
        --timestamp-end the range ends where those rows do."""
        end = self.timestamp_end if self.timestamp_end or rows_set_the_end else params.DEFAULT_TIMESTAMP_END
        return use_cases.make_spec(use_case=self.use_case, seed=self.seed, scale=self.scale,
                                   timestamp_start=self.timestamp_start, timestamp_end=end,
                                   log_interval=self.log_interval, row_limit=row_limit,
                                   time_ordered=self.time_ordered, **self.group_flags())

    def group_flags(self) -> dict[str, int]:
        """Which interleaved generation group of the data set (the whole of it here)."""
        return {}


@dataclass
class GroupedDataSetOptions(DataSetOptions):
    """A data set, or one of TSBS's interleaved generation groups of it: what every command that generates
    one takes (``generate``, ``bench``). Client i of N runs group i: ``--interleaved-generation-group-id i
    --interleaved-generation-groups N``."""

    interleaved_generation_group_id: int = option(0, "Of the whole data set's lines (all tables, TSBS's order), "
                                                     "keep those whose index i has i % groups == this id, as TSBS; "
                                                     "row limits count the whole data set.")
    interleaved_generation_groups: int = option(1, "Number of interleaved generation groups (TSBS's): the data "
                                                   "set is generated whole and split round robin over its lines.")

    def group_flags(self) -> dict[str, int]:
        return {"interleaved_generation_group_id": self.interleaved_generation_group_id,
                "interleaved_generation_groups": self.interleaved_generation_groups}


@dataclass
class DataSetRowsOptions(DataSetOptions):
    """A data set named as ``bench`` names it: by its first ``--row-count`` rows unless --timestamp-end is given."""

    row_count: int = option(10_000_000, "Rows of the whole data set to generate, as TSBS's --max-data-points (an "
                                        "interleaved group gets its share; ignored when --timestamp-end is given).",
                            min=1)

    def dataset(self) -> params.DatasetSpec:
        return self.spec(None if self.timestamp_end else self.row_count, rows_set_the_end=True)


DEFAULT_CHUNK_ROWS = 10_000  # the original benchmark's --worker-chunk-row-count


@dataclass
class SendOptions:
    """How the client sends: worker threads, rows per chunk, transport and protocol, or a whole conf string."""

    workers: int | None = option(None, "Workers: threads, each with its own buffer and connection. Default: one, "
                                       "on a single thread as the original's single-threaded run.", min=1)
    worker_chunk_row_count: int = option(DEFAULT_CHUNK_ROWS, "Rows per chunk (dealt round-robin to workers; one "
                                                             "flush each).", min=1)
    transport: Transport = option(Transport.tcp, "ILP transport.")
    protocol_version: ProtocolVersion = option(ProtocolVersion.auto, "ILP protocol version: 1 (text), 2 (binary "
                                                                     "doubles), 3, or auto.")
    conf: str | None = option(None, "A full client configuration string (auth, TLS, auto-flush...); overrides "
                                    "--transport/--protocol-version/--ilp-port for sending. Secrets are recorded "
                                    "as ***.")

    @property
    def threads(self) -> int:
        """Worker threads the phases run: ``workers``, or the one of the single-threaded run."""
        return self.workers or 1

    def client_conf(self) -> str | None:
        """The client configuration string senders use: --conf, else the questdb client's own
        ``QDB_CLIENT_CONF`` (what ``Sender.from_env()`` reads: a server's), else None (the separate options make
        one). Into the sink, only --conf: the environment's string names a server, not the sink."""
        if self.conf is not None or getattr(self, "target", Target.questdb) == Target.sink:
            return self.conf
        return os.environ.get(CLIENT_CONF_VARIABLE) or None

    @property
    def sender_transport(self) -> str:
        """The transport senders use: the scheme of the client configuration string when there is one (it
        wins), else ``transport``."""
        conf = self.client_conf()
        return parse_conf(conf)[0] if conf is not None else str(self.transport)


# How long an open loop's chunks in flight at the schedule's end have to finish (k6's gracefulStop: 30 s).
DEFAULT_GRACE = "10s"


@dataclass
class OpenLoopOptions:
    """An open loop (``bench --rate``): rows sent at a fixed rate, every latency from a chunk's intended time."""

    rate: str | None = option(None, "Send at this many rows per second, in an open loop: each chunk at its own "
                                    "intended time, a late one sent late (none after the schedule's end), every "
                                    "latency from its intended time; into QuestDB, a probe measures each chunk's "
                                    "freshness (intended time to visible to a query). A:B:STEP ramps from A to B "
                                    "rows/s, --duration at each rate after a closed-loop step, and names the knee: "
                                    "the highest rate held with freshness p99 under --slo.")
    duration: str | None = option(None, "With --rate: how long the schedule runs, a Go duration (30s, 5m): then no "
                                        "chunk starts, and the rows left are never sent (unsent_rows). Default: "
                                        "until the data set ends (--row-count).")
    grace: str | None = option(None, "With --rate: how long the chunks in flight when the schedule ends have to "
                                     "finish, and the freshness probe to see what was sent, a Go duration. "
                                     f"Default: {DEFAULT_GRACE}.")
    search: bool = option(False, "With --rate A:B: find the knee by bisection between A and B, after a closed-loop "
                                 "step: each probe holds its rate for --duration, and the search stops when the "
                                 "lowest rate missed is within --search-resolution of the highest held.",
                          flags=("--search",))
    search_resolution: float = option(0.05, "With --search: how close (a share of the rate held) the lowest rate "
                                            "missed must come to the highest held.", min=0, min_open=True, max=1)
    repeat: int = option(1, "With --search: run the whole search this many times, each after a closed-loop step of "
                            "its own; the knee is their median, given with the lowest and highest.", min=1)
    chunks_ahead: ChunksAhead = option(ChunksAhead.process, "With --rate: who makes the chunks ahead of their time: a "
                                                            "process of their own (at most "
                                                            f"{AHEAD_ROWS:,} rows or {AHEAD_MIB} MiB ahead), whose "
                                                            "work never holds the scheduling threads, or a thread "
                                                            "of the scheduling process.")
    slo: str = option("1s", "With a ramp (--rate A:B:STEP) or --search: the freshness p99 a rate must stay under to "
                            "count as held, a Go duration.")
    probe_interval: str = option("50ms", "With --rate into QuestDB: time between the freshness probe's counts (one "
                                         "count() per table each), a Go duration.")
    queries: str | None = option(None, "With --rate: run this query file's queries (as `queries generate` writes "
                                       "them) beside the ingest, at --query-rate, each timed from its intended "
                                       "start.")
    query_rate: float | None = option(None, "With --queries: queries per second (the file's queries in turn, again "
                                            "from the first when they run out).", min=0, min_open=True)
    query_protocol: str = option("pgwire", "With --queries: pgwire or http.")
    query_connections: int = option(2, "With --queries: connections the queries share.", min=1)
    threshold: list[str] | None = option(None, "With --rate: a figure the run must meet, k6-style: "
                                               "'freshness_p99<1s', 'ack_p99<200ms', 'max_backlog<50000', "
                                               "'rate_sustained' (repeat the flag for several). The run exits 1, a "
                                               "line per failed threshold, unless all hold.")

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    @property
    def ramp(self) -> bool:
        """Whether --rate steps from one rate to another (A:B:STEP), or --search finds the knee between two (A:B):
        either measures the closed-loop rate first and names a knee."""
        return self.rate is not None and ":" in self.rate

    def rates(self) -> list[float]:
        """The rates to hold, rows per second: --rate's one, or each step of its ramp, or --search's two ends; a
        UsageError unless each is a positive, finite number, a ramp's steps land on its end and a search's
        range rises."""
        if self.search:
            parts = (self.rate or "").split(":")
            if len(parts) != 2:
                raise UsageError(f"--search bisects between two rates: give --rate LOW:HIGH (rows per second), got "
                                 f"--rate {self.rate!r}")
            low, high = (_rate(part) for part in parts)
            if high <= low:
                raise UsageError(f"--rate {self.rate!r}: a search's range rises, LOW:HIGH")
            return [low, high]
        if not self.ramp:
            return [_rate(self.rate)]
        parts = self.rate.split(":")
        if len(parts) != 3:
            raise UsageError(f"--rate {self.rate!r}: a ramp is FIRST:LAST:STEP rows per second, e.g. "
                             f"100000:400000:50000")
        first, last, step = (_rate(part) for part in parts)
        steps = (last - first) / step
        if last <= first or abs(steps - round(steps)) > 1e-9:
            raise UsageError(f"--rate {self.rate!r}: the steps of {step:g} from {first:g} must land on {last:g}, "
                             f"above it")
        return [first + index * step for index in range(round(steps) + 1)]

    def slo_seconds(self) -> float:
        return _duration_seconds(self.slo, "--slo")

    def duration_seconds(self) -> float | None:
        return None if self.duration is None else _duration_seconds(self.duration, "--duration")

    def probe_seconds(self) -> float:
        return _duration_seconds(self.probe_interval, "--probe-interval")

    def grace_seconds(self) -> float:
        return _duration_seconds(self.grace or DEFAULT_GRACE, "--grace")

    def thresholds(self) -> list[Threshold]:
        return [Threshold.parse(text) for text in self.threshold or ()]

    def check_open_loop(self) -> None:
        """--rate's values, and its companions only with it; each a UsageError naming the flag."""
        if not self.open_loop:
            given = [flag for flag, value in (("--duration", self.duration), ("--grace", self.grace),
                                              ("--search", self.search), ("--threshold", self.threshold),
                                              ("--queries", self.queries), ("--query-rate", self.query_rate)) if value]
            if given:
                raise UsageError(f"{given[0]} belongs to an open-loop run: add --rate ROWS_PER_SECOND")
            return
        self.rates()
        self.slo_seconds()
        self.probe_seconds()
        self.grace_seconds()
        self.thresholds()
        if (self.queries is None) != (self.query_rate is None):
            raise UsageError("--queries FILE and --query-rate Q go together: the queries beside the ingest, and how "
                             "many a second")
        if self.queries is not None and not os.path.isfile(self.queries):
            raise UsageError(f"--queries {self.queries}: no such file")
        if self.query_protocol not in ("pgwire", "http"):
            raise UsageError(f"--query-protocol must be pgwire or http, got {self.query_protocol!r}")
        if self.repeat > 1 and not self.search:
            raise UsageError("--repeat runs a --search again: add --search (and --rate LOW:HIGH)")
        if self.ramp and self.duration is None:
            raise UsageError(f"--rate {self.rate} holds each rate for --duration: give one (e.g. --duration 30s)")
        self.duration_seconds()


def _rate(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"--rate must be a positive number of rows per second, got {text!r}")
    return value


def _duration_seconds(text: str, flag: str) -> float:
    """A positive Go duration in seconds; a UsageError naming ``flag`` otherwise."""
    try:
        seconds = params.parse_go_duration_ns(text, flag) / 1e9
    except ParameterError:
        raise UsageError(f"{flag} must be a duration such as 30s, 5m or 250ms, got {text!r}") from None
    if seconds <= 0:
        raise UsageError(f"{flag} must be longer than zero, got {text!r}")
    return seconds


@dataclass
class FileReadingOptions:
    """How the user's file is read (``harness.own_data.files.Reading``): by a run (--data) and by the check that
    compares a table with it (--check-against), alike."""

    at: str | None = option(None, "The designated timestamp column. Default: the data's one timestamp column. Text "
                                  "is parsed (ISO 8601, or the format inferred from its first value, or "
                                  "--at-format); numbers are epoch time in --at-unit.")
    at_format: str | None = option(None, "The designated timestamp's text format (strftime, e.g. '%d/%m/%Y %H:%M'), "
                                         "instead of ISO 8601 or the format inferred from its first value.")
    at_unit: EpochUnit | None = option(None, "The designated timestamp's numbers are epoch time in this unit: s, "
                                             "ms, us or ns.")
    tz: str | None = option(None, "Naive text timestamps are local time in this IANA zone (e.g. Europe/Paris), "
                                  "not UTC: a time in a DST gap moves forward, one in an overlap is daylight time "
                                  "until the times go back.")
    parse_dates: str | None = option(None, "Other text columns to read as timestamps, COL,COL... (ISO 8601 or the "
                                           "format inferred from each one's first value).")
    on_bad_timestamp: OnBadTimestamp = option(OnBadTimestamp.fail, "A timestamp that does not parse: fail (the run "
                                                                   "ends in one line naming its line) or skip (its "
                                                                   "row is left out, counted and recorded).")
    csv_delimiter: str | None = option(None, "A CSV's delimiter. Default: sniffed from its first lines (, tab ; |).")
    csv_no_header: bool = option(False, "The CSV's first line is data, not a header (its columns are named "
                                        "column0, column1 ...). Default: sniffed.", flags=("--csv-no-header",))
    encoding: str | None = option(None, "A CSV's or JSON lines file's text encoding (e.g. latin-1, cp1252). "
                                        "Default: UTF-8.")
    symbols: str | None = option(None, "The columns sent as SYMBOL, COL,COL... (a CSV's or JSON lines file's read "
                                       "as text); auto: categorical columns and string columns with at most one "
                                       "distinct value per 100 rows of the first 10,000. Default: the client's own "
                                       "choice (categorical columns).")
    rename: str | None = option(None, "Column names of your choice, OLD=NEW,OLD=NEW...; a name QuestDB refuses and "
                                      "not renamed gets its refused characters replaced by _ (`harness inspect` "
                                      "lists them).")

    def symbol_choice(self) -> str | tuple[str, ...] | None:
        """--symbols as the data source takes it: None, "auto" or the columns named."""
        if self.symbols is None or self.symbols.strip() == "auto":
            return None if self.symbols is None else "auto"
        return tuple(name.strip() for name in self.symbols.split(",") if name.strip())

    def reading(self):
        """These flags as the reader takes them."""
        from harness.own_data.files import Reading

        parse_dates = tuple(name.strip() for name in (self.parse_dates or "").split(",") if name.strip())
        symbols = self.symbol_choice()
        return Reading(self.at, self.at_format, self.at_unit and str(self.at_unit), self.tz, parse_dates,
                       str(self.on_bad_timestamp), symbols if isinstance(symbols, tuple) else (),
                       self.csv_delimiter, self.csv_no_header, self.encoding, self.rename)

    def reading_flags(self) -> list[str]:
        """The reading flags given (not at their defaults), by their flag names."""
        defaults = FileReadingOptions()
        return ["--" + item.name.replace("_", "-") for item in dataclasses.fields(FileReadingOptions)
                if getattr(self, item.name) != getattr(defaults, item.name)]


@dataclass
class OwnDataOptions(FileReadingOptions):
    """The user's own data as what a run sends, instead of a TSBS data set."""

    data: str | None = option(None, "Send this file, or a folder or glob of files read as one dataset, instead of a "
                                    "TSBS data set: Parquet, Arrow IPC, CSV/TSV or JSON lines, CSV, JSON lines and "
                                    "Arrow streams also compressed (.gz, .bz2, .zst, .lz4), read in bounded pieces "
                                    "while sending, never whole (`harness inspect --data` shows how it is read).")
    convert_dtypes: bool = option(False, "With --data: send every column with the conversion the dtype audit "
                                         "proposes (`harness inspect --data`), applied to each piece as it is "
                                         "read (strings a file gives as Python objects: read as Arrow strings).",
                                  flags=("--convert-dtypes",))
    object_strings: bool = option(False, "With --data: read the file's string columns as Python str objects "
                                         "(object dtype), as pandas 2's read_parquet/read_csv give them; pandas 3 "
                                         "reads them as Arrow-backed str.", flags=("--object-strings",))

@dataclass
class FrameOptions:
    """How the data set's DataFrames hold their tags."""

    symbol_dtype: SymbolDtype = option(SymbolDtype.category, "Tag column dtype of the DataFrames (category is the "
                                                             "fast one).")
