"""What data set to generate: TSBS's flags (seed, scale, time range, interval, row limit), parsed and checked.

Parsing follows the Go tool: timestamps are RFC 3339 (``time.Parse(time.RFC3339, ...)``), the interval
is a Go duration (``time.ParseDuration``: ``10s``, ``1m30s``, ``500ms``). Every bad value raises
``harness.errors.ParameterError`` naming the parameter and the problem. Which use case, and so how many
rows a host gives per epoch, is the registry's to say (``harness.tsbs.use_cases.make_spec``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from harness.errors import ParameterError

DEFAULT_TIMESTAMP_START = "2016-01-01T00:00:00Z"
DEFAULT_TIMESTAMP_END = "2016-01-02T00:00:00Z"
DEFAULT_LOG_INTERVAL = "10s"

# The parameters that choose a TSBS data set (``bench``'s flags of the same names): what a run of another source
# (the user's data) neither takes nor records.
DATA_SET_PARAMETERS = ("use_case", "seed", "scale", "timestamp_start", "timestamp_end", "log_interval", "fields",
                       "time_ordered", "interleaved_generation_group_id", "interleaved_generation_groups", "row_count",
                       "symbol_dtype")

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# The last instant whose nanoseconds since 1970 fit in int64 (2262-04-11T23:47:16.854775807Z).
LATEST_TIMESTAMP_NS = INT64_MAX

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$"
)
_DURATION_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION_TERM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_rfc3339_ns(text: str, parameter: str = "timestamp") -> int:
    """Nanoseconds since the Unix epoch of an RFC 3339 timestamp, exactly (no float rounding)."""
    match = _RFC3339.match(text.strip())
    if not match:
        raise ParameterError(parameter, f"cannot parse {text!r} as an RFC 3339 timestamp (e.g. 2016-01-01T00:00:00Z)")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError as exc:
        raise ParameterError(parameter, f"{text!r} is not a valid date and time ({exc})") from None
    seconds = int((moment - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds())
    nanos = int(fraction[1:].ljust(9, "0")) if fraction else 0
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset_hours, offset_minutes = int(zone[1:3]), int(zone[4:6])
        seconds -= sign * (offset_hours * 3600 + offset_minutes * 60)
    return seconds * 1_000_000_000 + nanos


def parse_go_duration_ns(text: str, parameter: str = "log_interval") -> int:
    """Nanoseconds of a Go duration string such as ``10s``, ``1m30s`` or ``1.5h``."""
    body = text.strip()
    sign = 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    position, total = 0, 0
    for match in _DURATION_TERM.finditer(body):
        if match.start() != position:
            break
        number, unit = match.groups()
        whole, _, fraction = number.partition(".")
        scale = _DURATION_UNITS_NS[unit]
        total += int(whole or 0) * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        position = match.end()
    if not body or position != len(body):
        raise ParameterError(parameter, f"cannot parse {text!r} as a duration (e.g. 10s, 1m, 500ms)")
    return sign * total


@dataclass(frozen=True)
class DatasetSpec:
    """One TSBS data set: which rows, in which order, from which seed.

    ``row_limit`` caps the rows like TSBS's ``--max-data-points``: generation stops after that many
    rows even inside an epoch. ``None`` means every epoch of the time range. ``measurements_per_host`` is
    the rows a host gives per epoch (one per measurement its use case simulates).
    """

    use_case: str
    seed: int
    scale: int
    start_ns: int
    end_ns: int
    interval_ns: int
    row_limit: int | None = None
    measurements_per_host: int = 1
    # Each table's rows handed out in time order instead of TSBS's (only iot's differ: TSBS sends some late).
    time_ordered: bool = False
    # TSBS's interleaved generation group: of the data set's lines, in TSBS's order over all tables, this
    # spec holds those whose index i has ``i % groups == group`` (``harness.tsbs.groups``); the row limit
    # counts the whole data set's rows, before the split.
    group: int = 0
    groups: int = 1

    @property
    def epochs(self) -> int:
        return (self.end_ns - self.start_ns) // self.interval_ns

    @property
    def rows_per_epoch(self) -> int:
        return self.scale * self.measurements_per_host

    @property
    def row_count(self) -> int:
        """Rows of the whole data set (every group's)."""
        full = self.epochs * self.rows_per_epoch
        return full if self.row_limit is None else min(full, self.row_limit)

    @property
    def grouped(self) -> bool:
        """Whether this spec is one group of several (a part of the data set)."""
        return self.groups > 1

    @property
    def whole(self) -> DatasetSpec:
        """The whole data set this spec's group is part of (itself when it is not grouped)."""
        return replace(self, group=0, groups=1) if self.grouped else self


def random_seed() -> int:
    """A seed for a run that was given none: printed and recorded so the run can be repeated."""
    # The OS's randomness, as ``secrets`` draws it (whose import, through hmac and hashlib, costs every
    # command's start-up 5 ms).
    return int.from_bytes(os.urandom(8), "little") >> 1


def make_spec(
    *,
    use_case: str,
    measurements_per_host: int,
    seed: int | None = None,
    scale: int = 4000,
    timestamp_start: str = DEFAULT_TIMESTAMP_START,
    timestamp_end: str | None = DEFAULT_TIMESTAMP_END,
    log_interval: str = DEFAULT_LOG_INTERVAL,
    row_limit: int | None = None,
    time_ordered: bool = False,
    interleaved_generation_group_id: int = 0,
    interleaved_generation_groups: int = 1,
) -> DatasetSpec:
    """Check TSBS-style flags and build the spec; ``timestamp_end=None`` with a ``row_limit`` means
    "as many epochs as the rows need"."""
    if scale <= 0:
        raise ParameterError("scale", f"must be a positive number of hosts, got {scale}")
    if seed is not None and not INT64_MIN <= seed <= INT64_MAX:
        raise ParameterError("seed", f"must fit in a signed 64-bit integer (as TSBS's), got {seed}")
    if row_limit is not None and row_limit <= 0:
        raise ParameterError("row_limit", f"must be positive, got {row_limit}")
    check_group(interleaved_generation_group_id, interleaved_generation_groups)
    start_ns = parse_rfc3339_ns(timestamp_start, "timestamp_start")
    interval_ns = parse_go_duration_ns(log_interval)
    if not 0 < interval_ns <= INT64_MAX:
        raise ParameterError("log_interval", f"must be positive and under 292 years, got {log_interval!r}")
    if timestamp_end is None:
        if row_limit is None:
            raise ParameterError("timestamp_end", "give an end of the range or a row count")
        end_ns = start_ns + -(-row_limit // (scale * measurements_per_host)) * interval_ns
    else:
        end_ns = parse_rfc3339_ns(timestamp_end, "timestamp_end")
    for parameter, moment in (("timestamp_start", start_ns), ("timestamp_end", end_ns)):
        if not 0 <= moment <= LATEST_TIMESTAMP_NS:
            raise ParameterError(parameter, "must lie between 1970-01-01 and 2262-04-11 (nanoseconds since 1970 "
                                            "in a signed 64-bit integer)")
    if end_ns <= start_ns:
        raise ParameterError("timestamp_end", f"{timestamp_end} must be after the start of the range "
                                              f"({timestamp_start})")
    if (end_ns - start_ns) // interval_ns == 0:
        raise ParameterError("log_interval", f"the time range is shorter than one interval ({log_interval}): no rows")
    if seed is None:
        seed = random_seed()
    return DatasetSpec(use_case, seed, scale, start_ns, end_ns, interval_ns, row_limit, measurements_per_host,
                       time_ordered, interleaved_generation_group_id, interleaved_generation_groups)


def check_group(group: int, groups: int) -> None:
    """Refuse what TSBS's ValidateGroups refuses (no groups, an id past the last group), and negatives, which
    its unsigned flags cannot take."""
    if groups <= 0:
        raise ParameterError("interleaved_generation_groups", f"incorrect interleaved groups configuration: "
                                                              f"total groups = {groups} (at least 1)")
    if group < 0:
        raise ParameterError("interleaved_generation_group_id", f"must be 0 or more, got {group}")
    if group >= groups:
        raise ParameterError("interleaved_generation_group_id", f"incorrect interleaved groups configuration: "
                                                                f"id {group} >= total groups {groups}")
