"""What a ``bench`` run is asked to do: every option of it (``BenchOptions``, the original benchmark's
defaults), the rules that refuse a combination before anything runs, and the options of a run that
``--resume`` continues. The command (``harness.commands.bench``) runs them; the phases
(``harness.run.bench_phases``) and the scale-out launcher read them.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

import harness.sources as sources
from harness.errors import UsageError
from harness.ingest.choices import Op, Target
from harness.ingest.senders import SenderSettings
from harness.options.declare import CommandOptions, option
from harness.options.groups import (
    DataSetRowsOptions,
    DryRunOptions,
    FrameOptions,
    GroupedDataSetOptions,
    MetricsOptions,
    OpenLoopOptions,
    OwnDataOptions,
    PgwireOptions,
    ProfileOptions,
    ProgressOptions,
    RecordOptions,
    SendOptions,
    ServerOptions,
)
from harness.output_file import check_writable
from harness.questdb.http import checked_table_name
from harness.questdb.schema import TableWal
from harness.records.store import load_results
from harness.run.limits import check_workers
from harness.scaleout.meeting import check_run_name
from harness.tsbs import params, use_cases
from harness.tsbs.schema import TableSchema
from harness.tsbs.use_case import Chunk, UseCase

if TYPE_CHECKING:
    from harness.servers.sink import SinkAddress

# Exactly-once runs let the client itself retry a failed request this long (a blip), and re-send the chunk
# on a new connection after that, counting it, until --retry-timeout.
CLIENT_RETRY_TIMEOUT_MS = 2_000


@dataclass
class BenchOptions(DryRunOptions, MetricsOptions, ProgressOptions, OpenLoopOptions, SendOptions, OwnDataOptions,
                   FrameOptions, GroupedDataSetOptions, DataSetRowsOptions, RecordOptions, PgwireOptions,
                   ServerOptions, ProfileOptions, CommandOptions):
    """Every option of a benchmark run; the defaults are the original benchmark's."""

    send: bool = option(False, "After serializing, send to the target.", flags=("--send",))
    stream: bool = option(False, "Generate chunks while sending (bounded memory); skips the serialize-only phase "
                                 "when sending.", flags=("--stream",))
    op: Op = option(Op.dataframe, "dataframe (Sender.dataframe), iterrows or itertuples (Sender.row per row).")
    exactly_once: bool = option(False, "Every row exactly once, whatever the server does: HTTP only; the table "
                                       "deduplicates, each chunk is one transaction, and a chunk whose flush "
                                       "failed is sent again until --retry-timeout.", flags=("--exactly-once",))
    retry_timeout: float = option(60.0, "With --exactly-once: seconds a chunk may keep failing (server down) "
                                        "before the run fails.", min=0, min_open=True)
    flush_timeout: float = option(60.0, "Seconds one flush may take before the run fails (a server that stopped "
                                        "reading: ILP over TCP has no timeout of its own).", min=0, min_open=True)
    resume: str | None = option(None, "Continue the --exactly-once run this results file records (it died: client "
                                      "killed, machine rebooted) from the last chunk the server acknowledged; "
                                      "every other option comes from the file.")
    first_chunk: int = option(0, "Chunks of the data set already in the table (set by --resume).", cli=False)
    barrier: str | None = option(None, "Run as one client of a scale-out run of this name: client i sends "
                                       "interleaved group i (--interleaved-generation-group-id) of N "
                                       "(--interleaved-generation-groups); the clients meet at the server (table "
                                       "harness_clients): client 0 makes the tables, all start sending together, "
                                       "client 0 validates the whole data set. Without --seed, the seed is derived "
                                       "from the name. `harness merge` joins their records.")
    clients: int = option(1, "Clients: processes on this machine, client i sending interleaved group i of N on "
                             "its own share of the CPUs, started together (--barrier); their records merged into "
                             "one.", min=1)
    barrier_timeout: float = option(600.0, "With --barrier: seconds to wait for the other clients at each step.",
                                    min=0, min_open=True)
    barrier_folder: str | None = option(None, "Where the clients meet instead of the server: a folder they all "
                                              "write (--clients N --target sink: the run's folder).", cli=False)
    private_sink: str | None = option(None, "The no-op sink started for this run alone (socat, or python where "
                                            "socat is missing), nothing having listened at its --host:--ilp-port.",
                                      cli=False)
    write_ilp: str | None = option(None, "Also write the serialized ILP to this file (not timed).")
    verbose: bool = option(False, "Print every parameter before the run.", flags=("--verbose",))

    @functools.cached_property
    def use_case_entry(self) -> UseCase:
        """The run's source (``harness.sources``): --data's file, else the TSBS use case. The user's data is read
        (its head, the designated timestamp's nulls) and audited once, when first asked for."""
        if self.data is not None:
            return sources.get(sources.DATA, self.data, self.table, self.at, self.symbol_choice(),
                               self.convert_dtypes, object_strings=self.object_strings,
                               protocol_version=self.sender_settings().offline_protocol_version(),
                               reading=self.reading())
        return sources.get(self.use_case)

    def sending(self, source: UseCase) -> BenchOptions:
        """These options, sending ``source``: the user's data already opened (the notebook API's DataFrames; a
        tuning sweep's data, read and audited once for all its trials)."""
        self.__dict__["use_case_entry"] = source
        return self

    def sink_endpoint(self) -> tuple[str, int] | None:
        """Where this run sends into the no-op sink, if it starts a private one when nothing listens there
        (``harness.run.session.into_sink``): a run of the user's data (--data, ``harness.measure``) into the sink
        at --host:--ilp-port (a --conf names an address of its own), not pointed at a private sink already (a
        tuning sweep's trials, which send into the sweep's). A TSBS run into the sink finds its sink running
        (``native up``, ``make noop-sink``), or ends in one line naming the address."""
        if not (self.send and self.target == Target.sink) or self.private_sink is not None or \
                self.client_conf() is not None or not self.own_data:
            return None
        return self.host, self.ilp_port

    def at_sink(self, sink: SinkAddress) -> BenchOptions:
        """These options, sending into ``sink`` (its kind recorded as ``private_sink``), the source kept."""
        moved = dataclasses.replace(self, host=sink.host, ilp_port=sink.port, private_sink=sink.private)
        return moved.sending(self.use_case_entry)

    @property
    def own_data(self) -> bool:
        """Whether the run sends the user's data rather than a TSBS data set."""
        return self.data is not None or self.use_case_entry.name == sources.DATA

    @property
    def streams(self) -> bool:
        """Whether chunks are made while sending: --stream, the user's data, which is never held whole, or an
        open loop (--rate), whose run lasts as long as it is asked to."""
        return self.stream or self.own_data or self.open_loop

    def source_rows(self, spec: params.DatasetSpec) -> int:
        """Rows of the whole of what the run sends: the user's data, or the TSBS data set of ``spec``."""
        return self.use_case_entry.data.rows() if self.own_data else spec.row_count

    @property
    def mode(self) -> str:
        """What the run does, in a few words; it also names the default results file."""
        kind = ("sink" if self.target == Target.sink else "send") if self.send else "serialize"
        threads = f"{self.workers}w" if self.workers else "1t"
        if self.own_data:  # the table names the data; TSBS's field types and row API do not apply
            return f"data-{self.use_case_entry.table_name}-{kind}-{threads}"
        name = self.use_case_entry.name
        use_case = "" if name == use_cases.DEFAULT else f"{name}-"
        order = "-sorted" if self.time_ordered else ""
        groups = self.interleaved_generation_groups
        group = f"-group{self.interleaved_generation_group_id}of{groups}" if groups > 1 else ""
        return f"{use_case}{kind}-{self.op}-{self.fields}-{threads}{order}{group}"

    def resolved(self) -> BenchOptions:
        """With --resume, the options of the run it resumes (``resumed_options``)."""
        return self if self.resume is None else resumed_options(self.resume)

    def check_values(self) -> None:
        super().check_values()
        self._check_source()
        self._check_open_loop()
        use_case = self.use_case_entry
        if self.op != Op.dataframe and self.workers is not None:
            raise UsageError(f"--op {self.op} is the single-threaded row-by-row baseline: it takes no --workers")
        if self.target == Target.sink and self.sender_transport != "tcp":
            raise UsageError("--target sink takes ILP over TCP only (the sink never answers HTTP)")
        if self.table is not None and not use_case.renamable_table:
            raise UsageError(f"--table names a one-table use case's table; {use_case.name} writes its own tables "
                             f"({', '.join(use_case.tables())})")
        if self.op != Op.dataframe and not use_case.row_api:
            raise UsageError(f"--op {self.op} is cpu-only's row-by-row baseline; {use_case.name} sends with "
                             f"--op dataframe")
        chunk_rows = min(self.worker_chunk_row_count, self.source_rows(self.dataset()))
        use_cases.check_memory(use_case, self.scale, chunk_rows)
        # Each worker holds a chunk in flight and, sending, one connection.
        check_workers("--workers", self.threads, int(self.send), chunk_rows * use_case.bytes_per_chunk_row)
        if not self.streams:
            check_held_rows(self.source_rows(self.dataset()), use_case.bytes_per_held_row)
        if self.write_ilp is not None:
            check_writable(self.write_ilp, "--write-ilp")
        if self.exactly_once and self.table_wal == TableWal.bypass:
            raise UsageError("--exactly-once deduplicates, which QuestDB does on WAL tables only: it takes no "
                             "--table-wal bypass")
        if self.exactly_once and not use_case.unique_keys:
            raise UsageError(f"--exactly-once deduplicates rows by their series and timestamp; {use_case.name}'s "
                             f"rows are not unique by them (TSBS clears some rows' tags)")
        if self.profile and self.clients > 1:
            raise UsageError("--profile samples one client process: with --clients N, profile a client run of its "
                             "own (--barrier)")
        if self.clients > 1 and (self.interleaved_generation_groups != 1 or self.interleaved_generation_group_id):
            raise UsageError("--clients N gives client i interleaved group i of N itself: leave out "
                             "--interleaved-generation-group-id/-groups")
        if self.barrier is not None or self.clients > 1:
            if self.barrier is not None:
                check_run_name(self.barrier)
            if not self.send:
                raise UsageError("--clients, --barrier: the clients of a scale-out run send to a server: add --send")
            # The clients meet at the QuestDB they send to; the launcher of --clients N gives the sink's clients
            # a folder on this machine instead (the sink has no table), which a lone --barrier client lacks.
            if self.target != Target.questdb and self.clients == 1 and self.barrier_folder is None:
                raise UsageError("--barrier: the clients of a scale-out run meet at the QuestDB they send to, and the "
                                 "sink is none; --clients N --target sink runs N clients on this machine")
            if self.resume is not None:
                raise UsageError("--barrier and --resume: resume each client's run on its own, without --barrier")
        if self.exactly_once and (self.sender_transport != "http" or self.target != Target.questdb):
            raise UsageError("--exactly-once needs --transport http to QuestDB: ILP over TCP has no "
                             "acknowledgements, so a chunk's fate after a failure is unknowable")

    def _check_open_loop(self) -> None:
        """--rate's rules: its values, and the runs it can schedule."""
        self.check_open_loop()
        if not self.open_loop:
            return
        if not self.send:
            raise UsageError("--rate schedules the send: add --send")
        if self.clients > 1 or self.barrier is not None:
            raise UsageError("--rate runs as one client (--workers N send on its schedule); --clients/--barrier "
                             "split a closed-loop run")
        figures = {threshold.figure.partition("_")[0] for threshold in self.thresholds()}
        if "query" in figures and self.queries is None:
            raise UsageError("--threshold query_*: the queries are those of --queries FILE --query-rate Q")
        if "freshness" in figures and self.target != Target.questdb:
            raise UsageError("--threshold freshness_*: freshness is measured into QuestDB (the sink shows no rows)")
        if "ack" in figures and not self.sender_transport.startswith("http"):
            raise UsageError("--threshold ack_*: ILP over TCP has no acknowledgement; --transport http has")

    def _check_source(self) -> None:
        """--data's rules, before the data is read: no TSBS data-set flag beside it, its own flags only with it."""
        if not self.own_data:
            own = [flag for flag, value in (("--convert-dtypes", self.convert_dtypes or None),
                                            ("--object-strings", self.object_strings or None)) if value is not None]
            own = self.reading_flags() + own
            if own:
                raise UsageError(f"{own[0]} is for the user's data: it needs --data PATH")
            return
        defaults = BenchOptions()
        tsbs_flags = [name for name in TSBS_DATA_SET_OPTIONS if getattr(self, name) != getattr(defaults, name)]
        if tsbs_flags:
            flags = ", ".join("--" + name.replace("_", "-") for name in tsbs_flags)
            raise UsageError(f"--data sends the user's data, not a TSBS data set: leave out {flags}")
        if self.write_ilp is not None:
            raise UsageError("--write-ilp writes TSBS's data set as ILP text; with --data, `harness inspect` tells "
                             "how the client takes each column")
        if self.clients > 1 or self.barrier is not None:
            raise UsageError("--clients, --barrier: a scale-out run splits TSBS's data set into interleaved groups; "
                             "--data runs as one client (--workers N sends in parallel)")
        if self.table is not None:
            checked_table_name(self.table)

    @classmethod
    def shared_with(cls, options, **overrides) -> BenchOptions:
        """A bench run of another command's ``options`` (tune's baseline, paths' data): the fields both declare,
        then ``overrides``; its progress and time series off, as a run inside another's."""
        names = {field.name for field in dataclasses.fields(cls)} & \
            {field.name for field in dataclasses.fields(options)}
        values = {name: getattr(options, name) for name in names}
        values.update(send=True, stream=True, reporting_period=0.0, sample_interval=0.0)
        return cls(**{**values, **overrides})

    def chunks(self, spec: params.DatasetSpec) -> Iterator[Chunk]:
        """The data set in chunks of ``worker_chunk_row_count`` rows, each mapping its table to its rows."""
        chunks = self.use_case_entry.chunks(spec, self.worker_chunk_row_count, self.fields, self.symbol_dtype,
                                            self.table)
        # The chunks before first_chunk are generated all the same: later ones depend on the PRNG's state.
        return itertools.islice(chunks, self.first_chunk, None)

    def schemas(self) -> list[TableSchema]:
        return self.use_case_entry.schemas(self.fields, self.table)

    def table_rows(self, spec: params.DatasetSpec) -> dict[str, int]:
        """Rows per table of what this run sends: the whole data set, or its group."""
        return self.use_case_entry.table_rows(spec, table=self.table)

    def sender_settings(self) -> SenderSettings:
        return SenderSettings(self.transport, self.protocol_version, self.host, self.ilp_port, self.http_port,
                              self.client_conf(), CLIENT_RETRY_TIMEOUT_MS if self.exactly_once else None)


