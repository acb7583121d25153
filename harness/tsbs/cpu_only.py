"""TSBS's ``cpu-only`` use case: the hosts, their tags, and the clamped random walks, as pandas DataFrames
(``frames``) or as TSBS's own text (``text_jobs``).

Owns the exact order in which TSBS draws from Go's source (see ``gorand``):

1. Every host 0..scale-1 is created before any row: 10 x ``Float64()*100`` (initial walk states in
   field order), region ``Intn(9)``, datacenter ``Intn(len(region's datacenters))``, rack
   ``Int63n(100)``, arch ``Intn(2)``, os ``Intn(3)``, service ``Int63n(20)``, service_version
   ``Int63n(2)``, service_environment ``Intn(3)``, team ``Intn(4)``.
2. Rows are time-major: epoch k holds host_0 .. host_{scale-1} at ``start + k*interval``. The first
   epoch shows the initial states; before each later epoch every host advances, host by host and
   field by field: ``state += NormFloat64()``, then clamped to [0, 100].

``frames(spec, chunk_rows)`` yields DataFrames of exactly ``chunk_rows`` rows (the last may be
shorter), so memory stays bounded however many rows are asked for; any chunk size concatenates to
the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING

import numpy as np
import psutil

from harness.errors import UsageError
from harness.options import FieldType, SymbolDtype
from harness.tsbs.gorand_seed import seeded_source
from harness.tsbs.ilp_text import RowPrinter
from harness.tsbs.kernel_cache import generator_kernels
from harness.tsbs.params import CPU_ONLY, DatasetSpec
from harness.tsbs.schema import TIMESTAMP_COLUMN, TableSchema

# pandas is imported only where frames are made: `generate --fields long` prints text straight from the walk
# (``text_jobs``) and starts about 0.2 s sooner without it.
if TYPE_CHECKING:
    import pandas as pd

TABLE_NAME = "cpu"
TAG_COLUMNS = (
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
)
FIELD_COLUMNS = (
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
)
COLUMNS = TAG_COLUMNS + FIELD_COLUMNS + (TIMESTAMP_COLUMN,)
FIELD_SQL_TYPES = {FieldType.double: "DOUBLE", FieldType.long: "LONG"}

FIELD_TYPES = tuple(FieldType)
# category: pandas Categorical (int codes + a small dictionary of Arrow strings): the client reads it
# without the GIL and each distinct string is encoded once. The others exist to compare against it.
SYMBOL_DTYPES = tuple(SymbolDtype)
# dataframe() costs ~2 ms per call whatever the rows (per-column set-up), so chunks should be large;
# but a chunk's ILP copy must stay under glibc's 32 MiB mmap ceiling (100k rows ~ 34 MB of long ILP
# is mmapped and zeroed anew every time). Measured on 2 cores, long, M rows/s: 20k 1.64, 50k 1.80,
# 80k 1.85, 100k 1.40. 50k leaves room for double's longer lines.
DEFAULT_CHUNK_ROWS = 50_000

REGIONS = (
    ("us-east-1", "abce"),
    ("us-west-1", "ab"),
    ("us-west-2", "abc"),
    ("eu-west-1", "abc"),
    ("eu-central-1", "ab"),
    ("ap-southeast-1", "ab"),
    ("ap-southeast-2", "ab"),
    ("ap-northeast-1", "ac"),
    ("sa-east-1", "abc"),
)
ARCHES = ("x64", "x86")
OSES = ("Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10")
SERVICE_ENVIRONMENTS = ("production", "staging", "test")
TEAMS = ("SF", "NYC", "LON", "CHI")
RACK_COUNT = 100
SERVICE_COUNT = 20
SERVICE_VERSION_COUNT = 2

DATACENTERS = tuple(region + letter for region, letters in REGIONS for letter in letters)
DATACENTER_OFFSETS = np.cumsum([0] + [len(letters) for _, letters in REGIONS])[:-1].astype(np.int64)
DATACENTER_COUNTS = np.array([len(letters) for _, letters in REGIONS], dtype=np.int64)

# Columns of the host table's tag codes, as ``kernels.create_hosts`` fills them: every tag but hostname.
HOST_TAG_DRAWS = len(TAG_COLUMNS) - 1


@dataclass(frozen=True)
class Hosts:
    """The host table: per-host tag codes into each tag's values (tags never change for a host)."""

    scale: int
    codes: dict[str, np.ndarray]
    values: dict[str, list[str]]

    @cached_property
    def categories(self) -> dict[str, pd.CategoricalDtype]:
        """Each tag's values as a pandas categorical dtype, held as Arrow strings rather than Python str
        objects: the client then serializes the column without taking the GIL, so serializer threads scale
        (measured: 2.00 vs 1.79 M rows/s on 2 threads)."""
        import pandas as pd

        return {tag: pd.CategoricalDtype(pd.Index(values, dtype="string[pyarrow]"))
                for tag, values in self.values.items()}

    def strings(self, tag: str) -> list[str]:
        """Every host's value of ``tag``, host by host."""
        values = self.values[tag]
        return [values[code] for code in self.codes[tag].tolist()]


