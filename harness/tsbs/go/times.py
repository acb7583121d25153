"""Go's time text and TSBS's random time windows, as the query generator prints and draws them.

TSBS labels its queries with Go's ``time.Duration.String()`` (``1h0m0s``), writes timestamps with
``time.Format(time.RFC3339)`` (whole seconds, fraction dropped; its TimescaleDB queries keep microseconds), and picks each query's window with
``TimeInterval.RandWindow``: one ``rand.Int63n`` over the room left before the range's end.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from harness.tsbs.go.rand import GoRand

_NS_PER_SECOND = 1_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _with_fraction(value: int, digits: int) -> str:
    whole, fraction = divmod(value, 10**digits)
    if not fraction:
        return str(whole)
    return f"{whole}.{str(fraction).rjust(digits, '0').rstrip('0')}"


def go_duration_string(ns: int) -> str:
    """``time.Duration(ns).String()``: ``1h0m0s``, ``12h0m1s``, ``1.5s``, ``500ms``, ``0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    magnitude = abs(ns)
    if magnitude < _NS_PER_SECOND:
        # Go switches to the largest sub-second unit that keeps a non-zero whole part.
        if magnitude < 1_000:
            return f"{sign}{magnitude}ns"
        if magnitude < 1_000_000:
            return f"{sign}{_with_fraction(magnitude, 3)}µs"
        return f"{sign}{_with_fraction(magnitude, 6)}ms"
    total_seconds, fraction = divmod(magnitude, _NS_PER_SECOND)
    text = _with_fraction((total_seconds % 60) * _NS_PER_SECOND + fraction, 9) + "s"
    minutes = total_seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        hours = minutes // 60
        if hours:
            text = f"{hours}h{text}"
    return sign + text


def rfc3339_seconds(ns: int) -> str:
    """``time.Unix(0, ns).UTC().Format(time.RFC3339)``: whole seconds, the fraction dropped."""
    moment = _EPOCH + timedelta(seconds=ns // _NS_PER_SECOND)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micros(ns: int) -> str:
    """RFC 3339 with the fraction TSBS's TimescaleDB queries print (Go's ``.999999``: truncated to the
    microsecond, trailing zeros dropped): ``2016-01-01T17:16:22.646325Z``, ``2016-01-01T00:00:00Z``."""
    whole = rfc3339_seconds(ns)
    micros = ns % _NS_PER_SECOND // 1000
    return whole if not micros else f"{whole[:-1]}.{micros:06d}".rstrip("0") + "Z"


class WindowTooLarge(ValueError):
    """The asked-for window does not fit strictly inside the time range (TSBS panics with this text)."""


@dataclass(frozen=True)
class TimeWindow:
    """A half-open span of Unix nanoseconds."""

    start_ns: int
    end_ns: int

    @property
    def start_string(self) -> str:
        return rfc3339_seconds(self.start_ns)

    @property
    def end_string(self) -> str:
        return rfc3339_seconds(self.end_ns)


def check_window_fits(range_start_ns: int, range_end_ns: int, window_ns: int) -> None:
    """Raise ``WindowTooLarge`` with TSBS's words when ``rand_window`` could not place the window."""
    if range_end_ns - window_ns <= range_start_ns:
        raise WindowTooLarge(
            "random window equal to or larger than TimeInterval: "
            f"window {go_duration_string(window_ns)}, interval {go_duration_string(range_end_ns - range_start_ns)}"
        )


def window_refusal(query_type: str, range_start_ns: int, range_end_ns: int, window_ns: int) -> str | None:
    """TSBS's words for a query type whose window does not fit the range (see ``check_window_fits``); None
    if it fits."""
    try:
        check_window_fits(range_start_ns, range_end_ns, window_ns)
    except WindowTooLarge as exc:
        return f"{query_type}: {exc} (widen --timestamp-start/--timestamp-end)"
    return None


def rand_window(rng: GoRand, range_start_ns: int, range_end_ns: int, window_ns: int) -> TimeWindow:
    """A window of ``window_ns`` starting at a uniform nanosecond in [start, end - window), one Int63n draw."""
    check_window_fits(range_start_ns, range_end_ns, window_ns)
    start = range_start_ns + rng.int63n(range_end_ns - window_ns - range_start_ns)
    return TimeWindow(start, start + window_ns)


class QueryDraws:
    """One ``tsbs_generate_queries`` run's state, whatever the use case: Go's source seeded with ``--seed``,
    the time range and the scale (hosts or trucks); ``window`` draws a query's time window from it."""

    def __init__(self, seed: int, scale: int, start_ns: int, end_ns: int):
        self.rng = GoRand(seed)
        self.scale = scale
        self.start_ns = start_ns
        self.end_ns = end_ns

    def window(self, window_ns: int) -> TimeWindow:
        return rand_window(self.rng, self.start_ns, self.end_ns, window_ns)
