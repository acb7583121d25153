"""The option groups commands compose: each flag declared once, with one default and one help text.

A command's options class inherits the groups it takes (``class BenchOptions(DataSetOptions, ServerOptions,
...)``); ``harness.options.declare.add_command`` turns the result into its typer command. Groups hold settings only;
what a run does with them is the session's (``harness.run.session``) and the commands' own. The open loop's flags
are its own package's (``harness.open_loop.options``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass

from harness.errors import UsageError
from harness.frames.kinds import FrameKind
from harness.ingest.choices import ProtocolVersion, Target, Transport
from harness.options.declare import option
from harness.options.partitioning import PartitionOptions
from harness.own_data.choices import EpochUnit, OnBadTimestamp
from harness.profiling.run_profile import DEFAULT_RATE_HZ, Profiling
from harness.questdb.credentials import CLIENT_CONF_VARIABLE, HttpLogin, PgLogin, http_login, pg_login
from harness.questdb.http import QuestDBSql
from harness.questdb.process import LOCAL_HOSTS, listening_process
from harness.read.connection import Endpoint
from harness.questdb.schema import TablePolicy, TableWal
from harness.questdb.tls import HttpTls, PgTls, http_tls, pg_tls
from harness.records.store import Recording
from harness.telemetry.timeseries import Sampling
from harness.tsbs import params, use_cases
from harness.tsbs.choices import FieldType, SymbolDtype

USE_CASE_HELP = "TSBS use case: " + ", ".join(use_cases.NAMES) + "."


@dataclass
class EndpointOptions:
    """The server's address: what every command that talks to QuestDB takes."""

    host: str = option("localhost", "Server host.")
    http_port: int = option(9000, "HTTP port (ILP/HTTP, QWP, /exec: DDL, validation and HTTP queries).", min=1,
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

    def endpoint(self) -> Endpoint:
        """The server as its clients reach it: HTTP (and PGWire, where the command takes its port), their logins and
        TLS."""
        pg = {} if not isinstance(self, PgwireOptions) else {
            "pg_port": self.pg_port, "pg": self.pg_login(), "pg_tls": self.pg_tls()}
        return Endpoint(self.host, self.http_port, **{"pg_port": 8812, **pg}, http=self.http_login(),
                        http_tls=self.http_tls())


@dataclass
class RecordOptions:
    """Where a run's record goes."""

    results: str | None = option(None, "Results JSON path. Default: results/<UTC time>-<mode>.json.")
    results_dir: str = option("results", "Folder of default results paths.", cli=False)
    report: bool = option(False, "Also write the HTML run report beside the results file (as `harness report` "
                                 "does).", flags=("--report",))

    def recording(self) -> Recording:
        return Recording(self.results, self.results_dir, self.report)


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

    def profiling(self) -> Profiling | None:
        """The run's profile as asked (None: not profiled), of the server at the command's --host and --http-port."""
        if not self.profile:
            return None
        return Profiling(self.profile_rate, self.profile_wall, self.profile_native, getattr(self, "host", "localhost"),
                         getattr(self, "http_port", 9000), getattr(self, "target", Target.questdb) == Target.sink)


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

    def sampling(self) -> Sampling:
        """The time series as asked: QuestDB's /metrics beside the client's figures (not the sink's: nothing to
        learn), behind the login and TLS of the harness's own HTTP requests (a login never crosses in plain where
        the user asked for TLS); the server's CPU and memory where it is a process of this machine (not behind TLS:
        what listens there is the proxy, QuestDB speaking none)."""
        if self.sample_interval <= 0 or getattr(self, "target", Target.questdb) == Target.sink:
            return Sampling(self.sample_interval)
        tls, login = self.http_tls(), self.http_login()
        local = tls.context is None and self.host in LOCAL_HOSTS
        return Sampling(self.sample_interval, f"{tls.scheme}://{self.host}:{self.server_metrics_port}/metrics",
                        {"Authorization": login.header()} if login is not None else None, tls.context,
                        functools.partial(listening_process, self.http_port) if local else None)


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

    def table_policy(self, dedup: bool = False) -> TablePolicy:
        """What the run does with its tables (``dedup``: deduplicating them, exactly-once)."""
        return TablePolicy(self.keep_table, self.replace_table, self.table_wal, dedup, self.validation_query_timeout)

    def server_sql(self) -> QuestDBSql | None:
        """The SQL of the server the run sends to: None into the sink, which has none."""
        return None if self.target == Target.sink else self.questdb_sql()

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
class WayInOptions:
    """Which way into QuestDB the client takes (ILP over TCP or HTTP under a protocol version, or QWP) and the kind of
    frame handed to it: what the dtype audit judges a column by, and the table is typed by."""

    transport: Transport = option(Transport.tcp, "tcp or http: ILP through the client's Sender; qwp: QWP, columnar "
                                                 "over WebSocket on the HTTP port, through questdb.connect() "
                                                 "(QuestDB 10+).")
    protocol_version: ProtocolVersion = option(ProtocolVersion.auto, "ILP protocol version: 1 (text), 2 (binary "
                                                                     "doubles), 3, or auto.")
    frame: FrameKind = option(FrameKind.pandas, "The kind of frame handed to the client: pandas (NumPy-backed), "
                                                "pandas-arrow (Arrow-backed columns), arrow (a pyarrow Table) or "
                                                "polars. TSBS frames are converted before the timed phases, a file "
                                                "is read straight into it; ILP takes pandas only, so it gets an "
                                                "Arrow or Polars frame converted, as its user must.")

    def send_path(self):
        """The way in these flags choose, as the dtype audit takes it (``harness.own_data.audit.SendPath``): QWP, or
        ILP under --protocol-version (auto: the audit's default, 2)."""
        from harness.own_data.audit import DEFAULT_PROTOCOL_VERSION, SendPath  # pyarrow: only where data is audited

        version = DEFAULT_PROTOCOL_VERSION if self.protocol_version == ProtocolVersion.auto else \
            int(self.protocol_version)
        return SendPath(version, self.transport == Transport.qwp, self.frame)


@dataclass
class SendOptions(WayInOptions):
    """How the client sends: worker threads, rows per chunk, the way in (transport and protocol, or a whole conf
    string), QWP's batches."""

    workers: int | None = option(None, "Workers: threads, each with its own buffer and connection. Default: one, "
                                       "on a single thread as the original's single-threaded run.", min=1)
    worker_chunk_row_count: int = option(DEFAULT_CHUNK_ROWS, "Rows per chunk (dealt round-robin to workers; one "
                                                             "flush each).", min=1)
    conf: str | None = option(None, "A full client configuration string (auth, TLS, auto-flush...; ws:: or wss:: "
                                    "for QWP); overrides --transport/--protocol-version/--ilp-port for sending. "
                                    "Secrets are recorded as ***.")
    max_rows_per_batch: int | None = option(None, "QWP: rows per batch of a dataframe() call (its pipelining "
                                                  "unit). Default: the client's own.", min=1)
    sender_pool_max: int | None = option(None, "QWP: the most connections the handle's pool opens for the workers' "
                                               "calls at once. Default: the client's own.", min=1, max=64)

    def send_path(self):
        """The way in a run of these flags takes: --conf's scheme wins over --transport, and ILP's protocol version
        is the one a run sends with (``SenderSettings.offline_protocol_version``)."""
        from harness.ingest.wire.settings import SenderSettings
        from harness.own_data.audit import SendPath  # pyarrow: only where data is audited

        settings = SenderSettings(self.transport, self.protocol_version, conf=self.client_conf())
        return SendPath(settings.offline_protocol_version(), settings.used_transport == Transport.qwp, self.frame)

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


@dataclass
class FileReadingOptions(PartitionOptions):
    """How the user's file is read (``harness.own_data.reading.Reading``), and the table it fills partitioned: by a
    run (--data) and by the check that compares a table with it (--check-against), alike."""

    at: str | None = option(None, "The designated timestamp column. Default: the data's one timestamp column (a "
                                  "date beside a time of day joined; columns named year, month, day [hour, minute, "
                                  "second] joined). Text is parsed (ISO 8601, or the format inferred from its first "
                                  "values, or --at-format); numbers are epoch time in --at-unit. DATE+TIME joins a "
                                  "date and a time of day, YEAR+MONTH+DAY[+HOUR...] a timestamp's parts (a column "
                                  "of that exact name wins).")
    at_format: str | None = option(None, "The designated timestamp's text format (strftime, e.g. '%d/%m/%Y %H:%M'), "
                                         "instead of ISO 8601 or the format inferred from its first values; with "
                                         "--at DATE+TIME, the date's.")
    at_dates_only: bool = option(False, "The designated timestamp is meant as dates alone, even beside a column of "
                                        "times of day (which --at DATE alone is refused without, and which is "
                                        "otherwise joined with it).", flags=("--at-dates-only",))
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
    na_values: str | None = option(None, "Text that marks a missing number in a CSV's or JSON lines file, TOK,TOK..., "
                                         "besides what is found: a text column of numbers but for at most 3 "
                                         "placeholders (- ? NA null ...) is read as numbers, the placeholders "
                                         "missing (docs/own-data.md).")
    keep_text: str | None = option(None, "Columns of a CSV or JSON lines file read as text, COL,COL..., whatever "
                                         "their values: numbers with placeholders too.")
    skip_rows: int | None = option(None, "Lines above a CSV's header to skip (a title, a station's name, units), in "
                                         "every file of a folder. Default: as DuckDB's sniffer finds them in the "
                                         "first file; 0: none.", min=0)

    def symbol_choice(self) -> str | tuple[str, ...] | None:
        """--symbols as the data source takes it: None, "auto" or the columns named."""
        if self.symbols is None or self.symbols.strip() == "auto":
            return None if self.symbols is None else "auto"
        return tuple(name.strip() for name in self.symbols.split(",") if name.strip())

    def reading(self):
        """These flags as the reader takes them."""
        from harness.own_data.reading import Reading

        from harness.own_data.placeholders import parse_tokens

        parse_dates = tuple(name.strip() for name in (self.parse_dates or "").split(",") if name.strip())
        symbols = self.symbol_choice()
        return Reading(self.at, self.at_format, self.at_unit and str(self.at_unit), self.tz, parse_dates,
                       str(self.on_bad_timestamp), symbols if isinstance(symbols, tuple) else (),
                       self.csv_delimiter, self.csv_no_header, self.encoding, self.rename,
                       at_dates_only=self.at_dates_only, na_values=parse_tokens(self.na_values),
                       keep_text=parse_tokens(self.keep_text), skip_rows=self.skip_rows)

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