def _code_dtype(cardinality: int) -> type:
    return np.int8 if cardinality < 2**7 else np.int16 if cardinality < 2**15 else np.int32


class CpuOnlySimulator:
    """Stateful TSBS cpu-only simulator: hosts are created on construction, then ``next_values``
    hands out the walk states of consecutive epochs."""

    def __init__(self, spec: DatasetSpec):
        if spec.use_case != CPU_ONLY:
            raise UsageError(f"unknown use case {spec.use_case!r}")
        self.spec = spec
        self._kernels = generator_kernels()
        self._words, self._cursor = seeded_source(spec.seed)
        self._states = np.empty((spec.scale, 10), dtype=np.float64)
        tag_codes = np.empty((spec.scale, HOST_TAG_DRAWS), dtype=np.int64)
        self._kernels.create_hosts(self._words, self._cursor, spec.scale, DATACENTER_OFFSETS, DATACENTER_COUNTS,
                                   self._states, tag_codes)
        self.hosts = host_table(spec.scale, tag_codes)
        self._epochs_emitted = 0

    def next_values(self, epochs: int) -> np.ndarray:
        """Walk states of the next ``epochs`` epochs: shape (10, epochs*scale), rows time-major."""
        values = np.empty((10, epochs * self.spec.scale), dtype=np.float64)
        self._kernels.walk_epochs(self._words, self._cursor, self._states, self._epochs_emitted > 0, values)
        self._epochs_emitted += epochs
        return values


def host_table(scale: int, tag_codes: np.ndarray) -> Hosts:
    category_values = {
        "hostname": [f"host_{n}" for n in range(scale)],
        "region": [region for region, _ in REGIONS],
        "datacenter": list(DATACENTERS),
        "rack": [str(n) for n in range(RACK_COUNT)],
        "os": list(OSES),
        "arch": list(ARCHES),
        "team": list(TEAMS),
        "service": [str(n) for n in range(SERVICE_COUNT)],
        "service_version": [str(n) for n in range(SERVICE_VERSION_COUNT)],
        "service_environment": list(SERVICE_ENVIRONMENTS),
    }
    codes = {"hostname": np.arange(scale, dtype=_code_dtype(scale))}
    for column, tag in enumerate(TAG_COLUMNS[1:]):
        codes[tag] = tag_codes[:, column].astype(_code_dtype(len(category_values[tag])))
    return Hosts(scale, codes, category_values)


