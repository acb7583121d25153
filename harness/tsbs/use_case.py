"""What a TSBS use case is: the interface (``UseCase``) every use case of the registry (``harness.tsbs.use_cases``)
implements: a source of a run (``harness.source.Source``, all of whose members it has) with TSBS's own abilities
besides (its text, its queries, the rows a host gives per epoch); what every TSBS use case says of itself as a source
(``TsbsSource``); and the chunks of a data set (``Chunk``) every source makes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from harness.tsbs.choices import FieldType, SymbolDtype
from harness.tsbs.params import DatasetSpec
from harness.tsbs.schema import PARTITION_BY

if TYPE_CHECKING:
    import pandas as pd

    from harness.frames.kinds import FrameKind

# A chunk of what a run sends: each table it has rows of, mapped to its DataFrame of consecutive rows (a frame of
# another kind where the run hands the client one: ``harness.frames.kinds``).
Chunk = dict[str, "pd.DataFrame"]


def chunk_rows(chunk: Chunk) -> int:
    """The rows of a chunk, over its tables."""
    return sum(len(frame) for frame in chunk.values())


# A job printing one chunk of TSBS's text: returns (rows, [bytes]) (``ingest.ordered_write``).
TextJob = Callable[[], tuple[int, list]]


class UseCase(Protocol):
    """A TSBS use case: a source drawn from a seed (``harness.source.Source``'s members, which ``TsbsSource`` and each
    use case's class give it), and the abilities only such a source has."""

    # Rows a host gives per epoch: one per measurement it simulates.
    measurements_per_host: int
    # Rows per chunk `generate` uses by default (the client's per-call cost against a chunk's memory).
    default_chunk_rows: int
    # Whether TSBS writes each table's rows in time order (iot's arrive partly late; ``--sort`` orders them).
    in_time_order: bool
    # Memory a host costs, with margin (``memory_needed``).
    bytes_per_host: int
    # TSBS's query types that run on its data set (empty: none), and the module of harness.tsbs that makes
    # them: its ``Generator(seed, scale, start_ns, end_ns).make(query_type)`` and
    # ``refusal(query_type, scale, start_ns, end_ns)`` (why TSBS would refuse a type, or None).
    query_types: tuple[str, ...]
    query_module: str

    def text_jobs(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType,
                  first_chunk_rows: int | None = None) -> Iterator[TextJob] | None:
        """TSBS's text printed without the client, where the use case has a printer for ``fields``; else None
        (the chunks then go through the client's serializer)."""

    def go_floats(self, fields: FieldType) -> bool:
        """Whether the client's text of ``fields`` needs Go's float formatting to equal TSBS's bytes."""


class TsbsSource:
    """What every TSBS use case says of itself as a source: a data set drawn from a seed, its rows made in memory
    before the timed phases unless streamed, its sink found running, nothing to convert, no code of the user's."""

    held_whole = True
    interleaved_groups = True
    sink_of_its_own = False
    conversions: tuple[str, ...] = ()

    def rows(self, spec: DatasetSpec) -> int:
        return spec.row_count

    def partitioning_record(self) -> dict:
        return {"by": PARTITION_BY, "chosen": False, "why": f"partitioned by {PARTITION_BY}, as TSBS's QuestDB loader"}

    def memory_needed(self, spec: DatasetSpec, chunk_rows: int) -> int:
        return spec.scale * self.bytes_per_host + chunk_rows * self.bytes_per_chunk_row

    def seed(self, spec: DatasetSpec) -> int:
        return spec.seed

    @property
    def mode_prefix(self) -> str:
        """How a run's name starts: the use case's name (the default one's runs say nothing of it)."""
        return f"{self.name}-"

    def mode(self, spec: DatasetSpec, kind: str, threads: str, op: str, fields: FieldType) -> str:
        order = "-sorted" if spec.time_ordered else ""
        group = f"-group{spec.group}of{spec.groups}" if spec.groups > 1 else ""
        return f"{self.mode_prefix}{kind}-{op}-{fields}-{threads}{order}{group}"

    def chunks_as(self, frame: FrameKind, spec: DatasetSpec, chunk_rows: int, fields: FieldType,
                  symbol_dtype: SymbolDtype, table: str | None = None) -> Iterator[Chunk]:
        """TSBS's frames made as the generator makes them, then converted (a tag's categorical becomes a dictionary
        column, Polars' ``Categorical``)."""
        from harness.frames.convert import from_pandas  # pandas and pyarrow: not for generate's text
        from harness.frames.kinds import FrameKind

        for chunk in self.chunks(spec, chunk_rows, fields, symbol_dtype, table):
            yield chunk if frame == FrameKind.pandas else \
                {name: from_pandas(rows, frame) for name, rows in chunk.items()}

    def variant(self, convert_dtypes: bool, path: object) -> TsbsSource:
        return self  # its frames' dtypes are TSBS's, whatever the way in

    def describe(self) -> list[str]:
        return []

    def record_parameters(self, spec: DatasetSpec, parameters: dict) -> dict:
        return {**parameters, "seed": spec.seed, "row_count": spec.row_count, "timestamp_start_ns": spec.start_ns,
                "interval_ns": spec.interval_ns}

    def reading_code(self, frame: FrameKind) -> None:
        return None
