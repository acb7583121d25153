"""The open loop's flags (``bench --rate``, ``OpenLoopOptions``: ``BenchOptions`` inherits them) and the plan they
resolve into (``OpenLoopPlan``), checked once, at the door, each bad value a UsageError naming its flag."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from harness.errors import ParameterError, UsageError
from harness.open_loop.inputs import OpenLoopPlan, PacedQueryPlan
from harness.open_loop.made_ahead import AHEAD_MIB, AHEAD_ROWS, ChunksAhead
from harness.open_loop.thresholds import Threshold
from harness.options.declare import option
from harness.tsbs import params

# How long an open loop's chunks in flight at the schedule's end have to finish (k6's gracefulStop: 30 s).
DEFAULT_GRACE = "10s"


@dataclass
class OpenLoopOptions:
    """An open loop (``bench --rate``): rows sent at a fixed rate, every latency from a chunk's intended time."""

    rate: str | None = option(None, "Send at this many rows per second, in an open loop: each chunk at its own "
                                    "intended time, a late one sent late (none after the schedule's end), every "
                                    "latency from its intended time; into QuestDB, a probe measures each chunk's "
                                    "freshness (intended time to visible to a query). A:B:STEP ramps from A to B "
                                    "rows/s, --duration at each rate after a closed-loop step, and names the knee: "
                                    "the highest rate held with freshness p99 under --slo.")
    duration: str | None = option(None, "With --rate: how long the schedule runs, a Go duration (30s, 5m): then no "
                                        "chunk starts, and the rows left are never sent (unsent_rows). Default: "
                                        "until the data set ends (--row-count).")
    grace: str | None = option(None, "With --rate: how long the chunks in flight when the schedule ends have to "
                                     "finish, and the freshness probe to see what was sent, a Go duration. "
                                     f"Default: {DEFAULT_GRACE}.")
    search: bool = option(False, "With --rate A:B: find the knee by bisection between A and B, after a closed-loop "
                                 "step: each probe holds its rate for --duration, and the search stops when the "
                                 "lowest rate missed is within --search-resolution of the highest held.",
                          flags=("--search",))
    search_resolution: float = option(0.05, "With --search: how close (a share of the rate held) the lowest rate "
                                            "missed must come to the highest held.", min=0, min_open=True, max=1)
    repeat: int = option(1, "With --search: run the whole search this many times, each after a closed-loop step of "
                            "its own; the knee is their median, given with the lowest and highest.", min=1)
    chunks_ahead: ChunksAhead = option(ChunksAhead.process, "With --rate: who makes the chunks ahead of their time: a "
                                                            "process of their own (at most "
                                                            f"{AHEAD_ROWS:,} rows or {AHEAD_MIB} MiB ahead), whose "
                                                            "work never holds the scheduling threads, or a thread "
                                                            "of the scheduling process.")
    slo: str = option("1s", "With a ramp (--rate A:B:STEP) or --search: the freshness p99 a rate must stay under to "
                            "count as held, a Go duration.")
    probe_interval: str = option("50ms", "With --rate into QuestDB: time between the freshness probe's counts (one "
                                         "count() per table each), a Go duration.")
    queries: str | None = option(None, "With --rate: run this query file's queries (as `queries generate` writes "
                                       "them) beside the ingest, at --query-rate, each timed from its intended "
                                       "start.")
    query_rate: float | None = option(None, "With --queries: queries per second (the file's queries in turn, again "
                                            "from the first when they run out).", min=0, min_open=True)
    query_protocol: str = option("pgwire", "With --queries: pgwire or http.")
    query_connections: int = option(2, "With --queries: connections the queries share.", min=1)
    threshold: list[str] | None = option(None, "With --rate: a figure the run must meet, k6-style: "
                                               "'freshness_p99<1s', 'ack_p99<200ms', 'max_backlog<50000', "
                                               "'rate_sustained' (repeat the flag for several). The run exits 1, a "
                                               "line per failed threshold, unless all hold.")

    @property
    def open_loop(self) -> bool:
        return self.rate is not None

    @property
    def ramp(self) -> bool:
        """Whether --rate steps from one rate to another (A:B:STEP), or --search finds the knee between two (A:B):
        either measures the closed-loop rate first and names a knee."""
        return self.rate is not None and ":" in self.rate

    def thresholds(self) -> list[Threshold]:
        return [Threshold.parse(text) for text in self.threshold or ()]

    def check_open_loop(self) -> None:
        """--rate's values, and its companions only with it; each a UsageError naming the flag."""
        if not self.open_loop:
            given = [flag for flag, value in (("--duration", self.duration), ("--grace", self.grace),
                                              ("--search", self.search), ("--threshold", self.threshold),
                                              ("--queries", self.queries), ("--query-rate", self.query_rate)) if value]
            if given:
                raise UsageError(f"{given[0]} belongs to an open-loop run: add --rate ROWS_PER_SECOND")
            return
        self.resolve_open_loop()

    def resolve_open_loop(self) -> OpenLoopPlan:
        """These flags resolved (an open loop's: --rate given); a UsageError naming the flag of a bad value, or of
        a companion missing."""
        rates = self._rates()
        slo = _duration_seconds(self.slo, "--slo")
        probe = _duration_seconds(self.probe_interval, "--probe-interval")
        grace = _duration_seconds(self.grace or DEFAULT_GRACE, "--grace")
        thresholds = tuple(self.thresholds())
        queries = self._queries_beside()
        if self.repeat > 1 and not self.search:
            raise UsageError("--repeat runs a --search again: add --search (and --rate LOW:HIGH)")
        if self.ramp and self.duration is None:
            raise UsageError(f"--rate {self.rate} holds each rate for --duration: give one (e.g. --duration 30s)")
        duration = None if self.duration is None else _duration_seconds(self.duration, "--duration")
        return OpenLoopPlan(tuple(rates), self.ramp, duration, grace, slo, probe, self.search, self.search_resolution,
                            self.repeat, self.chunks_ahead, thresholds, queries)

    def _rates(self) -> list[float]:
        """The rates to hold, rows per second: --rate's one, or each step of its ramp, or --search's two ends; a
        UsageError unless each is a positive, finite number, a ramp's steps land on its end and a search's
        range rises."""
        if self.search:
            parts = (self.rate or "").split(":")
            if len(parts) != 2:
                raise UsageError(f"--search bisects between two rates: give --rate LOW:HIGH (rows per second), got "
                                 f"--rate {self.rate!r}")
            low, high = (_rate(part) for part in parts)
            if high <= low:
                raise UsageError(f"--rate {self.rate!r}: a search's range rises, LOW:HIGH")
            return [low, high]
        if not self.ramp:
            return [_rate(self.rate)]
        parts = self.rate.split(":")
        if len(parts) != 3:
            raise UsageError(f"--rate {self.rate!r}: a ramp is FIRST:LAST:STEP rows per second, e.g. "
                             f"100000:400000:50000")
        first, last, step = (_rate(part) for part in parts)
        steps = (last - first) / step
        if last <= first or abs(steps - round(steps)) > 1e-9:
            raise UsageError(f"--rate {self.rate!r}: the steps of {step:g} from {first:g} must land on {last:g}, "
                             f"above it")
        return [first + index * step for index in range(round(steps) + 1)]

    def _queries_beside(self) -> PacedQueryPlan | None:
        """--queries with its rate, protocol and connections (None without them)."""
        if (self.queries is None) != (self.query_rate is None):
            raise UsageError("--queries FILE and --query-rate Q go together: the queries beside the ingest, and how "
                             "many a second")
        if self.queries is not None and not os.path.isfile(self.queries):
            raise UsageError(f"--queries {self.queries}: no such file")
        if self.query_protocol not in ("pgwire", "http"):
            raise UsageError(f"--query-protocol must be pgwire or http, got {self.query_protocol!r}")
        if self.queries is None:
            return None
        return PacedQueryPlan(self.queries, self.query_rate, self.query_protocol, self.query_connections)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"--rate must be a positive number of rows per second, got {text!r}")
    return value


def _duration_seconds(text: str, flag: str) -> float:
    """A positive Go duration in seconds; a UsageError naming ``flag`` otherwise."""
    try:
        seconds = params.parse_go_duration_ns(text, flag) / 1e9
    except ParameterError:
        raise UsageError(f"{flag} must be a duration such as 30s, 5m or 250ms, got {text!r}") from None
    if seconds <= 0:
        raise UsageError(f"{flag} must be longer than zero, got {text!r}")
    return seconds