def frames(
    spec: DatasetSpec,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    fields: str = "double",
    symbol_dtype: str = "category",
    first_chunk_rows: int | None = None,
) -> Iterator[pd.DataFrame]:
    """DataFrames of ``chunk_rows`` consecutive rows of the data set (the last one may be shorter); the
    first one of ``first_chunk_rows`` if given and smaller (so that a stream's first bytes come sooner).

    ``fields='long'`` gives TSBS's printed values (each state truncated to int64); ``'double'`` the
    walk states themselves. Tags, timestamps and row order are the same in both.
    """
    check_frame_options(chunk_rows, fields, symbol_dtype)
    simulator = CpuOnlySimulator(spec)
    for first_row, values in _walk_chunks(simulator, chunk_rows, first_chunk_rows):
        yield _frame(spec, simulator.hosts, first_row, values, fields, symbol_dtype)


def text_jobs(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS,
              first_chunk_rows: int | None = None) -> Iterator[Callable[[], tuple[int, list]]]:
    """TSBS's own bytes (``--fields long``) of the chunks ``frames`` would give, as jobs that each print
    one chunk (``ilp_text``) and return (rows, [its bytes]); the walk itself runs as the iterator advances,
    so a pool can print earlier chunks meanwhile (``ingest.ordered_write``)."""
    check_frame_options(chunk_rows, FieldType.long, SymbolDtype.category)
    simulator = CpuOnlySimulator(spec)
    printer = RowPrinter(TABLE_NAME, {tag: simulator.hosts.strings(tag) for tag in TAG_COLUMNS}, FIELD_COLUMNS,
                         spec.start_ns, spec.interval_ns)
    for first_row, values in _walk_chunks(simulator, chunk_rows, first_chunk_rows):
        yield partial(_printed, printer, first_row, values)


def _printed(printer: RowPrinter, first_row: int, values: np.ndarray) -> tuple[int, list]:
    return values.shape[1], [printer.print_rows(first_row, values)]


def _walk_chunks(simulator: CpuOnlySimulator, chunk_rows: int,
                 first_chunk_rows: int | None) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, walk states of the chunk's rows: shape (10, rows)) of consecutive chunks, as ``frames``
    cuts them."""
    spec = simulator.spec
    scale, total_rows = spec.scale, spec.row_count
    chunk_rows = min(chunk_rows, total_rows)  # a chunk larger than the run would only allocate emptiness
    check_memory(scale, chunk_rows)
    first_chunk_rows = min(first_chunk_rows or chunk_rows, chunk_rows)
    pending: list[np.ndarray] = []  # value blocks not yet handed out, oldest first
    pending_rows = 0
    first_row = 0
    while first_row < total_rows:
        rows = min(chunk_rows if first_row else first_chunk_rows, total_rows - first_row)
        if pending_rows < rows:
            # The epochs this chunk still lacks, walked in one call (the walk does not care how it is cut).
            block = simulator.next_values(-(-(rows - pending_rows) // scale))
            pending.append(block)
            pending_rows += block.shape[1]
        values = pending[0] if len(pending) == 1 else np.concatenate(pending, axis=1)
        chunk_values, rest = values[:, :rows], values[:, rows:]
        pending, pending_rows = ([rest] if rest.shape[1] else []), rest.shape[1]
        yield first_row, chunk_values
        first_row += rows


def chunks(spec: DatasetSpec, chunk_rows: int = DEFAULT_CHUNK_ROWS, fields: str = "double",
           symbol_dtype: str = "category", table: str = TABLE_NAME,
           first_chunk_rows: int | None = None) -> Iterator[dict[str, pd.DataFrame]]:
    """``frames`` as chunks of the ingest layer: each maps the table to its rows."""
    for frame in frames(spec, chunk_rows, fields, symbol_dtype, first_chunk_rows):
        yield {table: frame}


def schema(fields: str, table: str = TABLE_NAME) -> TableSchema:
    """The cpu table: 10 SYMBOL tags, 10 fields DOUBLE (``double``) or LONG (``long``)."""
    if fields not in FIELD_TYPES:
        raise UsageError(f"--fields must be one of {', '.join(FIELD_TYPES)}, got {fields!r}")
    return TableSchema(table, TAG_COLUMNS, tuple((name, FIELD_SQL_TYPES[fields]) for name in FIELD_COLUMNS),
                       series_tags=("hostname",))


# Bytes a host costs (walk states, tag codes, category codes) and a row of a chunk in flight (its values,
# row index, tag codes, timestamps, plus pandas' copies), measured with margin.
_BYTES_PER_HOST = 400
_BYTES_PER_CHUNK_ROW = 600


def check_memory(scale: int, chunk_rows: int, bytes_per_host: int = _BYTES_PER_HOST,
                 bytes_per_chunk_row: int = _BYTES_PER_CHUNK_ROW) -> None:
    """Refuse, in one line, a scale or chunk size this machine's free memory cannot hold (the costs per host
    and per row are cpu-only's unless a use case gives its own)."""
    needed = scale * bytes_per_host + chunk_rows * bytes_per_chunk_row
    available = psutil.virtual_memory().available
    if needed > available:
        raise UsageError(f"--scale {scale} with chunks of {chunk_rows} rows needs about {needed / 2**30:.1f} GiB; "
                         f"{available / 2**30:.1f} GiB of memory is available")


