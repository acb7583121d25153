"""The dtype audit (harness/own_data/audit.py, client_dtypes.py) held to the real questdb client and a real
QuestDB: for every dtype of the catalogue below, as a field, a symbol or the designated timestamp and under the
protocol versions where they differ, an accepted column sent through ``Sender`` makes the server create the column
type the audit names, and a refused one makes the client (or the server) raise the words the audit
predicts, ``first_refusal`` naming the column, its dtype and the fix. ``apply_fixes`` makes every column it
has a conversion for accepted, and a column that held the GIL one that releases it, of the same type.

The GIL claims are counted, not timed: a thread gets through rounds of ``time.sleep(0)`` (each letting the
GIL go and needing it back) hundreds of times a second while another serializes a frame whose columns
release the GIL, and next to never while one holds it (the switch interval is raised for the count, so that
a held GIL is not handed over every 5 ms)."""

from __future__ import annotations

import datetime as dt
import decimal
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from harness.errors import UsageError
from harness.own_data.audit import (DESIGNATED, FIELD, SYMBOL, ColumnAudit, apply_fixes, audit_frame, audit_table,
                                    first_refusal, releases_gil)
from harness.own_data.client_dtypes import ARROW, NATIVE, OBJECTS, REFUSED, SKIPPED
from harness.questdb.wal import wait_for_count

with warnings.catch_warnings():  # questdb.ingress says it is deprecated; the harness's senders use it
    warnings.simplefilter("ignore", DeprecationWarning)
    from questdb.ingress import Buffer, QuestDBError, Sender

# A Sender a frame, as each refused column needs one: the client warns of the reconnections.
pytestmark = pytest.mark.filterwarnings("ignore:questdb.Sender. Detected a burst of reconnections")

ROWS = 6
STRINGS = ["a", "bb", None, "a", "ccc", "é"]
START = pd.Timestamp("2023-05-01")


