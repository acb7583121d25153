"""The ``generate`` command: a TSBS data set written as ILP text, exactly as ``tsbs_generate_data`` prints it.

A use case with a printer of its own for the fields asked (cpu-only's ``--fields long``: TSBS's own file,
integers and fixed tags, printed straight from the walk by a kernel, ``harness.tsbs.ilp_text``, compiled
ahead of time by ``make setup``, see ``harness.tsbs.kernel_cache``) prints its text; everything else goes
as DataFrames through the questdb client's serializer (``harness.ingest.ilp``). Either way chunks are
serialized on one thread per core while the next ones are generated, and written in order
(``harness.ingest.ordered_write``). Each path imports only what it uses: the text path never loads pandas or
the client.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum

from harness.ingest.ordered_write import default_workers, write_in_order
from harness.options.declare import CommandOptions, command, option
from harness.options.groups import FrameOptions, GroupedDataSetOptions
from harness.output_file import whole_file
from harness.run.limits import check_memory, check_workers
from harness.tsbs import use_cases

# The first chunk is small so that the first bytes go out after a few milliseconds of generation and
# serialization rather than a whole chunk's: a reader (`| head`, a loader) starts at once. It costs one more
# dataframe() call per run; any chunk sizes concatenate to the same bytes.
FIRST_CHUNK_ROWS = 4_000


class OutputFormat(StrEnum):
    """TSBS prints the same bytes for both."""

    questdb = "questdb"
    influx = "influx"


@dataclass
class GenerateOptions(FrameOptions, GroupedDataSetOptions, CommandOptions):
    max_data_points: int = option(0, "Stop after this many rows of the whole data set (0: the whole "
                                     "range), as TSBS: a group gets its share.", min=0)
    file: str = option("-", "Output path; - for stdout.")
    format: OutputFormat = option(OutputFormat.questdb, "questdb or influx: TSBS prints the same bytes for both.")
    chunk_rows: int | None = option(None, "Rows per chunk (of all the use case's tables together). Default: the "
                                          "use case's (cpu-only 50,000, devops 100,000).", min=1)
    workers: int | None = option(None, "Workers: serializer threads. Default: one per available core.", min=1)


@command
def run_generate(options: GenerateOptions) -> None:
    """Write TSBS data as ILP text (protocol 1): printed by the use case's own printer where it has one for
    these fields, else through the questdb client's serializer (the module's docstring says why)."""
    spec = options.spec(options.max_data_points or None)
    use_case = use_cases.get(spec.use_case)
    chunk_rows = options.chunk_rows or use_case.default_chunk_rows
    check_memory(use_case, spec, min(chunk_rows, spec.row_count))
    # Each serializer thread has up to two chunks pending (``write_in_order``).
    check_workers("--workers", options.workers or default_workers(), 0,
                  2 * min(chunk_rows, spec.row_count) * use_case.bytes_per_chunk_row)
    workers = options.workers or default_workers()
    if options.file == "-":
        _say_seed(options, spec)
        _write(options, spec, use_case, chunk_rows, workers, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    with whole_file(options.file, "--file") as out:  # opened first: a path that cannot be written is all it says
        _say_seed(options, spec)
        _write(options, spec, use_case, chunk_rows, workers, out)


def _say_seed(options: GenerateOptions, spec) -> None:
    if options.seed is None:
        print(f"seed: {spec.seed}", file=sys.stderr, flush=True)


def _write(options: GenerateOptions, spec, use_case, chunk_rows: int, workers: int, out) -> None:
    text_jobs = use_case.text_jobs(spec, chunk_rows, options.fields, first_chunk_rows=FIRST_CHUNK_ROWS)
    if text_jobs is not None:
        write_in_order(text_jobs, out, workers)
    else:
        from harness.ingest.ilp import write_ilp

        # A group's frames are cut from groups x their rows of the whole data set: asking for 1/groups of
        # the rows keeps what is walked per chunk (the memory) the chunk size given, whatever the groups.
        chunks = use_case.chunks(spec, max(chunk_rows // spec.groups, 1), options.fields, options.symbol_dtype,
                                 first_chunk_rows=max(FIRST_CHUNK_ROWS // spec.groups, 1))
        write_ilp(chunks, out, workers=workers, go_floats=use_case.go_floats(options.fields))
