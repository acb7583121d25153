"""TSBS's iot queries for QuestDB: the 13 query types of ``tsbs_generate_queries --use-case=iot``, their
parameters drawn as TSBS draws them, written as QuestDB SQL with the semantics of TSBS's TimescaleDB queries
(``databases/timescaledb/iot.go``). TSBS's QuestDB generator has no iot queries ("use case 'iot' not
implemented for format 'questdb'"), so this is the harness's own translation; docs/iot.md says what it
keeps and what differs.

Draws, per query and in this order, from the Go source seeded with ``--seed`` (each type its own TSBS run,
as for cpu-only): a window's start (one ``Int63n``) for the types with a window, then one ``Intn(scale)``
per truck (``single-last-loc``) or one ``Intn(4)`` for the fleet. The other types draw nothing.

The SQL keeps placeholders: ``$n`` for a fleet (a string), a truck list (``name IN $1``) or a window bound
(RFC 3339 with TSBS's microseconds: its TimescaleDB text prints the window to the microsecond).

QuestDB keeps a line's tags on its row, where TimescaleDB keeps one tags row per truck and joins it: a
condition or grouping on TSBS's ``t.<tag>`` is one on each row's own tag here, applied before the
aggregation or ``LATEST ON`` (a row whose tag TSBS cleared has NULL there).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.tsbs.go.rand import random_subset
from harness.tsbs.go.times import QueryDraws, rfc3339_micros, window_refusal
from harness.tsbs.iot.schema import FLEETS, truck_name
from harness.tsbs.query_types import IOT_QUERY_TYPES, Query

_MINUTE_NS = 60_000_000_000
_HOUR_NS = 60 * _MINUTE_NS
STATIONARY_WINDOW_NS = 10 * _MINUTE_NS  # TSBS's StationaryDuration
LONG_DRIVING_WINDOW_NS = 4 * _HOUR_NS  # LongDrivingSessionDuration
DAILY_DRIVING_WINDOW_NS = 24 * _HOUR_NS  # DailyDrivingDuration


def ten_minute_periods(minutes_per_hour: int, window_ns: int) -> int:
    """TSBS's tenMinutePeriods: the 10-minute periods left in the window after resting this long an hour."""
    minutes = window_ns // _MINUTE_NS
    return int((minutes - minutes_per_hour * minutes / 60) / 10)


@dataclass(frozen=True)
class _Kind:
    """What a query type draws: a window (its length, 0 for none), a fleet, trucks."""

    label: str
    description: str
    window_ns: int = 0
    fleet: bool = False
    trucks: int = 0


_KINDS = {
    "last-loc": _Kind("QuestDB last location per truck", "", fleet=True),
    "single-last-loc": _Kind("QuestDB last location by specific truck", "random {trucks:4d} trucks", trucks=1),
    "low-fuel": _Kind("QuestDB trucks with low fuel", "under 10 percent", fleet=True),
    "high-load": _Kind("QuestDB trucks with high load", "over 90 percent", fleet=True),
    "stationary-trucks": _Kind("QuestDB stationary trucks", "with low avg velocity in last 10 minutes",
                               window_ns=STATIONARY_WINDOW_NS, fleet=True),
    "long-driving-sessions": _Kind("QuestDB trucks with longer driving sessions",
                                   "stopped less than 20 mins in 4 hour period",
                                   window_ns=LONG_DRIVING_WINDOW_NS, fleet=True),
    "long-daily-sessions": _Kind("QuestDB trucks with longer daily sessions",
                                 "drove more than 10 hours in the last 24 hours",
                                 window_ns=DAILY_DRIVING_WINDOW_NS, fleet=True),
    "avg-vs-projected-fuel-consumption": _Kind("QuestDB average vs projected fuel consumption per fleet", ""),
    "avg-daily-driving-duration": _Kind("QuestDB average driver driving duration per day", ""),
    "avg-daily-driving-session": _Kind("QuestDB average driver driving session without stopping per day", ""),
    "avg-load": _Kind("QuestDB average load per truck model per fleet", ""),
    "daily-activity": _Kind("QuestDB daily truck activity per fleet per model", ""),
    "breakdown-frequency": _Kind("QuestDB truck breakdown frequency per model", ""),
}
assert tuple(_KINDS) == IOT_QUERY_TYPES