def _cycle(values: list, n: int) -> list:
    return (values * (n // len(values) + 1))[:n]


def _times(n: int, freq: str = "ms", tz: str | None = None) -> pd.DatetimeIndex:
    return pd.date_range(START, periods=n, freq=freq, tz=tz)


def _with_null(values: list) -> list:
    """``values`` with its second value None (a null where the dtype allows one)."""
    return [values[0], None, *values[2:]]


# Each builds a column of n rows (n >= 6); nullable ones hold a null in their second row.
CATALOGUE: dict[str, Callable[[int], pd.Series]] = {
    **{name: (lambda n, name=name: pd.Series(np.arange(n) % 100, dtype=name))
       for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
                    "float64")},
    "uint64 above 2^63": lambda n: pd.Series(np.full(n, 2**63 + 5, dtype="uint64")),
    "float64 with NaN": lambda n: pd.Series(_with_null(list(np.arange(n, dtype=float)))),
    "Int64": lambda n: pd.Series(np.arange(n), dtype="Int64"),
    "Int64 with nulls": lambda n: pd.Series(_with_null(list(range(n))), dtype="Int64"),
    "UInt64 above 2^63": lambda n: pd.Series(_with_null([2**63 + 1] * n), dtype="UInt64"),
    "Float64": lambda n: pd.Series(_with_null([1.5] * n), dtype="Float64"),
    "bool": lambda n: pd.Series(np.arange(n) % 2 == 0),
    "boolean": lambda n: pd.Series(np.arange(n) % 2 == 0, dtype="boolean"),
    "boolean with nulls": lambda n: pd.Series(_with_null(_cycle([True, False], n)), dtype="boolean"),
    "object strings": lambda n: pd.Series(_cycle(STRINGS, n), dtype=object),
    "string[python]": lambda n: pd.Series(_cycle(STRINGS, n), dtype="string[python]"),
    "string[pyarrow]": lambda n: pd.Series(_cycle(STRINGS, n), dtype="string[pyarrow]"),
    "str (pandas 3 default)": lambda n: pd.Series(_cycle(STRINGS, n)),
    "large_string[pyarrow]": lambda n: pd.Series(_cycle(STRINGS, n), dtype=pd.ArrowDtype(pa.large_string())),
    "category of strings": lambda n: pd.Series(_cycle(STRINGS, n), dtype="category"),
    "category of ints": lambda n: pd.Series(np.arange(n) % 3, dtype="category"),
    "datetime64[ns]": lambda n: pd.Series(_times(n).astype("datetime64[ns]")),
    "datetime64[us]": lambda n: pd.Series(_times(n).astype("datetime64[us]")),
    "datetime64[ms]": lambda n: pd.Series(_times(n).astype("datetime64[ms]")),
    "datetime64[s]": lambda n: pd.Series(_times(n, "s").astype("datetime64[s]")),
    "datetime64[ns, UTC]": lambda n: pd.Series(_times(n, tz="UTC").astype("datetime64[ns, UTC]")),
    "datetime64[us, UTC]": lambda n: pd.Series(_times(n, tz="UTC").astype("datetime64[us, UTC]")),
    "datetime64[ms, UTC]": lambda n: pd.Series(_times(n, tz="UTC").astype("datetime64[ms, UTC]")),
    "datetime64[ns, Europe/Paris]": lambda n: pd.Series(_times(n, tz="Europe/Paris").astype(
        "datetime64[ns, Europe/Paris]")),
    "object datetimes": lambda n: pd.Series(list(_times(n, "s").to_pydatetime()), dtype=object),
    "object aware datetimes": lambda n: pd.Series(list(_times(n, "s", "Europe/Paris").to_pydatetime()),
                                                  dtype=object),
    # A file read in pieces, the column missing from one of them: Timestamps and None in an object column.
    "concat of datetime64 and None": lambda n: pd.concat(
        [pd.Series(_times(n - 2)), pd.Series([None, None], dtype=object)], ignore_index=True),
    # ... and a piece where the column came as object: Timestamps and Python datetimes, one object column.
    "concat of datetime64 and object datetimes": lambda n: pd.concat(
        [pd.Series(_times(n)[:3]), pd.Series(list(_times(n)[3:].to_pydatetime()), dtype=object)],
        ignore_index=True),
    # ... and one where it came as text: Timestamps and ISO strings.
    "concat of datetime64 and text": lambda n: pd.concat(
        [pd.Series(_times(n)[:3]), pd.Series([str(t) for t in _times(n)[3:]], dtype=object)], ignore_index=True),
    "object dates": lambda n: pd.Series([dt.date(2023, 5, 1) + dt.timedelta(days=i % 28) for i in range(n)],
                                        dtype=object),
    "ISO text": lambda n: pd.Series(np.datetime_as_string(_times(n).values, unit="us")),
    "timedelta64[ns]": lambda n: pd.Series(np.arange(n).astype("timedelta64[s]").astype("timedelta64[ns]")),
    "double[pyarrow]": lambda n: pd.Series(_with_null([1.5] * n), dtype="double[pyarrow]"),
    "float[pyarrow]": lambda n: pd.Series(_with_null([1.5] * n), dtype="float[pyarrow]"),
    "int8[pyarrow]": lambda n: pd.Series(_with_null(list(np.arange(n) % 100)), dtype="int8[pyarrow]"),
    "int64[pyarrow]": lambda n: pd.Series(_with_null(list(range(n))), dtype="int64[pyarrow]"),
    "uint8[pyarrow]": lambda n: pd.Series(np.arange(n) % 100, dtype="uint8[pyarrow]"),
    "uint64[pyarrow]": lambda n: pd.Series(np.arange(n), dtype="uint64[pyarrow]"),
    "bool[pyarrow]": lambda n: pd.Series(np.arange(n) % 2 == 0, dtype="bool[pyarrow]"),
    "bool[pyarrow] with nulls": lambda n: pd.Series(_with_null(_cycle([True, False], n)), dtype="bool[pyarrow]"),
    "timestamp[us][pyarrow]": lambda n: pd.Series(_times(n).astype("timestamp[us][pyarrow]")),
    "timestamp[ns][pyarrow]": lambda n: pd.Series(_times(n).astype("timestamp[ns][pyarrow]")),
    "timestamp[ms][pyarrow]": lambda n: pd.Series(_times(n).astype("timestamp[ms][pyarrow]")),
    "date32[pyarrow]": lambda n: pd.Series([dt.date(2023, 5, 1 + i % 28) for i in range(n)],
                                           dtype=pd.ArrowDtype(pa.date32())),
    "object decimals": lambda n: pd.Series(_with_null([decimal.Decimal("1.25")] * n), dtype=object),
    "decimal128(10, 2)[pyarrow]": lambda n: pd.Series(_with_null([decimal.Decimal("1.25")] * n),
                                                      dtype=pd.ArrowDtype(pa.decimal128(10, 2))),
    "object float64 arrays": lambda n: pd.Series([np.arange(3.0) + i for i in range(n)], dtype=object),
    "object 2-D float64 arrays": lambda n: pd.Series([np.ones((2, 2)) * i for i in range(n)], dtype=object),
    "object int64 arrays": lambda n: pd.Series([np.arange(3) + i for i in range(n)], dtype=object),
    "object ints": lambda n: pd.Series(_with_null(list(range(n))), dtype=object),
    "object ints and floats": lambda n: pd.Series([1, 2.5, *range(n - 2)], dtype=object),
    "object floats": lambda n: pd.Series(_with_null([float(i) for i in range(n)]), dtype=object),
    "object bools": lambda n: pd.Series(_cycle([True, False], n), dtype=object),
    "object bools with nulls": lambda n: pd.Series(_with_null(_cycle([True, False], n)), dtype=object),
    "object nulls only": lambda n: pd.Series([None] * n, dtype=object),
    "object UUIDs": lambda n: pd.Series([uuid.UUID(int=i) for i in range(n)], dtype=object),
    "object bytes": lambda n: pd.Series([b"ab"] * n, dtype=object),
    "float16": lambda n: pd.Series(np.arange(n), dtype="float16"),
    "Sparse[float64]": lambda n: pd.Series(pd.arrays.SparseArray(np.arange(n) % 2 * 1.0)),
    "period[M]": lambda n: pd.Series(pd.period_range("2023-01", periods=n, freq="M")),
}

# Every dtype as a field; string-like ones (and two that are not) as a symbol; timestamp-like ones (and two
# that are not) as the designated timestamp: (case, role, symbols given to the client, protocol version),
# hashable.
STRINGS_LIKE = ["object strings", "string[python]", "string[pyarrow]", "str (pandas 3 default)",
                "large_string[pyarrow]", "category of strings", "category of ints", "object nulls only", "int64",
                "object ints and floats"]
TIMESTAMP_LIKE = ["datetime64[ns]", "datetime64[us]", "datetime64[ms]", "datetime64[s]", "datetime64[ns, UTC]",
                  "datetime64[us, UTC]", "datetime64[ms, UTC]", "datetime64[ns, Europe/Paris]",
                  "timestamp[us][pyarrow]", "timestamp[ns][pyarrow]", "timestamp[ms][pyarrow]", "object datetimes",
                  "object aware datetimes", "concat of datetime64 and object datetimes", "object dates",
                  "ISO text", "concat of datetime64 and text", "date32[pyarrow]", "int64"]
PROTOCOL_DEPENDENT = ["datetime64[ns]", "datetime64[ns, UTC]", "timestamp[ns][pyarrow]", "object float64 arrays",
                      "object decimals", "decimal128(10, 2)[pyarrow]"]
SITUATIONS = ([(case, FIELD, (), 2) for case in CATALOGUE]
              + [("category of strings", SYMBOL, "auto", 2), ("object strings", FIELD, "auto", 2)]
              + [(case, SYMBOL, ("v",), 2) for case in STRINGS_LIKE]
              + [(case, DESIGNATED, (), 2) for case in TIMESTAMP_LIKE]
              + [(case, FIELD, (), version) for case in PROTOCOL_DEPENDENT for version in (1, 3)]
              + [(case, DESIGNATED, (), 1) for case in ("datetime64[ns]", "timestamp[ns][pyarrow]")])


def situation_id(situation) -> str:
    case, role, symbols, version = situation
    return f"{case} as {role}{' (auto symbols)' if symbols == 'auto' else ''} v{version}"


def frame_for(case: str, role: str, rows: int = ROWS) -> pd.DataFrame:
    """The column ``v`` of ``case`` in a frame the client can take otherwise: beside a float field ``x``
    (so that no row is all nulls) and, unless ``v`` is the designated timestamp, the timestamp ``ts``."""
    column = CATALOGUE[case](rows)
    x = np.arange(rows, dtype="float64")
    if role == DESIGNATED:
        return pd.DataFrame({"v": column, "x": x})
    return pd.DataFrame({"ts": pd.Series(pd.date_range("2024-01-01", periods=rows, freq="s")), "v": column, "x": x})


def audit_of(frame: pd.DataFrame, role: str, symbols, version: int) -> tuple[list[ColumnAudit], ColumnAudit]:
    audits = audit_frame(frame, at="v" if role == DESIGNATED else "ts", symbols=symbols, protocol_version=version)
    (audit,) = [audit for audit in audits if audit.column == "v"]
    return audits, audit


def send(server, frame: pd.DataFrame, table: str, at: str, symbols, version: int) -> dict[str, str]:
    """``frame`` sent through the client's Sender over HTTP (which answers errors at once); the column types
    of the table the server made of it."""
    with Sender.from_conf(f"http::addr={server.host}:{server.http_port};protocol_version={version};") as sender:
        sender.dataframe(frame, table_name=table, at=at, symbols=symbols if symbols == "auto" else list(symbols))
    # A column first seen after the first row is added as the WAL applies: the types are read after the rows.
    wait_for_count(server.client, table, len(frame), timeout=30)
    return dict(server.client.table_columns(table))


def sent_type(server, frame: pd.DataFrame, table: str, situation) -> str | None:
    """The type QuestDB gave ``v``: the designated timestamp it calls ``timestamp``, whatever the frame called
    it."""
    _, role, symbols, version = situation
    try:
        columns = send(server, frame, table, "v" if role == DESIGNATED else "ts", symbols, version)
        return columns["timestamp"] if role == DESIGNATED else columns.get("v")
    finally:
        server.client.drop_table(table)


class Batches:
    """The accepted columns of many situations sent as one frame, one table per batch (a role, its symbols,
    a protocol version; a designated timestamp alone), so that the catalogue costs a few round trips: the
    type QuestDB gave each column, or None when the batch failed (its tests then send their own frames, to
    name the column the client refused)."""

    def __init__(self, server):
        self.server = server
        self.types: dict[tuple, str | None] = {}

    @staticmethod
    def key(situation) -> tuple:
        case, role, symbols, version = situation
        return role, symbols == "auto", version, case if role == DESIGNATED else ""

    def type_of(self, situation, situations: list, column_of: Callable[[tuple], pd.Series], name: str) -> str | None:
        if situation not in self.types:
            batch = [other for other in situations if self.key(other) == self.key(situation)]
            if situation[1] == DESIGNATED:
                frame = pd.DataFrame({"v": column_of(situation), "x": np.arange(ROWS, dtype="float64")})
            else:
                frame = pd.DataFrame({"ts": pd.Series(pd.date_range("2024-01-01", periods=ROWS, freq="s")),
                                      "x": np.arange(ROWS, dtype="float64"),
                                      **{f"c{index}": column_of(other) for index, other in enumerate(batch)}})
            _, role, symbols, version = situation
            at = "v" if role == DESIGNATED else "ts"
            if role == SYMBOL:
                symbols = [f"c{index}" for index in range(len(batch))]
            table = f"own_{name}_{len(self.types)}"
            try:
                columns = send(self.server, frame, table, at, symbols, version)
            except QuestDBError:
                columns = None
            finally:
                self.server.client.drop_table(table)
            for index, other in enumerate(batch):
                self.types[other] = (None if columns is None else columns["timestamp"] if role == DESIGNATED
                                     else columns.get(f"c{index}", "absent"))
        return self.types[situation]


@pytest.fixture(scope="module")
def batches(questdb_server) -> Batches:
    return Batches(questdb_server)


def accepted(situation) -> bool:
    case, role, symbols, version = situation
    return audit_of(frame_for(case, role), role, symbols, version)[1].accepted


ACCEPTED = [situation for situation in SITUATIONS if accepted(situation)]


@pytest.mark.parametrize("situation", SITUATIONS, ids=situation_id)
def test_the_audit_says_what_the_client_and_the_server_do(batches, situation):
    case, role, symbols, version = situation
    frame = frame_for(case, role)
    audits, audit = audit_of(frame, role, symbols, version)
    assert audit.role == role and audit.dtype == str(frame["v"].dtype)
    if audit.accepted:
        assert audit.path in (NATIVE, ARROW, OBJECTS, SKIPPED) and first_refusal(audits) is None
        assert (audit.questdb_type is None) == (audit.path == SKIPPED)
        created = batches.type_of(situation, ACCEPTED, lambda other: frame_for(other[0], other[1])["v"], "audit")
        if created is None:  # the batch failed: this column alone
            created = sent_type(batches.server, frame, f"own_audit_{SITUATIONS.index(situation)}", situation)
        assert (None if created == "absent" else created) == audit.questdb_type
    else:
        assert audit.path == REFUSED and audit.questdb_type is None and not audit.parallel
        with pytest.raises(QuestDBError) as raised:
            sent_type(batches.server, frame, f"own_refused_{SITUATIONS.index(situation)}", situation)
        assert audit.client_error in str(raised.value), (audit.client_error, str(raised.value))
        line = first_refusal(audits)
        assert line.startswith(f"column 'v' ({audit.dtype}): {audit.refusal}; ") and "\n" not in line
        assert (f"convert it: {audit.fix}" if audit.fix else "no conversion") in line


def fixed_frame(situation) -> tuple[pd.DataFrame, ColumnAudit, ColumnAudit]:
    """The situation's frame with the audit's fixes applied, the audit of ``v`` before and after."""
    case, role, symbols, version = situation
    frame = frame_for(case, role)
    _, before = audit_of(frame, role, symbols, version)
    fixed = apply_fixes(frame, [before])
    assert str(frame["v"].dtype) == before.dtype  # the user's frame as it was
    return fixed, before, audit_of(fixed, role, symbols, version)[1]


FIXABLE = [situation for situation in SITUATIONS if situation[3] == 2
           and audit_of(frame_for(situation[0], situation[1]), *situation[1:])[1].fix]


@pytest.mark.parametrize("situation", FIXABLE, ids=situation_id)
def test_a_fixed_column_is_accepted_and_parallel(batches, situation):
    case, role, symbols, version = situation
    fixed, before, after = fixed_frame(situation)
    assert after.accepted and after.fix is None, after
    if before.accepted:  # made faster, not different: the sweep compares like with like
        assert after.parallel and after.questdb_type == before.questdb_type
    created = batches.type_of(situation, FIXABLE, lambda other: fixed_frame(other)[0]["v"], "fixed")
    if created is None:
        created = sent_type(batches.server, fixed, f"own_fixed_{FIXABLE.index(situation)}", situation)
    assert created == after.questdb_type


def test_every_path_and_verdict_is_in_the_catalogue():
    """The catalogue covers every path the audit names, and the verdicts the brief asked about."""
    verdicts = {}
    for case, role, symbols, version in SITUATIONS:
        verdicts[(case, role, version)] = audit_of(frame_for(case, role), role, symbols, version)[1]
    assert {audit.path for audit in verdicts.values()} == {NATIVE, ARROW, OBJECTS, REFUSED, SKIPPED}
    field = {case: verdicts[(case, FIELD, 2)] for case in CATALOGUE}
    assert field["str (pandas 3 default)"].path == ARROW and field["str (pandas 3 default)"].dtype == "str"
    assert {field[case].questdb_type for case in ("object strings", "string[python]", "string[pyarrow]",
                                                  "large_string[pyarrow]")} == {"VARCHAR"}
    assert field["datetime64[ns]"].questdb_type == "TIMESTAMP_NS"
    assert field["datetime64[us]"].questdb_type == field["datetime64[ms]"].questdb_type == "TIMESTAMP"
    assert verdicts[("datetime64[ns]", FIELD, 1)].questdb_type == "TIMESTAMP"
    assert field["object float64 arrays"].questdb_type == "DOUBLE[]" and not field["object float64 arrays"].parallel
    assert not verdicts[("object float64 arrays", FIELD, 1)].accepted
    assert not field["timedelta64[ns]"].accepted and not field["object decimals"].accepted
    assert not verdicts[("object datetimes", DESIGNATED, 2)].accepted and field["object datetimes"].accepted


def test_the_table_and_the_first_refusal_name_every_column():
    frame = pd.DataFrame({"ts": pd.Series(pd.date_range("2024", periods=ROWS, freq="s")),
                          "host": CATALOGUE["object strings"](ROWS), "usage": CATALOGUE["float64"](ROWS),
                          "d": CATALOGUE["timedelta64[ns]"](ROWS), "n": CATALOGUE["object ints"](ROWS)})
    audits = audit_frame(frame, at="ts", symbols=["host"])
    assert [audit.role for audit in audits] == [DESIGNATED, SYMBOL, FIELD, FIELD, FIELD]
    assert first_refusal(audits) == ("column 'd' (timedelta64[ns]): the questdb client refuses timedelta columns; "
                                     "convert it: df['d'] = df['d'].dt.total_seconds()")
    lines = audit_table(audits).splitlines()
    assert lines[0].split() == ["column", "dtype", "role", "path", "QuestDB", "type", "parallel", "note"]
    assert set(lines[1]) == {"-", " "} and len(lines) == 2 + len(audits)
    assert "df['host'] = df['host'].astype('category')" in lines[3] and "SYMBOL" in lines[3]
    assert lines[5].startswith("d ") and "refused" in lines[5]
    fixed = apply_fixes(frame, audits)
    assert first_refusal(audit_frame(fixed, at="ts", symbols=["host"])) is None
    assert releases_gil(audit_frame(fixed, at="ts", symbols=["host"])) and not releases_gil(audits)
    Buffer(protocol_version=2).dataframe(fixed, table_name="t", at="ts", symbols=["host"])


@pytest.mark.parametrize("at, symbols, message", [
    ("time", [], "the designated timestamp column 'time' is not in the frame"),
    ("ts", ["nope"], "symbol column(s) 'nope' not in the frame"),
    ("ts", ["ts"], "column 'ts' cannot be both the designated timestamp and a symbol"),
    ("ts", "all", "symbols: a list of column names or 'auto'"),
])
def test_a_bad_at_or_symbols_is_a_usage_error(at, symbols, message):
    frame = frame_for("object strings", FIELD)
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        audit_frame(frame, at=at, symbols=symbols)


@pytest.mark.filterwarnings("ignore:Could not infer format")
def test_a_conversion_that_cannot_be_done_is_a_usage_error():
    frame = frame_for("object strings", DESIGNATED)  # text, but not times
    audits = audit_frame(frame, at="v", symbols=[])
    assert audits[0].fix == "df['v'] = pd.to_datetime(df['v'], utc=True, format='ISO8601').dt.as_unit('us')"
    with pytest.raises(UsageError, match=r"column 'v' \(object\): df\['v'\] = pd.to_datetime"):
        apply_fixes(frame, audits)


def test_a_row_of_nulls_is_refused_whatever_the_dtypes():
    """Not a dtype matter: the audit accepts each column, the client refuses the row."""
    frame = pd.DataFrame({"ts": pd.Series(pd.date_range("2024", periods=3, freq="s")),
                          "n": pd.Series([1, None, 3], dtype="Int64"), "s": pd.Series(["a", None, "b"], dtype="str")})
    assert first_refusal(audit_frame(frame, at="ts", symbols=["s"])) is None
    with pytest.raises(QuestDBError, match="row at index 1: All values are nulls"):
        Buffer(protocol_version=2).dataframe(frame, table_name="t", at="ts", symbols=["s"])


# --- the GIL -------------------------------------------------------------------------------------------
GIL_ROWS = 100_000
COUNT_SECONDS = 0.2
# A counted round: twenty ``time.sleep(0)``, each of which lets the GIL go and needs it back to return. The
# client, holding the GIL, lets it go for an instant every 40,000 cells; on a busy machine a lone sleeper
# often slips in there, twenty in a row seldom.
SLEEPS_A_ROUND = 20
HELD_REFERENCE = "object ints"
RELEASED_REFERENCE = "float64"


def wakeups_per_second(frame: pd.DataFrame, at: str, symbols: list[str]) -> float:
    """How many rounds of sleeps a second thread finishes a second while this one serializes ``frame`` into a
    Buffer again and again for COUNT_SECONDS. With the switch interval at a second, a thread that holds the
    GIL keeps it: the sleeper gets on only when ``dataframe()`` lets the GIL go."""
    rounds, stop = [0], threading.Event()

    def sleeper():
        while not stop.is_set():
            for _ in range(SLEEPS_A_ROUND):
                time.sleep(0)
            rounds[0] += 1

    buffer = Buffer(protocol_version=2, init_buf_size=64 << 20)
    buffer.dataframe(frame, table_name="t", at=at, symbols=symbols)  # warm: imports, the first allocation
    interval = sys.getswitchinterval()
    thread = threading.Thread(target=sleeper)
    thread.start()
    try:
        time.sleep(0.02)
        sys.setswitchinterval(1.0)
        started, before = time.perf_counter(), rounds[0]
        while time.perf_counter() - started < COUNT_SECONDS:
            buffer.clear()
            buffer.dataframe(frame, table_name="t", at=at, symbols=symbols)
        return (rounds[0] - before) / (time.perf_counter() - started)
    finally:
        sys.setswitchinterval(interval)
        stop.set()
        thread.join()


def rate_of(case: str, role: str = FIELD, symbols: list[str] = ()) -> float:
    frame = frame_for(case, role, GIL_ROWS)
    return wakeups_per_second(frame, "v" if role == DESIGNATED else "ts", list(symbols))


@pytest.fixture(scope="module")
def references() -> dict[str, float]:
    """Rounds a second beside a column that holds the GIL and beside one that does not."""
    return {"held": rate_of(HELD_REFERENCE), "released": rate_of(RELEASED_REFERENCE)}


def assert_gil_claim(measure: Callable[[], float], parallel: bool, references: dict[str, float]) -> None:
    """A column that releases the GIL lets the sleeper through at least a tenth as many rounds as beside the
    released reference, one that holds it less than a tenth as many. Counted up to three times (the references
    again too), for a busy machine."""
    held, released = references["held"], references["released"]
    for attempt in range(3):
        if attempt:
            held, released = rate_of(HELD_REFERENCE), rate_of(RELEASED_REFERENCE)
        rate = measure()
        # The count tells the references apart here at all, and puts the column beside the one it claims.
        if held * 10 < released and ((rate * 10 >= released) if parallel else (rate * 10 < released)):
            return
    raise AssertionError(f"parallel={parallel}, but {rate:.0f} rounds/s beside it, {held:.0f} beside "
                         f"{HELD_REFERENCE}, {released:.0f} beside {RELEASED_REFERENCE}")


# The designated timestamps are the fields' timestamp dtypes again: left out.
GIL_SITUATIONS = [situation for situation in ACCEPTED if situation[3] == 2 and situation[2] != "auto"
                  and situation[1] != DESIGNATED
                  and audit_of(frame_for(situation[0], situation[1]), *situation[1:])[1].path != SKIPPED]


@pytest.mark.slow
@pytest.mark.serial  # a sleeper thread's rate: another test's load beside it (CPU) blurs the references
@pytest.mark.parametrize("situation", GIL_SITUATIONS, ids=situation_id)
def test_the_gil_claim_holds(situation, references):
    case, role, symbols, _ = situation
    _, audit = audit_of(frame_for(case, role), role, symbols, 2)
    assert audit.parallel == (audit.path != OBJECTS)
    assert_gil_claim(lambda: rate_of(case, role, symbols), audit.parallel, references)


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("role, symbols", [(FIELD, []), (SYMBOL, ["v"])])
def test_fixed_object_strings_release_the_gil(role, symbols, references):
    frame = frame_for("object strings", role, GIL_ROWS)
    audits = audit_frame(frame, at="ts", symbols=symbols)
    assert not releases_gil(audits)
    fixed = apply_fixes(frame, audits)
    assert releases_gil(audit_frame(fixed, at="ts", symbols=symbols))
    assert_gil_claim(lambda: wakeups_per_second(fixed, "ts", symbols), True, references)


@pytest.mark.slow
@pytest.mark.serial
def test_one_object_column_holds_the_gil_for_the_whole_frame(references):
    frame = frame_for(RELEASED_REFERENCE, FIELD, GIL_ROWS).assign(n=CATALOGUE[HELD_REFERENCE](GIL_ROWS))
    assert not releases_gil(audit_frame(frame, at="ts", symbols=[]))
    assert_gil_claim(lambda: wakeups_per_second(frame, "ts", []), False, references)
