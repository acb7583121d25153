"""The reference answers of the iot queries (``harness.tsbs.iot.queries``), computed with pandas from the
generator's own DataFrames of both tables (never by asking a server), for ``queries run --check``.

Each query type is answered from its type and parameters, not by reading its SQL: the same semantics in
another language, so an error in either shows as a difference. What they compute (docs/iot.md, "Queries"):
QuestDB's NULL rules (an aggregate skips NULLs, a comparison with NULL is false, NULL tags group together),
SAMPLE BY buckets floored to whole multiples of the step since the epoch, ``LATEST ON`` the row with the
newest timestamp, integer division of integer counts.

The data set is held in memory, only the columns the queries read (about 100 bytes a row).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np
import pandas as pd

from harness.errors import UsageError
from harness.queries.answer import Answer
from harness.queries.check import DAY_ORDER, EXACT, UNORDERED
from harness.tsbs.iot import queries as iq
from harness.tsbs.iot.frames import chunks
from harness.tsbs.iot.schema import DIAGNOSTICS, READINGS
from harness.tsbs.params import DatasetSpec, parse_rfc3339_ns
from harness.tsbs.query_types import Query
from harness.tsbs.schema import TIMESTAMP_COLUMN

TEN_MINUTES = 600_000_000  # microseconds
DAY = 86_400_000_000
_COLUMNS = {
    READINGS: ("name", "fleet", "driver", "nominal_fuel_consumption", "longitude", "latitude", "velocity",
               "fuel_consumption"),
    DIAGNOSTICS: ("name", "fleet", "driver", "model", "load_capacity", "fuel_state", "current_load", "status"),
}
_TAGS = ("name", "fleet", "driver", "model")
# The order each type's answer comes in; the rest promise none.
_ORDER = {"avg-daily-driving-session": EXACT, "daily-activity": DAY_ORDER}


class IotReference:
    """Both tables in memory and the answers to the iot queries over them."""

    def __init__(self, spec: DatasetSpec, tables: dict[str, pd.DataFrame]):
        self.spec = spec
        self.tables = tables
        # Answers by (type, params): a query file repeats the parameterless types' one query.
        self._answers: dict[tuple, Answer] = {}
        self._lock = threading.Lock()

    def table_rows(self) -> dict[str, int]:
        return {table: len(frame) for table, frame in self.tables.items()}

    @classmethod
    def generate(cls, spec: DatasetSpec, fields: str = "double") -> IotReference:
        return cls.from_chunks(spec, chunks(spec, fields=fields, symbol_dtype="category"))

    @classmethod
    def from_chunks(cls, spec: DatasetSpec, data: Iterable[dict[str, pd.DataFrame]]) -> IotReference:
        parts: dict[str, list[pd.DataFrame]] = {READINGS: [], DIAGNOSTICS: []}
        for chunk in data:
            for table, frame in chunk.items():
                parts[table].append(_compact(frame, _COLUMNS[table]))
        return cls(spec, {table: pd.concat(frames, ignore_index=True) if frames else
                          pd.DataFrame(columns=[*_COLUMNS[table], TIMESTAMP_COLUMN])
                          for table, frames in parts.items()})

    def order_rule(self, query: Query) -> str:
        return _ORDER.get(query.query_type, UNORDERED)

    def expected(self, query: Query) -> Answer:
        key = (query.query_type, query.params)
        with self._lock:  # the checker calls from several workers; pandas is not made for that
            if key not in self._answers:
                answer = getattr(self, "_" + query.query_type.replace("-", "_"), None)
                if answer is None:
                    raise UsageError(f"query type {query.query_type}: not an iot query type")
                self._answers[key] = answer(*(query.params or ()))
            return self._answers[key]

    # -- the query types ----------------------------------------------------------------------------------

    def _latest(self, table: str, rows: pd.Series) -> pd.DataFrame:
        """Each name's row with the newest timestamp among ``rows`` (LATEST ON ... PARTITION BY name)."""
        frame = self.tables[table][rows]
        return frame.loc[frame.groupby("name", sort=False)[TIMESTAMP_COLUMN].idxmax()]

    def _fleet_rows(self, table: str, fleet: str) -> pd.Series:
        frame = self.tables[table]
        return frame["name"].notna() & (frame["fleet"] == fleet)

    def _last_loc(self, fleet: str) -> Answer:
        latest = self._latest(READINGS, self._fleet_rows(READINGS, fleet))
        return _answer(latest, ["name", "driver", "longitude", "latitude"])

    def _single_last_loc(self, trucks) -> Answer:
        latest = self._latest(READINGS, self.tables[READINGS]["name"].isin(list(trucks)))
        return _answer(latest, ["name", "driver", "longitude", "latitude"])

    def _low_fuel(self, fleet: str) -> Answer:
        latest = self._latest(DIAGNOSTICS, self._fleet_rows(DIAGNOSTICS, fleet))
        return _answer(latest[latest["fuel_state"] < iq.LOW_FUEL], ["name", "driver", "fuel_state"])

    def _high_load(self, fleet: str) -> Answer:
        latest = self._latest(DIAGNOSTICS, self._fleet_rows(DIAGNOSTICS, fleet))
        loaded = latest["current_load"] / latest["load_capacity"] > iq.HIGH_LOAD
        return _answer(latest[loaded], ["name", "driver", "current_load"])

    def _window(self, start: str, end: str, fleet: str) -> pd.DataFrame:
        frame = self.tables[READINGS]
        micros = frame[TIMESTAMP_COLUMN]
        inside = (micros >= _micros(start)) & (micros < _micros(end))
        return frame[inside & self._fleet_rows(READINGS, fleet)]

    def _stationary_trucks(self, start: str, end: str, fleet: str) -> Answer:
        means = _group(self._window(start, end, fleet), ["name", "driver"])["velocity"].mean().reset_index()
        return _answer(means[means["velocity"] < iq.STATIONARY_VELOCITY], ["name", "driver"])

    def _sessions(self, start: str, end: str, fleet: str, periods: int) -> Answer:
        rows = _bucketed(self._window(start, end, fleet), TEN_MINUTES)
        means = _group(rows, ["name", "driver", "bucket"])["velocity"].mean().reset_index()
        driving = means[means["velocity"] > iq.DRIVING_VELOCITY]
        counts = _group(driving, ["name", "driver"]).size().reset_index(name="periods")
        return _answer(counts[counts["periods"] > periods], ["name", "driver"])

    def _long_driving_sessions(self, start: str, end: str, fleet: str) -> Answer:
        return self._sessions(start, end, fleet, iq.LONG_DRIVING_PERIODS)

    def _long_daily_sessions(self, start: str, end: str, fleet: str) -> Answer:
        return self._sessions(start, end, fleet, iq.LONG_DAILY_PERIODS)

    def _avg_vs_projected_fuel_consumption(self) -> Answer:
        frame = self.tables[READINGS]
        rows = frame[(frame["velocity"] > iq.DRIVING_VELOCITY) & frame["fleet"].notna()
                     & frame["nominal_fuel_consumption"].notna() & frame["name"].notna()]
        means = _group(rows, ["fleet"]).agg(avg_fuel_consumption=("fuel_consumption", "mean"),
                                            projected_fuel_consumption=("nominal_fuel_consumption", "mean"))
        return _answer(means.reset_index(), ["fleet", "avg_fuel_consumption", "projected_fuel_consumption"])

    def _avg_daily_driving_duration(self) -> Answer:
        keys = ["fleet", "name", "driver"]
        rows = _bucketed(self.tables[READINGS], TEN_MINUTES)
        means = _group(rows, [*keys, "bucket"])["velocity"].mean().reset_index()
        driving = means[means["velocity"] > iq.DRIVING_VELOCITY].copy()
        driving["day"] = driving["bucket"] // DAY
        hours = (_group(driving, [*keys, "day"]).size() // 6).rename("hours").reset_index()
        average = _group(hours, keys)["hours"].mean().rename("avg_daily_hours").reset_index()
        return _answer(average, [*keys, "avg_daily_hours"])

    def _avg_daily_driving_session(self) -> Answer:
        frame = self.tables[READINGS]
        rows = _bucketed(frame[frame["name"].notna()], TEN_MINUTES)
        status = _group(rows, ["name", "bucket"])["velocity"].mean().reset_index().sort_values(["name", "bucket"])
        velocity = status["velocity"]
        status["driving"] = np.where(velocity.isna(), np.nan, (velocity > iq.SESSION_VELOCITY).astype(float))
        status["previous"] = status.groupby("name")["driving"].shift(1)
        changes = status[status["driving"].notna() & status["previous"].notna()
                         & (status["driving"] != status["previous"])].copy()
        changes["stop"] = changes.groupby("name")["bucket"].shift(-1)
        driving = changes[changes["driving"] == 1].copy()
        driving["day"] = driving["bucket"] // DAY * DAY
        driving["duration"] = (driving["stop"] - driving["bucket"]) / 1_000_000
        sessions = _group(driving, ["name", "day"])["duration"].mean().reset_index().sort_values(["name", "day"])
        return _answer(sessions, ["name", "day", "duration"])

    def _avg_load(self) -> Answer:
        frame = self.tables[DIAGNOSTICS]
        keys = ["fleet", "model", "load_capacity"]
        per_truck = _group(frame[frame["name"].notna()], ["name", *keys])["current_load"].mean().reset_index()
        per_truck["share"] = per_truck["current_load"] / per_truck["load_capacity"]
        average = _group(per_truck, keys)["share"].mean().rename("avg_load_percentage").reset_index()
        return _answer(average, [*keys, "avg_load_percentage"])

    def _daily_activity(self) -> Answer:
        frame = self.tables[DIAGNOSTICS]
        rows = _bucketed(frame[frame["name"].notna()], TEN_MINUTES)
        periods = _group(rows, ["name", "fleet", "model", "bucket"]).agg(
            rows=("status", "size"), mean_status=("status", "mean")).reset_index()
        inactive = periods[periods["mean_status"] < 1].copy()
        inactive["day"] = inactive["bucket"] // DAY * DAY
        activity = _group(inactive, ["fleet", "model", "day"])["rows"].sum().reset_index()
        activity["daily_activity"] = activity["rows"] / iq.DAY_TEN_MINUTES
        return _answer(activity.sort_values("day", kind="stable"), ["fleet", "model", "day", "daily_activity"])

    def _breakdown_frequency(self) -> Answer:
        frame = self.tables[DIAGNOSTICS]
        rows = _bucketed(frame[frame["name"].notna()], TEN_MINUTES)
        periods = _group(rows, ["name", "model", "bucket"]).agg(
            present=("status", "count"), rows=("status", "size")).reset_index()
        periods = periods.sort_values(["name", "model", "bucket"], na_position="first")
        periods["broken"] = ((periods["present"] // periods["rows"]) >= 0.5).astype(int)
        periods["next"] = _group(periods, ["name", "model"])["broken"].shift(-1)
        starts = periods[(periods["broken"] == 0) & (periods["next"] == 1)]
        counts = _group(starts, ["model"]).size().rename("count").reset_index()
        return _answer(counts, ["model", "count"])


def _micros(text: str) -> int:
    return parse_rfc3339_ns(text, "query timestamp") // 1000


def _compact(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """The columns the queries read: tags as str/None objects, numbers float64 (NULL: NaN), the timestamp
    as int microseconds."""
    out = {}
    for column in columns:
        values = frame[column]
        if column in _TAGS:
            values = values.astype(object)
            out[column] = values.where(values.notna(), None)
        else:
            out[column] = values.astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
    out[TIMESTAMP_COLUMN] = frame[TIMESTAMP_COLUMN].to_numpy(dtype="datetime64[ns]").view(np.int64) // 1000
    return pd.DataFrame(out)


def _bucketed(frame: pd.DataFrame, step: int) -> pd.DataFrame:
    return frame.assign(bucket=frame[TIMESTAMP_COLUMN] // step * step)


def _group(frame: pd.DataFrame, keys: list[str]):
    """GROUP BY ``keys`` as SQL does: NULL keys form a group of their own."""
    return frame.groupby(keys, dropna=False, sort=False)


def _cell(value):
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _answer(frame: pd.DataFrame, columns: list[str]) -> Answer:
    """The rows of ``frame``'s ``columns`` in its order, as the server's answer holds them."""
    kinds = []
    for column in columns:
        values = frame[column]
        # Integer cells (a count, a day's micros) stay int; any other number is a DOUBLE.
        integer = column in ("count", "day") or (column not in _TAGS and pd.api.types.is_integer_dtype(values))
        kinds.append(integer)
    rows = []
    for record in frame[columns].itertuples(index=False, name=None):
        cells = [_cell(value) for value in record]
        rows.append(tuple(int(cell) if integer and cell is not None else
                          float(cell) if not integer and isinstance(cell, int) else cell
                          for cell, integer in zip(cells, kinds)))
    return Answer(list(columns), rows)
