"""TSBS's simulated hosts, shared by every use case that has them (cpu-only, devops): their ten tags, the
values each tag draws from, the host table, and the tag and timestamp columns of a chunk's DataFrame.

Which tag value a host gets is drawn by a use case's own kernels (``kernels.draw_host_tags``); this module
holds what those draws index into and how a chunk's rows become columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from harness.tsbs.choices import SymbolDtype
from harness.tsbs.params import DatasetSpec

# pandas is imported only where frames are made: `generate --fields long` prints text straight from the walk
# and starts sooner without it.
if TYPE_CHECKING:
    import pandas as pd

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
        objects: the client then serializes the column without taking the GIL, so serializer threads scale."""
        import pandas as pd

        return {tag: pd.CategoricalDtype(pd.Index(values, dtype="string[pyarrow]"))
                for tag, values in self.values.items()}

    def strings(self, tag: str) -> list[str]:
        """Every host's value of ``tag``, host by host."""
        values = self.values[tag]
        return [values[code] for code in self.codes[tag].tolist()]


def _code_dtype(cardinality: int) -> type:
    return np.int8 if cardinality < 2**7 else np.int16 if cardinality < 2**15 else np.int32


def host_table(scale: int, tag_codes: np.ndarray) -> Hosts:
    """The table of ``scale`` hosts whose drawn tag codes (every tag but hostname) are ``tag_codes``."""
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


def host_tag_columns(hosts: Hosts, host: np.ndarray, symbol_dtype: str) -> dict[str, object]:
    """The ten host tags of rows of hosts ``host``, as columns of ``symbol_dtype``."""
    return {tag: symbol_column(hosts.codes[tag][host], hosts.categories[tag], symbol_dtype) for tag in TAG_COLUMNS}


def symbol_column(codes: np.ndarray, categories: pd.CategoricalDtype, symbol_dtype: str) -> object:
    """A tag column of ``codes`` into ``categories``, held as ``symbol_dtype``."""
    import pandas as pd

    categorical = pd.Categorical.from_codes(codes, dtype=categories, validate=False)
    if symbol_dtype == SymbolDtype.category:
        return categorical
    if symbol_dtype == SymbolDtype.object:
        return np.asarray(categorical, dtype=object)
    return categorical.astype(str(symbol_dtype))


def timestamp_column(spec: DatasetSpec, epoch: np.ndarray) -> pd.DatetimeIndex:
    """The timestamps of rows of epochs ``epoch``."""
    return utc_timestamps(spec.start_ns + epoch * spec.interval_ns)


def utc_timestamps(ns: np.ndarray) -> pd.DatetimeIndex:
    """Nanoseconds since the epoch as a frame's timestamp column: ``datetime64[ns]`` without a zone, UTC by
    convention, as the original benchmark's frames and as the client reads it. Not zone-aware: the client
    turns a zone-aware column into arrow in every ``dataframe()`` call with the GIL held, which two serializing
    threads then wait for (zone-less, paired: 1.04x at two workers;
    results/reference/2026-11-24-parity/timestamp-zone-ab/)."""
    import pandas as pd

    return pd.DatetimeIndex(ns.view("datetime64[ns]"))