def check_frame_options(chunk_rows: int, fields: str, symbol_dtype: str) -> None:
    if chunk_rows <= 0:
        raise UsageError(f"the chunk size must be a positive number of rows, got {chunk_rows}")
    if fields not in FIELD_TYPES:
        raise UsageError(f"--fields must be one of {', '.join(FIELD_TYPES)}, got {fields!r}")
    if symbol_dtype not in SYMBOL_DTYPES:
        raise UsageError(f"--symbol-dtype must be one of {', '.join(SYMBOL_DTYPES)}, got {symbol_dtype!r}")


def _frame(
    spec: DatasetSpec, hosts: Hosts, first_row: int, values: np.ndarray, fields: str, symbol_dtype: str
) -> pd.DataFrame:
    """``values``' rows as a cpu frame; ``first_row`` counts the measurement's rows (epoch-major)."""
    import pandas as pd

    rows = values.shape[1]
    row_index = np.arange(first_row, first_row + rows, dtype=np.int64)
    epoch, host = np.divmod(row_index, spec.scale)
    columns = host_tag_columns(hosts, host, symbol_dtype)
    field_values = values.astype(np.int64) if fields == "long" else values
    for position, field in enumerate(FIELD_COLUMNS):
        columns[field] = field_values[position]
    columns[TIMESTAMP_COLUMN] = timestamp_column(spec, epoch)
    return pd.DataFrame(columns, copy=False)


def host_tag_columns(hosts: Hosts, host: np.ndarray, symbol_dtype: str) -> dict[str, object]:
    """The ten host tags of rows of hosts ``host``, as columns of ``symbol_dtype``."""
    return {tag: symbol_column(hosts.codes[tag][host], hosts.categories[tag], symbol_dtype) for tag in TAG_COLUMNS}


def symbol_column(codes: np.ndarray, categories: pd.CategoricalDtype, symbol_dtype: str) -> object:
    import pandas as pd

    categorical = pd.Categorical.from_codes(codes, dtype=categories, validate=False)
    return categorical if symbol_dtype == "category" else _as_strings(categorical, symbol_dtype)


def timestamp_column(spec: DatasetSpec, epoch: np.ndarray) -> pd.DatetimeIndex:
    import pandas as pd

    timestamps_ns = spec.start_ns + epoch * spec.interval_ns
    return pd.DatetimeIndex(timestamps_ns.view("datetime64[ns]")).tz_localize("UTC")


def _as_strings(categorical: pd.Categorical, symbol_dtype: str) -> object:
    return np.asarray(categorical, dtype=object) if symbol_dtype == "object" else categorical.astype(str(symbol_dtype))
