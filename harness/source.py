"""What a run sends, whatever it is: the interface (``Source``) every source implements and every run asks, never
branching on which source it has. Two kinds implement it: TSBS's use cases (``harness.tsbs``: a data set drawn from a
seed, whose extra abilities, its text and queries, are an interface of their own, ``harness.tsbs.use_case.UseCase``)
and the user's own data (``harness.own_data.source``). The registry that picks one by name is ``harness.sources``.

A source says itself: the lines a run prints of it before sending (``describe``), what its record keeps of it
(``record_parameters``), the name its results file takes (``mode``), and how a user's own code reads it, where one
would (``reading_code``). A third kind of source is one class implementing this, and one registry entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness.frames.kinds import FrameKind
    from harness.own_data.audit import SendPath
    from harness.own_data.code import ReadingCode
    from harness.tsbs.choices import FieldType, SymbolDtype
    from harness.tsbs.params import DatasetSpec
    from harness.tsbs.schema import TableSchema
    from harness.tsbs.use_case import Chunk


class Source(Protocol):
    """What every part of a run may ask of what it sends. ``spec`` is the TSBS data set the flags name; a source
    that is not drawn from one (the user's data) takes no notice of it."""

    name: str
    # Whether its one table may be given another name (``--table``).
    renamable_table: bool
    # Whether rows may go row by row through the client's row API (the iterrows/itertuples baselines).
    row_api: bool
    # Whether every row is unique by its series tags and timestamp: what --exactly-once's deduplication keys.
    unique_keys: bool
    # Whether a table of a schema it makes is the harness's to drop and make again (TSBS's tables); without, an
    # existing table is the user's: never dropped or written unless the user says so.
    known_schemas: bool
    # Whether its rows may all be made in memory before the timed phases, as the original benchmark does; a
    # source that never is (the user's data) is always made into chunks while sending.
    held_whole: bool
    # Whether its rows split into TSBS's interleaved generation groups, one for each client of a scale-out run.
    interleaved_groups: bool
    # Whether a run of it into the no-op sink starts a sink of its own where none listens (a self-contained run of
    # the user's data, from a notebook too); otherwise it finds its sink running (``native up``).
    sink_of_its_own: bool
    # Memory a row of a chunk in flight takes, and a row when every chunk is made before the timed phases.
    bytes_per_chunk_row: int
    bytes_per_held_row: int
    # What a chunk's frames pass the client's ``dataframe()``: ``symbols=`` (True: every string column) and the
    # designated timestamp column ``at=``.
    dataframe_symbols: bool | str | tuple[str, ...]
    dataframe_at: str
    # The dtype conversions a run of it could make (the user's data's dtype audit proposes them; none: nothing).
    conversions: tuple[str, ...]

    def tables(self, table: str | None = None) -> tuple[str, ...]:
        """Its tables, in the order it writes them (``table`` renames a renamable one)."""

    def schemas(self, fields: FieldType, table: str | None = None) -> list[TableSchema]:
        """Its tables' schemas, in ``tables()`` order."""

    def partitioning_record(self) -> dict:
        """How its tables are partitioned and why, as the record's plan keeps it."""

    def chunks(self, spec: DatasetSpec, chunk_rows: int, fields: FieldType, symbol_dtype: SymbolDtype,
               table: str | None = None, first_chunk_rows: int | None = None) -> Iterator[Chunk]:
        """Every row in chunks of ``chunk_rows`` rows of all tables together (the first of ``first_chunk_rows`` if
        given), in the order it sends them, as NumPy-backed pandas frames; any chunk size gives the same rows."""

    def chunks_as(self, frame: FrameKind, spec: DatasetSpec, chunk_rows: int, fields: FieldType,
                  symbol_dtype: SymbolDtype, table: str | None = None) -> Iterator[Chunk]:
        """``chunks``' rows as frames of kind ``frame``: made as pandas frames and converted (TSBS's), or read
        straight into that kind (a file's)."""

    def table_rows(self, spec: DatasetSpec, table: str | None = None) -> dict[str, int]:
        """Rows per table of what a run of ``spec`` sends."""

    def rows(self, spec: DatasetSpec) -> int:
        """Rows of the whole of what a run sends (a data set's, as its flags count them, every group's)."""

    def memory_needed(self, spec: DatasetSpec, chunk_rows: int) -> int:
        """Bytes a run needs for the source's state and a chunk of ``chunk_rows`` rows in flight."""

    def seed(self, spec: DatasetSpec) -> int | None:
        """The seed its rows were drawn from (None: they were not drawn)."""

    def mode(self, spec: DatasetSpec, kind: str, threads: str, op: str, fields: FieldType) -> str:
        """The run's name in a few words (it also names the default results file): ``kind`` (serialize, send,
        sink) and ``threads`` (1t, 2w) as the run says them, ``op`` and ``fields`` where they apply."""

    def variant(self, convert_dtypes: bool, path: SendPath) -> Source:
        """The same rows, typed as a run with the dtype audit's conversions (``convert_dtypes``) sends them by the way
        in ``path`` (ILP under a protocol version, or QWP handed frames of a kind; itself where that changes
        nothing): a tuning sweep's setting."""

    def describe(self) -> list[str]:
        """The lines a run prints of it before anything is sent (how it was read, its dtypes): none where there is
        nothing to say."""

    def record_parameters(self, spec: DatasetSpec, parameters: dict) -> dict:
        """``parameters`` (the run's flags) as the record keeps them for this source: what it really sent."""

    def reading_code(self, frame: FrameKind) -> ReadingCode | None:
        """How a user's own script reads it as a run did, into frames of kind ``frame`` (the tuning sweep prints the
        script that sends it); None where no user's code would (TSBS's data sets are the harness's)."""