# Thresholds of TSBS's queries, and the HAVING counts of its long sessions (22 and 60 ten-minute periods).
LOW_FUEL = 0.1
HIGH_LOAD = 0.9
STATIONARY_VELOCITY = 1
DRIVING_VELOCITY = 1
SESSION_VELOCITY = 5
LONG_DRIVING_PERIODS = ten_minute_periods(5, LONG_DRIVING_WINDOW_NS)
LONG_DAILY_PERIODS = ten_minute_periods(35, DAILY_DRIVING_WINDOW_NS)
DAY_TEN_MINUTES = 144

_LATEST = """SELECT name, driver, {columns}
FROM (
    SELECT name, driver, {inner_columns}
    FROM {table}
    WHERE name IS NOT NULL AND fleet = $1
    LATEST ON timestamp PARTITION BY name
)
WHERE {condition}"""

_LONG_SESSIONS = f"""SELECT name, driver
FROM (
    SELECT name, driver, count() AS driving_periods
    FROM (
        SELECT timestamp, name, driver, avg(velocity) AS mean_velocity
        FROM readings
        WHERE timestamp >= $1 AND timestamp < $2 AND name IS NOT NULL AND fleet = $3
        SAMPLE BY 10m
    )
    WHERE mean_velocity > {DRIVING_VELOCITY}
)
WHERE driving_periods > {{periods}}"""

