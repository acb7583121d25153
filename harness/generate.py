"""The ``generate`` command: a TSBS data set written as ILP text, exactly as ``tsbs_generate_data`` prints it.

cpu-only's ``--fields long`` (TSBS's own file: integers and fixed tags) is printed straight from the walk
by a kernel (``harness.tsbs.ilp_text``; compiled ahead of time by ``make setup``, see
``harness.tsbs.kernel_cache``); everything else goes as DataFrames (``harness.tsbs``) through the questdb
client's serializer (``harness.ingest.ilp``). Either way chunks are serialized on one thread per core while
the next ones are generated, and written in order (``harness.ingest.ordered_write``). Each path imports
only what it uses: the text path never loads pandas or the client.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum

from harness.errors import UsageError
from harness.ingest.ordered_write import default_workers, write_in_order
from harness.options import FieldType, SymbolDtype, check_options, coerce_choices, option
from harness.tsbs import cpu_only, params


# The first chunk is small so that the first bytes go out after a few milliseconds of generation and
# serialization rather than a whole chunk's (~0.1 s at cpu-only's 50,000 rows): a reader (`| head`, a loader)
# starts at once. One more dataframe() call (~2 ms) per run; any chunk sizes concatenate to the same bytes.
FIRST_CHUNK_ROWS = 4_000


class OutputFormat(StrEnum):
    """TSBS prints the same bytes for both."""

    questdb = "questdb"
    influx = "influx"


@dataclass
class GenerateOptions:
    use_case: str = option(params.CPU_ONLY, "TSBS use case: " + ", ".join(params.USE_CASES) + ".")
    seed: int | None = option(None, "PRNG seed, as tsbs_generate_data --seed. Default: random, printed.")
    scale: int = option(4000, "Number of hosts.", min=1)
    timestamp_start: str = option(params.DEFAULT_TIMESTAMP_START, "First epoch (RFC 3339).")
    timestamp_end: str = option(params.DEFAULT_TIMESTAMP_END, "End of the range, exclusive (RFC 3339).")
    log_interval: str = option(params.DEFAULT_LOG_INTERVAL, "Time between epochs (Go duration).")
    max_data_points: int = option(0, "Stop after this many rows (0: the whole range), as TSBS.", min=0)
    file: str = option("-", "Output path; - for stdout.")
    fields: FieldType = option(FieldType.double, "long: TSBS's integer values (byte-identical output); double: "
                                                 "the walk states.")
    format: OutputFormat = option(OutputFormat.questdb, "questdb or influx: TSBS prints the same bytes for both.")
    chunk_rows: int | None = option(None, "Rows per chunk (devops: of all nine tables together). Default: "
                                          "cpu-only 50,000, devops 100,000.", min=1)
    workers: int = option(0, "Serializer threads; 0: one per available core.", min=0)
    symbol_dtype: SymbolDtype = option(SymbolDtype.category, "Tag column dtype of the frames the client serializes "
                                                             "(cpu-only's --fields long prints without frames).")

    def __post_init__(self) -> None:
        coerce_choices(self)


def run_generate(options: GenerateOptions) -> None:
    """Write TSBS data as ILP text (protocol 1): cpu-only's --fields long printed from the walk, everything
    else through the questdb client's serializer (the module's docstring says why)."""
    check_options(options)
    spec = params.make_spec(use_case=options.use_case, seed=options.seed, scale=options.scale,
                            timestamp_start=options.timestamp_start, timestamp_end=options.timestamp_end,
                            log_interval=options.log_interval, row_limit=options.max_data_points or None)
    if spec.use_case == params.DEVOPS:
        from harness.tsbs import devops as use_case
    else:
        use_case = cpu_only
    chunk_rows = options.chunk_rows or use_case.DEFAULT_CHUNK_ROWS
    cpu_only.check_frame_options(chunk_rows, options.fields, options.symbol_dtype)
    use_case.check_memory(spec.scale, min(chunk_rows, spec.row_count))
    try:
        out = sys.stdout.buffer if options.file == "-" else open(options.file, "wb", buffering=8 << 20)
    except OSError as exc:
        raise UsageError(f"--file: cannot write {options.file}: {exc.strerror}") from None
    if options.seed is None:
        print(f"seed: {spec.seed}", file=sys.stderr, flush=True)
    workers = options.workers or default_workers()
    try:
        if use_case is cpu_only and options.fields == "long":
            write_in_order(cpu_only.text_jobs(spec, chunk_rows, first_chunk_rows=FIRST_CHUNK_ROWS), out, workers)
        else:
            from harness.ingest.ilp import write_ilp

            chunks = use_case.chunks(spec, chunk_rows, options.fields, options.symbol_dtype,
                                     first_chunk_rows=FIRST_CHUNK_ROWS)
            # TSBS's own devops bytes (long) print mem's percentages in Go's form; the double walk states of
            # --fields double (cpu-only's and devops's alike) have no TSBS original and stay as the client
            # prints them.
            go_floats = use_case is not cpu_only and options.fields == "long"
            write_ilp(chunks, out, workers=workers, go_floats=go_floats)
    finally:
        out.flush()
        if out is not sys.stdout.buffer:
            out.close()
