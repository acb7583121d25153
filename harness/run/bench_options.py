"""What a ``bench`` run is asked to do: every option of it (``BenchOptions``, the original benchmark's
defaults), plain flag values; the rules that refuse a combination at the door, before anything runs; the options
of a run that ``--resume`` continues; and the run they resolve to (``BenchOptions.plan``: ``harness.run.plan``),
its source opened and what that source cannot do refused. Below the command nothing reads the options: the phases
(``harness.run.bench_phases``) take the plan.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from harness.errors import UsageError, named
from harness.frames.kinds import FrameKind
from harness.ingest.choices import Op, ProtocolVersion, Target, Transport
from harness.ingest.wire.interface import Wire
from harness.ingest.wire.registry import wire_for
from harness.ingest.wire.settings import SenderSettings
from harness.open_loop.options import OpenLoopOptions
from harness.options.declare import CommandOptions, option
from harness.options.groups import (
    DataSetRowsOptions,
    DryRunOptions,
    FrameOptions,
    GroupedDataSetOptions,
    MetricsOptions,
    OwnDataOptions,
    PgwireOptions,
    ProfileOptions,
    ProgressOptions,
    RecordOptions,
    SendOptions,
    ServerOptions,
)
from harness.output_file import check_writable
from harness.questdb.conf import redact_conf
from harness.questdb.http import checked_table_name
from harness.questdb.schema import TableWal
from harness.records.store import load_results
from harness.run.limits import check_held_rows, check_memory, check_workers
from harness.run.plan import BenchPlan, Metrics
from harness.run.session import Lifecycle
from harness.scaleout.meeting import Barrier, check_run_name, run_seed
from harness.source import Source
from harness.tsbs import params, use_cases
from harness.tsbs.choices import SymbolDtype

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
    no_cross_check: bool = option(False, "With --data --send: skip the cross-check before sending (DuckDB's own "
                                         "reading of the file's head and tail held against the run's; a "
                                         "disagreement refuses the run), said in the output and the record.",
                                  flags=("--no-cross-check",))

    def resolved(self) -> BenchOptions:
        """With --resume, the options of the run it resumes (``resumed_options``)."""
        return self if self.resume is None else resumed_options(self.resume)

    def check_values(self) -> None:
        super().check_values()
        self._check_source()
        self._check_open_loop()
        if self.op != Op.dataframe and self.workers is not None:
            raise UsageError(f"--op {self.op} is the single-threaded row-by-row baseline: it takes no --workers")
        wire = self.wire()
        if self.target == Target.sink and wire.traits.committed:
            raise UsageError(f"--target sink takes ILP over TCP only (the sink never answers {wire.traits.name})")
        if self.profile_native and wire.traits.pauses_break_it:
            # py-spy's pauses break a blocking call with a timeout (harness.profiling.client).
            raise UsageError(f"--profile-native pauses the client at each sample, which breaks its {wire.traits.name} "
                             f"flush (EINTR): profile it over TCP, or without --profile-native")
        self._check_wire_and_frame(wire)
        if self.write_ilp is not None:
            check_writable(self.write_ilp, "--write-ilp")
        if self.exactly_once and self.table_wal == TableWal.bypass:
            raise UsageError("--exactly-once deduplicates, which QuestDB does on WAL tables only: it takes no "
                             "--table-wal bypass")
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
        if self.exactly_once and (not wire.traits.committed or self.target != Target.questdb):
            raise UsageError("--exactly-once needs --transport http or qwp to QuestDB: ILP over TCP has no "
                             "acknowledgements, so a chunk's fate after a failure is unknowable")

    def _check_wire_and_frame(self, wire: Wire) -> None:
        """The flags of one wire given to another, and frame kinds with the flags that shape pandas frames."""
        qwp = wire.settings.used_transport == Transport.qwp
        if qwp:
            if self.protocol_version != ProtocolVersion.auto:
                raise UsageError("--protocol-version is ILP's: QWP has no protocol versions (leave it out with "
                                 "--transport qwp)")
            if not self.send:
                raise UsageError("--transport qwp: QWP's client encodes only while it sends (it has no buffer of its "
                                 "own to serialize into): add --send")
        else:
            given = [flag for flag, value in (("--max-rows-per-batch", self.max_rows_per_batch),
                                              ("--sender-pool-max", self.sender_pool_max)) if value is not None]
            if given:
                raise UsageError(f"{given[0]} is a setting of QWP's client: {wire.traits.name} has none (add "
                                 f"--transport qwp)")
        if self.frame != FrameKind.pandas:
            shaping = [flag for flag, given in (("--op " + str(self.op), self.op != Op.dataframe),
                                                ("--symbol-dtype", self.symbol_dtype != SymbolDtype.category),
                                                ("--object-strings", self.object_strings),
                                                ("--convert-dtypes", self.convert_dtypes)) if given]
            if shaping:
                raise UsageError(f"{shaping[0]} shapes NumPy-backed pandas frames (their rows, tag dtype, strings, "
                                 f"the dtype audit's conversions): it takes --frame pandas, not --frame {self.frame}")

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
        if "ack" in figures and not self.wire().traits.committed:
            raise UsageError("--threshold ack_*: ILP over TCP has no acknowledgement; --transport http and qwp have")

    def _check_source(self) -> None:
        """--data's rules, before the data is read: no TSBS data-set flag beside it, its own flags only with it."""
        if self.data is None:
            own = [flag for flag, value in (("--convert-dtypes", self.convert_dtypes or None),
                                            ("--object-strings", self.object_strings or None),
                                            ("--no-cross-check", self.no_cross_check or None)) if value is not None]
            # --partition-by may partition DataFrames handed in (the notebook's); a TSBS run refuses it (``plan``).
            own = [flag for flag in self.reading_flags() if flag != "--partition-by"] + own
            if own:
                raise UsageError(f"{own[0]} is for the user's data: it needs --data PATH")
            return
        defaults = BenchOptions()
        tsbs_flags = [name for name in params.DATA_SET_PARAMETERS if getattr(self, name) != getattr(defaults, name)]
        if tsbs_flags:
            flags = ", ".join("--" + name.replace("_", "-") for name in tsbs_flags)
            raise UsageError(f"--data sends the user's data, not a TSBS data set: leave out {flags}")
        if self.write_ilp is not None:
            raise UsageError("--write-ilp writes TSBS's data set as ILP text; with --data, `harness inspect` tells "
                             "how the client takes each column")
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

    def sender_settings(self) -> SenderSettings:
        return SenderSettings(self.transport, self.protocol_version, self.host, self.ilp_port, self.http_port,
                              self.client_conf(), CLIENT_RETRY_TIMEOUT_MS if self.exactly_once else None,
                              self.max_rows_per_batch, self.sender_pool_max)

    def wire(self) -> Wire:
        """What the run sends over: the wire of its sender settings."""
        return wire_for(self.sender_settings())

    def sink_endpoint(self, source: Source) -> tuple[str, int] | None:
        """Where this run sends into the no-op sink, if it starts a sink of its own when nothing listens there: a
        source that says so (``sink_of_its_own``), no configuration string (it names an address of its own), not
        pointed at a private sink already (a tuning sweep's trials, which send into the sweep's). Otherwise it finds
        its sink running, or ends in one line naming the address."""
        if not (self.send and self.target == Target.sink) or self.private_sink is not None or \
                self.client_conf() is not None or not source.sink_of_its_own:
            return None
        return self.host, self.ilp_port

    def rehearse(self) -> None:
        """A --dry-run also resolves the run: its source opened, what it cannot do refused."""
        self.plan()

    def plan(self, source: Source | None = None) -> BenchPlan:
        """The run these options ask for (checked at the door already), sending ``source`` (default: the one the
        flags name, opened here; the notebook's DataFrames and a tuning sweep's trials hand theirs in, opened
        once). What the source cannot do is refused here, in one line naming the flag."""
        source = source or self.source()
        options, seed_said = self, None
        if self.barrier is not None and self.seed is None:
            # The clients of a scale-out run draw the same data set: its seed from the run's name.
            options, seed_said = dataclasses.replace(self, seed=run_seed(self.barrier)), " (from the run name)"
        spec = options.dataset()
        _refuse_for_source(options, source, spec)
        cross_check = self._cross_check(source)
        wire = options.wire()
        drawn = source.seed(spec) is not None and (self.seed is None or seed_said is not None)
        return BenchPlan(
            source=source, spec=spec, rename=self.table, fields=self.fields, symbol_dtype=self.symbol_dtype,
            frame=self.frame,
            chunk_rows=self.worker_chunk_row_count, first_chunk=self.first_chunk, workers=self.workers, op=self.op,
            streams=self.stream or not source.held_whole or self.open_loop, send=self.send, write_ilp=self.write_ilp,
            wire=wire, target=self.target, server=self.endpoint(), private_sink=self.private_sink,
            tables=self.table_policy(dedup=self.exactly_once),
            resend_for=self.retry_timeout if self.exactly_once else None, flush_timeout=self.flush_timeout,
            open_loop=self.resolve_open_loop() if self.open_loop else None,
            barrier=Barrier(self.barrier, self.barrier_folder, self.barrier_timeout) if self.barrier else None,
            progress_seconds=self.reporting_period,
            lifecycle=Lifecycle(self.recording(), self.spelling(), self.sampling(), self.profiling()),
            metrics=Metrics(self.metrics_port, self.metrics_linger, self.metrics_host), verbose=self.verbose,
            seed_said=f"seed: {spec.seed}{seed_said or ''}" if drawn else None,
            parameters=options.parameters(source, spec, wire), cross_check=cross_check)

    def _cross_check(self, source: Source):
        """The cross-check of a file's sample before a run sends it (``harness.own_data.cross_check_sample``), or
        why none is made; None where the run sends no file. A disagreement refuses the run here, before any table
        is made."""
        if self.data is None or not self.send or not getattr(source, "data", None) or not source.data.is_file():
            return None
        from harness.own_data.cross_check import skipped
        from harness.own_data.cross_check_sample import sample_check

        if self.no_cross_check:
            return skipped(f"{named('no_cross_check')}: the file is sent as the run reads it, unchecked")
        check = sample_check(source.data, source.at)
        if check.differences:
            raise UsageError(check.refusal(source.data.name, "no_cross_check"))
        return check

    def source(self) -> Source:
        """The run's source, chosen here alone: the user's data (--data: read, its designated timestamp's nulls
        counted and its dtypes audited once, its columns judged by the run's way in: QWP or ILP), else the TSBS use
        case."""
        if self.data is None:
            return use_cases.get(self.use_case)
        from harness.own_data.source import data_source  # pyarrow's readers: only for a run of the user's data

        return data_source(self.data, self.table, self.at, self.symbol_choice(), self.convert_dtypes,
                           object_strings=self.object_strings, path=self.send_path(), reading=self.reading(),
                           partition_by=self.partition_by, limit=self.map_limit())

    def parameters(self, source: Source, spec: params.DatasetSpec, wire: Wire) -> dict:
        """The record's parameters: every flag, what the senders really used (a configuration string wins over
        --transport and --protocol-version, and its secrets are never recorded), and what the source says of
        itself."""
        values = dataclasses.asdict(self)
        values.update(wire.settings.used())
        conf = self.client_conf()
        if conf is not None:
            values["conf"] = redact_conf(conf)
            values["conf_source"] = "--conf" if self.conf is not None else "QDB_CLIENT_CONF"
        return self.spelling().values(source.record_parameters(spec, values))