_SQL = {
    "last-loc": """SELECT name, driver, longitude, latitude
FROM readings
WHERE name IS NOT NULL AND fleet = $1
LATEST ON timestamp PARTITION BY name""",
    "single-last-loc": """SELECT name, driver, longitude, latitude
FROM readings
WHERE name IN $1
LATEST ON timestamp PARTITION BY name""",
    "low-fuel": _LATEST.format(columns="fuel_state", inner_columns="fuel_state", table="diagnostics",
                               condition=f"fuel_state < {LOW_FUEL}"),
    "high-load": _LATEST.format(columns="current_load", inner_columns="current_load, load_capacity",
                                table="diagnostics", condition=f"current_load / load_capacity > {HIGH_LOAD}"),
    "stationary-trucks": f"""SELECT name, driver
FROM (
    SELECT name, driver, avg(velocity) AS mean_velocity
    FROM readings
    WHERE timestamp >= $1 AND timestamp < $2 AND name IS NOT NULL AND fleet = $3
)
WHERE mean_velocity < {STATIONARY_VELOCITY}""",
    "long-driving-sessions": _LONG_SESSIONS.format(periods=LONG_DRIVING_PERIODS),
    "long-daily-sessions": _LONG_SESSIONS.format(periods=LONG_DAILY_PERIODS),
    "avg-vs-projected-fuel-consumption": f"""SELECT fleet, avg(fuel_consumption) AS avg_fuel_consumption,
    avg(nominal_fuel_consumption) AS projected_fuel_consumption
FROM readings
WHERE velocity > {DRIVING_VELOCITY} AND fleet IS NOT NULL AND nominal_fuel_consumption IS NOT NULL
    AND name IS NOT NULL""",
    "avg-daily-driving-duration": f"""WITH ten_minute_driving_sessions AS (
    SELECT timestamp, fleet, name, driver, avg(velocity) AS mean_velocity
    FROM readings
    SAMPLE BY 10m
), daily_total_session AS (
    SELECT timestamp, fleet, name, driver, count() / 6 AS hours
    FROM ten_minute_driving_sessions
    WHERE mean_velocity > {DRIVING_VELOCITY}
    SAMPLE BY 1d
)
SELECT fleet, name, driver, avg(hours) AS avg_daily_hours
FROM daily_total_session""",
    # QuestDB's booleans have no NULL and its window functions take none: TSBS's nullable boolean
    # "avg(velocity) > 5" is an INT (1, 0, or NULL for a period without a velocity), compared only when
    # both sides are there, as PostgreSQL's <> is.
    "avg-daily-driving-session": f"""WITH driver_status AS (
    SELECT timestamp AS ten_minutes, name,
        CASE WHEN avg(velocity) > {SESSION_VELOCITY} THEN 1 WHEN avg(velocity) <= {SESSION_VELOCITY} THEN 0 END
            AS driving
    FROM readings
    WHERE name IS NOT NULL
    SAMPLE BY 10m
), status_and_previous AS (
    SELECT name, ten_minutes, driving,
        lag(driving) OVER (PARTITION BY name ORDER BY ten_minutes) AS prev_driving
    FROM driver_status
), driver_status_change AS (
    SELECT name, ten_minutes AS start,
        lead(ten_minutes) OVER (PARTITION BY name ORDER BY ten_minutes) AS stop, driving
    FROM status_and_previous
    WHERE driving IS NOT NULL AND prev_driving IS NOT NULL AND driving != prev_driving
)
SELECT name, timestamp_floor('d', start) AS day, avg(datediff('s', start, stop)) AS duration
FROM driver_status_change
WHERE driving = 1
ORDER BY name, day""",
    "avg-load": """SELECT fleet, model, load_capacity, avg(avg_load / load_capacity) AS avg_load_percentage
FROM (
    SELECT name, fleet, model, load_capacity, avg(current_load) AS avg_load
    FROM diagnostics
    WHERE name IS NOT NULL
)""",
    # PostgreSQL's sum of counts is NUMERIC, so TSBS's "/ 144" divides exactly: 144.0 here.
    "daily-activity": f"""SELECT fleet, model, day, sum(ten_mins_per_day) / {DAY_TEN_MINUTES}.0 AS daily_activity
FROM (
    SELECT timestamp_floor('d', timestamp) AS day, timestamp AS ten_minutes, name, fleet, model,
        count() AS ten_mins_per_day, avg(status) AS mean_status
    FROM diagnostics
    WHERE name IS NOT NULL
    SAMPLE BY 10m
)
WHERE mean_status < 1
ORDER BY day""",
    # TSBS's "count(STATUS = 0) / count(*) >= 0.5" counts the rows whose status is there (a boolean is
    # counted whether true or false) and divides integers: 1 when no row of the period lacks a status,
    # else 0. count(status) is that count here (QuestDB would count every boolean).
    "breakdown-frequency": """WITH breakdown_per_truck_per_ten_minutes AS (
    SELECT timestamp AS ten_minutes, name, model,
        CASE WHEN count(status) / count() >= 0.5 THEN 1 ELSE 0 END AS broken_down
    FROM diagnostics
    WHERE name IS NOT NULL
    SAMPLE BY 10m
), breakdowns_per_truck AS (
    SELECT ten_minutes, name, model, broken_down,
        lead(broken_down) OVER (PARTITION BY name, model ORDER BY ten_minutes) AS next_broken_down
    FROM breakdown_per_truck_per_ten_minutes
)
SELECT model, count() AS count
FROM breakdowns_per_truck
WHERE broken_down = 0 AND next_broken_down = 1""",
}
assert tuple(_SQL) == IOT_QUERY_TYPES


class Generator(QueryDraws):
    """One TSBS run's draws for iot (``scale``: trucks)."""

    def make(self, query_type: str) -> Query:
        kind = _KINDS[query_type]
        params: list = []
        if kind.window_ns:
            window = self.window(kind.window_ns)
            params += [rfc3339_micros(window.start_ns), rfc3339_micros(window.end_ns)]
        if kind.trucks:
            params.append(tuple(truck_name(n) for n in random_subset(self.rng, kind.trucks, self.scale)))
        if kind.fleet:
            params.append(FLEETS[self.rng.intn(len(FLEETS))])
        description = kind.label + (": " + kind.description.format(trucks=kind.trucks) if kind.description else "")
        return Query(query_type, kind.label, description, _SQL[query_type], tuple(params) if params else None)


def refusal(query_type: str, scale: int, start_ns: int, end_ns: int) -> str | None:
    """Why TSBS would refuse (panic on) this iot query type for these flags, in its words; None if not."""
    kind = _KINDS[query_type]
    if kind.window_ns and (too_wide := window_refusal(query_type, start_ns, end_ns, kind.window_ns)):
        return too_wide
    if kind.trucks > scale:
        return f"{query_type}: number of trucks ({kind.trucks}) larger than total trucks. See --scale ({scale})"
    return None
