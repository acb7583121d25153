"""What a tuning sweep tries and what it concludes: the settings of a send (``Setting``: workers, chunk rows,
protocol version, transport, the dtype audit's conversions), the default grid around the user's own setting
(``grid``), the recommendation a sweep's comparison supports (``recommend``: ahead of the user's setting by
its paired interval, or none), and the code that applies it (``setting_code``). The sweep itself (trials
alternated in rounds within a budget) is the ``tune`` command's (``harness.commands.tune``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from harness.ingest.choices import ProtocolVersion, Target, Transport
from harness.records.benchmark_record import Comparison, FigureSummary
from harness.run.bench_options import BenchOptions

# The figure a sweep ranks by: rows per second of the send (into QuestDB: until the rows are visible).
RANKED_FIGURE = "rows_per_second"
AS_IS = "as is"


@dataclass(frozen=True)
class Setting:
    """One way to send: ``changes`` to the user's bench options (``BenchOptions`` fields), named by what
    they change."""

    name: str
    changes: dict

    def applied(self, options: BenchOptions) -> BenchOptions:
        return dataclasses.replace(options, **self.changes)


def grid(options: BenchOptions, cpus: int | None = None) -> list[Setting]:
    """The default sweep around the user's setting (``options``), which comes first as the baseline: more
    workers (2, and every CPU where there are more), chunks 5x smaller and 5x larger, the binary protocol
    (ILP/TCP's default is text), the other transport (into QuestDB), the audit's dtype conversions (where it
    proposes any), and those changes together."""
    cpus = cpus or os.cpu_count() or 1
    workers = options.workers or 1
    rows = options.worker_chunk_row_count
    settings = [Setting(AS_IS, {})]

    def add(name: str, **changes) -> None:
        if any(getattr(options, key) != value for key, value in changes.items()) and \
                all(setting.changes != changes for setting in settings):
            settings.append(Setting(name, changes))

    for count in sorted({2, cpus} - {workers}):
        if count > 1:
            add(f"{count} workers", workers=count)
    add(f"chunks of {max(rows // 5, 1):,} rows", worker_chunk_row_count=max(rows // 5, 1))
    add(f"chunks of {rows * 5:,} rows", worker_chunk_row_count=rows * 5)
    # A configuration string (--conf, QDB_CLIENT_CONF) wins over --transport and --protocol-version: nothing to
    # sweep of them then.
    separate_options = options.client_conf() is None
    text_protocol = separate_options and options.transport == Transport.tcp and options.protocol_version in (
        ProtocolVersion.auto, ProtocolVersion.v1)
    if text_protocol:
        add("protocol 2 (binary doubles)", protocol_version=ProtocolVersion.v2)
    if separate_options and options.target == Target.questdb:
        other = Transport.http if options.transport == Transport.tcp else Transport.tcp
        add(f"ILP over {other}", transport=other)
    together = {}
    if options.own_data and _has_conversions(options):
        add("dtypes converted", convert_dtypes=True)
        together["convert_dtypes"] = True
    if workers < 2:
        together["workers"] = max(2, min(cpus, 4))
    if text_protocol:
        together["protocol_version"] = ProtocolVersion.v2
    if len(together) > 1:
        add("all of: " + ", ".join(_change_text(key, value) for key, value in together.items()), **together)
    return settings


def _has_conversions(options: BenchOptions) -> bool:
    return any(audit.fix for audit in options.use_case_entry.audits)


def _change_text(key: str, value) -> str:
    return {"convert_dtypes": "dtypes converted", "workers": f"{value} workers",
            "protocol_version": f"protocol {value}"}.get(key, f"{key}={value}")


@dataclass(frozen=True)
class Recommendation:
    """What a sweep supports: ``setting`` (None: keep the user's own), its gain in the ranked figure
    (``summary``: the paired ratio and its interval against the user's setting), and why in one line."""

    setting: Setting | None
    summary: FigureSummary | None
    text: str


def recommend(comparison: Comparison, settings: list[Setting]) -> Recommendation:
    """The setting whose paired interval of rows/s lies wholly above the user's setting's (``ahead``) with the
    largest paired ratio; else none, naming the best one and why it is level (within the rounds' noise) or
    behind."""
    by_name = {setting.name: setting for setting in settings}
    candidates = [(name, figures[RANKED_FIGURE]) for name, figures in comparison.summary.items()
                  if name != comparison.baseline and RANKED_FIGURE in figures]
    if not candidates:
        return Recommendation(None, None, "nothing to compare: the sweep measured no setting but the user's own")
    ranked = sorted(candidates, key=lambda item: item[1].paired_ratio or 0, reverse=True)
    ahead = [(name, summary) for name, summary in ranked if summary.standing() == "ahead"]
    if ahead:
        name, summary = ahead[0]
        return Recommendation(by_name[name], summary,
                              f"{name}: {_gain(summary)} the rows/s of the setting as is, {summary.paired_text()}")
    name, summary = ranked[0]
    standing = summary.standing()
    why = ("no paired intervals: the budget allowed fewer than 2 rounds" if standing is None
           else f"the best, {name}, is {summary.paired_text()}: within the rounds' noise" if standing == "level"
           else f"every setting is behind it (the best, {name}: {summary.paired_text()})")
    return Recommendation(None, summary, f"keep the setting as is: {why}")


def _gain(summary: FigureSummary) -> str:
    return f"+{(summary.paired_ratio - 1):.0%} over" if summary.paired_ratio >= 1 else "below"


def setting_code(options: BenchOptions) -> str:
    """A Python script that sends the user's data as ``options`` say (its conf string, dtype conversions,
    symbols, designated timestamp, chunks, and one sender per worker thread), runnable as printed with pandas 2
    or 3 (a DataFrame's script expects it as ``frame``)."""
    source = options.use_case_entry
    conf = options.client_conf() or _conf_string(options)
    call = (f"sender.dataframe(df, table_name=TABLE, symbols={list(source.dataframe_symbols)!r}, "
            f"at={source.dataframe_at!r})")
    return "\n".join([
        "# Sends the data as the tuning sweep measured it (harness tune).",
        "import queue",
        "import threading",
        "",
        "import pandas as pd",
        *_reader_imports(options),
        "import questdb",
        "",
        f"CONF = {conf!r}",
        *([f"PATH = {str(options.data)!r}"] if options.data is not None else []),
        f"TABLE = {source.table_name!r}",
        f"CHUNK_ROWS = {options.worker_chunk_row_count}",
        f"WORKERS = {options.threads}",
        *_string_mapping(options),
        "",
        "",
        "def pieces():",
        '    """The data in DataFrames of at most CHUNK_ROWS rows, read a piece at a time."""',
        *_reader_lines(options),
        "        yield df",
        "",
        "",
        "work = queue.Queue(maxsize=2 * WORKERS)  # a few pieces in flight, never the whole data",
        "errors = []",
        "",
        "",
        "def worker():",
        "    # Each worker its own sender: a sender is not thread-safe.",
        "    try:",
        "        with questdb.Sender.from_conf(CONF) as sender:",
        "            while (df := work.get()) is not None:",
        f"                {call}",
        "                sender.flush()",
        "    except BaseException as error:",
        "        errors.append(error)",
        "        while work.get() is not None:  # keep taking pieces, so that the reader never waits for good",
        "            pass",
        "",
        "",
        "threads = [threading.Thread(target=worker) for _ in range(WORKERS)]",
        "for thread in threads:",
        "    thread.start()",
        "for df in pieces():",
        "    work.put(df)",
        "for _ in threads:",
        "    work.put(None)",
        "for thread in threads:",
        "    thread.join()",
        "if errors:",
        "    raise errors[0]",
    ]) + "\n"


def _format(options: BenchOptions) -> str:
    return getattr(options.use_case_entry.data, "format", "")


def _reads_arrow_strings(options: BenchOptions) -> bool:
    """Whether the code reads a file's strings as Arrow strings explicitly: the conversion of strings a file
    gave as Python objects (pandas 2's reading, ``--object-strings``)."""
    return bool(options.convert_dtypes and getattr(options.use_case_entry.data, "object_strings", False)) and \
        not _read_by_the_harness(options)


def _string_mapping(options: BenchOptions) -> list[str]:
    if not _reads_arrow_strings(options):
        return []
    return ["# Strings read as Arrow strings (pandas 2 would make Python objects of them, which hold the GIL).",
            "ARROW_STRINGS = {pa.string(): pd.StringDtype('pyarrow'), pa.large_string(): pd.StringDtype('pyarrow')}"]


def _read_by_the_harness(options: BenchOptions) -> bool:
    """Whether the code reads the file with the harness's own reader: a text format, a dataset, or a file whose
    reading converts a type or a name (pyarrow's readers alone would hand the client other dtypes, or text
    timestamps it refuses)."""
    data = options.use_case_entry.data
    if not _format(options):
        return False
    return data.format in ("csv", "json") or data.dataset or bool(data.normalisation.conversions) or \
        bool(data.normalisation.renames)


def _reading_call(options: BenchOptions) -> str:
    """``DataFile(PATH, ...)`` with the flags the run read the file with."""
    reading = options.use_case_entry.data.reading
    defaults = type(reading)()
    given = ", ".join(f"{item.name}={getattr(reading, item.name)!r}" for item in dataclasses.fields(reading)
                      if getattr(reading, item.name) != getattr(defaults, item.name))
    strings = ", object_strings=True" if getattr(options.use_case_entry.data, "object_strings", False) and \
        not options.convert_dtypes else ""
    return f"DataFile(PATH{strings}, reading=Reading({given}))"


def _reader_imports(options: BenchOptions) -> list[str]:
    if _read_by_the_harness(options):
        return ["# The harness's reader: the file read as the sweep read it (timestamps parsed, types and names made",
                "# what the client and QuestDB take; harness.own_data.files).",
                "from harness.own_data.files import DataFile, Reading"]
    kind = _format(options)
    imports = {"parquet": ["import pyarrow.parquet as pq"], "csv": ["from pyarrow import csv"], "": []}.get(kind, [])
    if kind not in ("parquet", "csv", "") or _reads_arrow_strings(options):
        imports = ["import pyarrow as pa", *imports]
    return imports


def _reader_lines(options: BenchOptions) -> list[str]:
    """The body of ``pieces()``: read a piece into ``df``, convert it as the run did (a file's pieces one by
    one; frames in memory once, before the first piece)."""
    source = options.use_case_entry
    kind = _format(options)
    if not kind:
        fixes = [audit.fix for audit in source.audits if audit.fix] if options.convert_dtypes else []
        return [*(["    df = frame.copy(deep=False)  # converted once, before sending"] if fixes else []),
                *(f"    {fix}" for fix in fixes),
                *(["    frame_sent = df"] if fixes else ["    frame_sent = frame"]),
                "    for start in range(0, len(frame_sent), CHUNK_ROWS):  # frame: your DataFrame",
                "        df = frame_sent.iloc[start:start + CHUNK_ROWS]"]
    if _read_by_the_harness(options):
        lines = [f"    for df in {_reading_call(options)}.frames(CHUNK_ROWS):"]
        if options.convert_dtypes and source.piece_audits:
            lines += [f"        {audit.fix}" for audit in source.piece_audits if audit.fix]
        return lines
    batches = {"parquet": "pq.ParquetFile(PATH, pre_buffer=False).iter_batches(batch_size=CHUNK_ROWS)",
               "arrow": "pa.ipc.open_file(pa.memory_map(PATH)).read_all().to_batches(max_chunksize=CHUNK_ROWS)",
               "arrow stream": "pa.ipc.open_stream(pa.OSFile(PATH))",
               "csv": "csv.open_csv(PATH)"}[kind]
    read = "batch.to_pandas(types_mapper=ARROW_STRINGS.get)" if _reads_arrow_strings(options) else "batch.to_pandas()"
    lines = [f"    for batch in {batches}:", f"        df = {read}"]
    if getattr(source.data, "object_strings", False) and not options.convert_dtypes:
        lines.append("        df = df.astype({name: object for name in df.columns "
                     "if isinstance(df[name].dtype, pd.StringDtype)})  # strings as pandas 2 reads them")
    if options.convert_dtypes and source.piece_audits:
        lines += [f"        {audit.fix}" for audit in source.piece_audits if audit.fix]
    return lines


def _conf_string(options: BenchOptions) -> str:
    transport = str(options.transport)
    port = options.http_port if transport == "http" else options.ilp_port
    protocol = "" if options.protocol_version == ProtocolVersion.auto else \
        f"protocol_version={options.protocol_version};"
    return f"{transport}::addr={options.host}:{port};{protocol}"