# The options that choose a TSBS data set, refused beside --data.
TSBS_DATA_SET_OPTIONS = ("use_case", "seed", "scale", "timestamp_start", "timestamp_end", "log_interval", "fields",
                         "time_ordered", "interleaved_generation_group_id", "interleaved_generation_groups",
                         "row_count", "symbol_dtype")


def check_held_rows(rows: int, bytes_per_row: int) -> None:
    """Refuse, in one line, a data set held whole in memory (no --stream) that this machine cannot hold."""
    needed = rows * bytes_per_row
    available = psutil.virtual_memory().available
    if needed > available:
        raise UsageError(f"--row-count {rows}: without --stream every row is generated into memory before the timed "
                         f"phases, about {needed / 2**30:.1f} GiB; {available / 2**30:.1f} GiB of memory is "
                         f"available (--stream generates while sending, in bounded memory)")


def resumed_options(path: str) -> BenchOptions:
    """The options of the run recorded in ``path``, set to continue it where the server's acknowledgements
    end (``first_chunk``) into the same table and results file."""
    (record,) = load_results([path])
    parameters = record.parameters
    if record.kind != "bench" or not parameters.get("exactly_once"):
        raise UsageError(f"--resume: {path} is not an --exactly-once bench run: only such a run resumes exactly")
    if record.status == "ok":
        raise UsageError(f"--resume: the run in {path} finished: nothing to resume")
    if record.acknowledged_chunks is None:
        raise UsageError(f"--resume: {path} records no acknowledged chunks: the run never reached its send phase")
    if "***" in str(parameters.get("conf")):
        raise UsageError("--resume: the run used a --conf with secrets, which are never recorded")
    if parameters.get("rate") is not None:
        raise UsageError("--resume: the run was an open loop (--rate): its schedule's intended times passed with "
                         "it, so no later run can keep them; run it again")
    names = {field.name for field in dataclasses.fields(BenchOptions)} - {"resume", "results", "first_chunk",
                                                                           "private_sink"}
    values = {name: parameters[name] for name in names if name in parameters}
    values.update(seed=record.seed, keep_table=True, send=True, results=path, first_chunk=record.acknowledged_chunks)
    return BenchOptions(**values)