def _refuse_for_source(options: BenchOptions, source: Source, spec: params.DatasetSpec) -> None:
    """What the flags ask that ``source`` cannot do, each in one line naming the flag."""
    if options.table is not None and not source.renamable_table:
        raise UsageError(f"--table names a one-table use case's table; {source.name} writes its own tables "
                         f"({', '.join(source.tables())})")
    if options.op != Op.dataframe and not source.row_api:
        raise UsageError(f"--op {options.op} is cpu-only's row-by-row baseline; {source.name} sends with "
                         f"--op dataframe")
    if options.partition_by is not None and source.known_schemas:
        raise UsageError(f"--partition-by partitions the table of the user's data; {source.name}'s tables are "
                         f"TSBS's, partitioned as its loader does")
    if options.exactly_once and not source.unique_keys:
        raise UsageError(f"--exactly-once deduplicates rows by their series and timestamp; {source.name}'s "
                         f"rows are not unique by them (TSBS clears some rows' tags)")
    if (options.clients > 1 or options.barrier is not None) and not source.interleaved_groups:
        raise UsageError("--clients, --barrier: a scale-out run splits TSBS's data set into interleaved groups; "
                         f"{'--data' if options.data is not None else source.name} runs as one client (--workers N "
                         f"sends in parallel)")
    rows = source.rows(spec)
    chunk_rows = min(options.worker_chunk_row_count, rows)
    check_memory(source, spec, chunk_rows)
    # Each worker holds a chunk in flight and, sending, one connection.
    check_workers("--workers", options.threads, int(options.send), chunk_rows * source.bytes_per_chunk_row)
    if source.held_whole and not (options.stream or options.open_loop):
        check_held_rows(rows, source.bytes_per_held_row)


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
