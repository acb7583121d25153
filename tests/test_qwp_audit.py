"""QWP's column of the dtype audit (harness/own_data/qwp_dtypes.py, audit.qwp_audit_frame) held to the real questdb
client's ``questdb.connect().dataframe()`` and a real QWP server (the pinned QWP jar): for every dtype of ILP's
catalogue (tests/test_own_data_audit.py) and those only QWP takes, in a NumPy-backed pandas frame, an Arrow-backed
one, a pyarrow Table and a Polars frame, as a field, a symbol or the designated timestamp, an accepted column makes
the server create the type the audit names, and a refused one makes the client raise the words the audit predicts;
every fix it proposes makes the column accepted. Then a run's refusal follows its way in: over QWP a column QWP
takes is sent, one it refuses ends the run in one line before anything is sent, and the table the run makes is the
one QWP makes of the data, a file of awkward columns landing exact in every kind of frame; ``inspect`` shows both
ways side by side and judges by ``--transport``."""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import ipaddress
import json
import uuid
from collections.abc import Callable

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import questdb

import harness
from harness.commands.bench import run_bench
from harness.errors import UsageError
from harness.frames.kinds import FrameKind
from harness.own_data.audit import DESIGNATED, FIELD, SYMBOL, SendPath, apply_fixes, first_refusal, qwp_audit_frame
from harness.own_data.client_dtypes import REFUSED, SKIPPED
from harness.own_data.qwp_dtypes import ARROW_STREAM, NUMPY_PLANNER, whole_arrow_columns
from harness.own_data.source import data_source
from harness.questdb.wal import wait_for_count
from harness.run.bench_options import BenchOptions
from helpers import assert_one_line_error, run_cli
from test_own_data_audit import CATALOGUE, STRINGS_LIKE, TIMESTAMP_LIKE

ROWS = 6
TEXT = ["a", None, "c", "a", "é", "b"]
TIMES = [dt.datetime(2023, 5, 1) + dt.timedelta(seconds=i) for i in range(ROWS)]
TS = pd.Series(pd.date_range("2024-01-01", periods=ROWS, freq="s").astype("datetime64[ns]"))


def _with_null(values: list) -> list:
    return [values[0], None, *values[2:]]


# NumPy-backed pandas columns ILP's catalogue lacks.
PANDAS: dict[str, Callable[[int], pd.Series]] = {
    **CATALOGUE,
    "int16": lambda n: pd.Series(np.arange(n) % 100, dtype="int16"),
    "Int8": lambda n: pd.Series(_with_null(list(range(n))), dtype="Int8"),
    "UInt64": lambda n: pd.Series(_with_null(list(range(n))), dtype="UInt64"),
    "Float32": lambda n: pd.Series(_with_null([1.5] * n), dtype="Float32"),
    "Int64 nulls only": lambda n: pd.Series([None] * n, dtype="Int64"),
    "str nulls only": lambda n: pd.Series([None] * n, dtype="str"),
    "datetime64[s, UTC]": lambda n: pd.Series(pd.date_range("2023-05-01", periods=n, freq="s", tz="UTC")
                                              .astype("datetime64[s, UTC]")),
    "datetime64[ns] with NaT": lambda n: pd.Series(_with_null(list(pd.date_range("2023-05-01", periods=n))))
    .astype("datetime64[ns]"),
    "datetime64[us] before 1970": lambda n: pd.Series(pd.date_range("1960-05-01", periods=n).astype("datetime64[us]")),
    "object bytearray": lambda n: pd.Series([bytearray(b"ab")] * n, dtype=object),
    "object bytes with None": lambda n: pd.Series(_with_null([b"ab"] * n), dtype=object),
    "object IPv4Address": lambda n: pd.Series([ipaddress.IPv4Address(i + 1) for i in range(n)], dtype=object),
    "object decimals of mixed scales": lambda n: pd.Series([decimal.Decimal("1.5"), decimal.Decimal("22.125")]
                                                           * (n // 2), dtype=object),
    "object decimals of 41 digits": lambda n: pd.Series([decimal.Decimal("1" * 40 + ".5")] * n, dtype=object),
    "object decimals of 80 digits": lambda n: pd.Series([decimal.Decimal("1" * 80)] * n, dtype=object),
    "object decimals with infinity": lambda n: pd.Series([decimal.Decimal("Infinity"), decimal.Decimal("2")]
                                                         * (n // 2), dtype=object),
    "object strings and ints": lambda n: pd.Series(["a", 1] * (n // 2), dtype=object),
    "object ints beyond 64 bits": lambda n: pd.Series([2**70] * n, dtype=object),
    "complex128": lambda n: pd.Series(np.arange(n) * 1j),
    "category of floats": lambda n: pd.Series(np.arange(n) * 1.5, dtype="category"),
    "category of strings with NaN": lambda n: pd.Series(TEXT[:n], dtype="category"),
    "string_view[pyarrow]": lambda n: pd.Series(TEXT[:n], dtype=pd.ArrowDtype(pa.string_view())),
    "string (ArrowDtype)": lambda n: pd.Series(TEXT[:n], dtype=pd.ArrowDtype(pa.string())),
    "binary[pyarrow]": lambda n: pd.Series([b"ab"] * n, dtype=pd.ArrowDtype(pa.binary())),
    "dictionary of strings[pyarrow]": lambda n: pd.Series(pa.array(TEXT[:n]).dictionary_encode(),
                                                          dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))),
    "fixed_size_binary[16][pyarrow]": lambda n: pd.Series([b"0123456789abcdef"] * n,
                                                          dtype=pd.ArrowDtype(pa.binary(16))),
    "halffloat[pyarrow]": lambda n: pd.Series(np.arange(n), dtype=pd.ArrowDtype(pa.float16())),
    "timestamp[us, UTC][pyarrow]": lambda n: pd.Series(pd.date_range("2023-05-01", periods=n, tz="UTC"))
    .astype("timestamp[us, UTC][pyarrow]"),
}

_DECIMALS = [decimal.Decimal("1.25"), None, *[decimal.Decimal("3.5")] * (ROWS - 2)]
# Arrow columns: a pyarrow Table's, an Arrow-backed pandas frame's (pd.ArrowDtype) and, where a NumPy column sits
# beside, the NumPy planner's.
ARROW: dict[str, pa.Array] = {
    **{name: pa.array(_with_null([1, 2, 3, 4, 5, 6]), getattr(pa, name)())
       for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")},
    "uint64 above 2^63": pa.array([2**63 + 5] * ROWS, pa.uint64()),
    "halffloat": pa.array(np.arange(ROWS, dtype="float16")),
    "float": pa.array(_with_null([1.5] * ROWS), pa.float32()),
    "double": pa.array(_with_null([1.5] * ROWS), pa.float64()),
    "bool": pa.array([True, False] * (ROWS // 2)),
    "bool with nulls": pa.array(_with_null([True, False] * (ROWS // 2))),
    "string": pa.array(TEXT),
    "large_string": pa.array(TEXT, pa.large_string()),
    "string_view": pa.array(TEXT, pa.string_view()),
    "string of nulls": pa.array([None] * ROWS, pa.string()),
    "binary": pa.array([b"ab", None, b"c", b"", b"e", b"f"]),
    "large_binary": pa.array([b"ab", None, b"c", b"", b"e", b"f"], pa.large_binary()),
    "binary_view": pa.array([b"ab", None, b"c", b"", b"e", b"f"], pa.binary_view()),
    "fixed_size_binary(4)": pa.array([b"0123"] * ROWS, pa.binary(4)),
    "fixed_size_binary(8)": pa.array([b"01234567"] * ROWS, pa.binary(8)),
    "fixed_size_binary(16)": pa.array([b"0123456789abcdef"] * ROWS, pa.binary(16)),
    "fixed_size_binary(32)": pa.array([bytes(range(32))] * ROWS, pa.binary(32)),
    "uuid": pa.array([uuid.UUID(int=i).bytes for i in range(ROWS)], pa.uuid()),
    "decimal32(7, 2)": pa.array(_DECIMALS, pa.decimal32(7, 2)),
    "decimal64(15, 3)": pa.array(_DECIMALS, pa.decimal64(15, 3)),
    "decimal128(10, 2)": pa.array(_DECIMALS, pa.decimal128(10, 2)),
    "decimal128(38, 10)": pa.array(_DECIMALS, pa.decimal128(38, 10)),
    "decimal256(50, 4)": pa.array(_DECIMALS, pa.decimal256(50, 4)),
    **{f"timestamp[{unit}{', ' + tz if tz else ''}]": pa.array(TIMES, pa.timestamp(unit, tz))
       for unit in ("s", "ms", "us", "ns") for tz in (None, "UTC")},
    "timestamp[us, Europe/Paris]": pa.array(TIMES, pa.timestamp("us", "Europe/Paris")),
    "date32": pa.array([dt.date(2023, 5, 1 + i) for i in range(ROWS)], pa.date32()),
    "date64": pa.array([dt.date(2023, 5, 1 + i) for i in range(ROWS)], pa.date64()),
    "time32[s]": pa.array([dt.time(1, i) for i in range(ROWS)], pa.time32("s")),
    "time64[us]": pa.array([dt.time(1, i) for i in range(ROWS)], pa.time64("us")),
    "duration[us]": pa.array([dt.timedelta(seconds=i) for i in range(ROWS)], pa.duration("us")),
    "list<double>": pa.array([[1.0, 2.0]] * ROWS, pa.list_(pa.float64())),
    "large_list<double>": pa.array([[1.0, 2.0]] * ROWS, pa.large_list(pa.float64())),
    "fixed_size_list<double>[2]": pa.array([[1.0, 2.0]] * ROWS, pa.list_(pa.float64(), 2)),
    "list<list<double>>": pa.array([[[1.0, 2.0], [3.0, 4.0]]] * ROWS, pa.list_(pa.list_(pa.float64()))),
    "list<int64>": pa.array([[1, 2]] * ROWS, pa.list_(pa.int64())),
    "list<string>": pa.array([["a"]] * ROWS, pa.list_(pa.string())),
    "dictionary<int32, string>": pa.array(TEXT).dictionary_encode(),
    "dictionary<uint32, string_view>": pa.DictionaryArray.from_arrays(pa.array([0, 1] * (ROWS // 2), pa.uint32()),
                                                                      pa.array(["x", "y"], pa.string_view())),
    "dictionary<int32, int64>": pa.array([1, 2] * (ROWS // 2)).dictionary_encode(),
    "struct": pa.array([{"a": 1}] * ROWS),
    "map": pa.array([[("a", 1)]] * ROWS, pa.map_(pa.string(), pa.int64())),
    "null": pa.nulls(ROWS),
    "month_day_nano_interval": pa.array([(1, 2, 3)] * ROWS, pa.month_day_nano_interval()),
}

POLARS: dict[str, Callable[[], pl.Series]] = {
    **{name: (lambda name=name: pl.Series(_with_null([1, 2, 3, 4, 5, 6]), dtype=getattr(pl, name)))
       for name in ("Int8", "Int16", "Int32", "Int64", "Int128", "UInt8", "UInt16", "UInt32", "UInt64", "UInt128")},
    **{name: (lambda name=name: pl.Series(_with_null([1.5] * ROWS), dtype=getattr(pl, name)))
       for name in ("Float16", "Float32", "Float64")},
    "Boolean with nulls": lambda: pl.Series(_with_null([True, False] * (ROWS // 2))),
    "String": lambda: pl.Series(TEXT),
    "Binary": lambda: pl.Series([b"ab", None, b"c", b"", b"e", b"f"]),
    "Categorical": lambda: pl.Series(TEXT, dtype=pl.Categorical),
    "Enum": lambda: pl.Series(["a", "b"] * (ROWS // 2), dtype=pl.Enum(["a", "b"])),
    "Decimal(38, 2)": lambda: pl.Series(_DECIMALS),
    "Date": lambda: pl.Series([dt.date(2023, 5, 1 + i) for i in range(ROWS)]),
    **{f"Datetime({unit})": (lambda unit=unit: pl.Series(TIMES).cast(pl.Datetime(unit))) for unit in ("ms", "us", "ns")},
    "Datetime(ns, Europe/Paris)": lambda: pl.Series(TIMES).cast(pl.Datetime("ns")).dt.replace_time_zone("Europe/Paris"),
    "Duration": lambda: pl.Series([dt.timedelta(seconds=i) for i in range(ROWS)]),
    "Time": lambda: pl.Series([dt.time(1, i) for i in range(ROWS)]),
    "List(Float64)": lambda: pl.Series([[1.0, 2.0]] * ROWS),
    "Array(Float64, 2)": lambda: pl.Series([[1.0, 2.0]] * ROWS, dtype=pl.Array(pl.Float64, 2)),
    "List(Int64)": lambda: pl.Series([[1, 2]] * ROWS),
    "Struct": lambda: pl.Series([{"a": 1}] * ROWS),
    "Null": lambda: pl.Series([None] * ROWS),
    "Object": lambda: pl.Series([object()] * ROWS, dtype=pl.Object),
}

# The kinds of frame, each with its catalogue.
KINDS = {"pandas": PANDAS, "pandas-arrow": ARROW, "pandas-mixed": ARROW, "arrow": ARROW, "polars": POLARS}
SYMBOLS = {
    "pandas": [*STRINGS_LIKE, "string_view[pyarrow]", "string (ArrowDtype)", "dictionary of strings[pyarrow]",
               "binary[pyarrow]", "object bytes", "category of strings with NaN", "object strings and ints"],
    "pandas-arrow": ["string", "large_string", "string_view", "dictionary<int32, string>",
                     "dictionary<uint32, string_view>", "dictionary<int32, int64>", "int64", "binary"],
    "arrow": ["string", "large_string", "string_view", "dictionary<int32, string>", "dictionary<uint32, string_view>",
              "dictionary<int32, int64>", "int64", "binary"],
    "polars": ["String", "Categorical", "Enum", "Int64", "Binary"],
}
TIMESTAMPS = {
    # The designated timestamp holds no null: the source refuses one before any audit.
    "pandas": [*TIMESTAMP_LIKE, "datetime64[s, UTC]", "timestamp[us, UTC][pyarrow]"],
    "pandas-arrow": [name for name in ARROW if name.startswith(("timestamp", "date"))] + ["int64", "string"],
    "arrow": [name for name in ARROW if name.startswith(("timestamp", "date"))] + ["int64", "string"],
    "polars": ["Date", "Datetime(ms)", "Datetime(us)", "Datetime(ns)", "Datetime(ns, Europe/Paris)", "Int64",
               "String"],
}
SITUATIONS = ([(kind, case, FIELD) for kind, catalogue in KINDS.items() for case in catalogue]
              + [(kind, case, SYMBOL) for kind, cases in SYMBOLS.items() for case in cases]
              + [(kind, case, DESIGNATED) for kind, cases in TIMESTAMPS.items() for case in cases])


def situation_id(situation) -> str:
    kind, case, role = situation
    return f"{kind}: {case} as {role}"


def column_for(kind: str, case: str, rows: int = ROWS):
    """The column of ``case`` as a frame of ``kind`` holds it."""
    if kind == "pandas":
        return PANDAS[case](rows)
    if kind == "polars":
        return POLARS[case]()
    array = ARROW[case]
    return array if kind == "arrow" else pd.Series(pd.arrays.ArrowExtensionArray(array))


def frame_of(kind: str, columns: dict, designated: bool):
    """``columns`` (name to column of ``kind``) in a frame of ``kind`` beside a float field ``x`` (so that no row is all
    nulls) and, unless one of them is the designated timestamp, ``ts``. An Arrow-backed pandas frame holds a
    pandas ``str`` column besides (Arrow-backed too: the frame stays on the Arrow stream); a NumPy-backed one
    (``pandas-mixed``: Arrow columns beside NumPy ones) goes to the NumPy planner."""
    x = np.arange(ROWS, dtype="float64")
    if kind == "arrow":
        return pa.table({**({} if designated else {"ts": pa.array(TS)}), **columns, "x": pa.array(x)})
    if kind == "polars":
        return pl.DataFrame({**({} if designated else {"ts": pl.Series(list(TS)).cast(pl.Datetime("ns"))}),
                             **columns, "x": x})
    if kind == "pandas-arrow":
        return pd.DataFrame({**({} if designated else {"ts": TS.astype("timestamp[ns][pyarrow]")}), **columns,
                             "x": pd.Series(x, dtype="double[pyarrow]"), "s": pd.Series(["s"] * ROWS, dtype="str")})
    return pd.DataFrame({**({} if designated else {"ts": TS}), **columns, "x": x})


def frame_for(situation, rows: int = ROWS):
    kind, case, role = situation
    return frame_of(kind, {"v": column_for(kind, case, rows)}, role == DESIGNATED)


def audit_of(frame, role: str):
    audits = qwp_audit_frame(frame, at="v" if role == DESIGNATED else "ts", symbols=["v"] if role == SYMBOL else [])
    (audit,) = [audit for audit in audits if audit.column == "v"]
    return audits, audit


def send(db, server, frame, table: str, at: str, symbols: list[str]) -> dict[str, str]:
    """``frame`` loaded by ``QuestDB.dataframe()``; the column types of the table the server made of it."""
    db.dataframe(frame, table_name=table, at=at, symbols=symbols)
    wait_for_count(server.client, table, len(frame), timeout=30)
    return dict(server.client.table_columns(table))


class Batches:
    """The accepted columns of many situations sent as one frame, a table per batch (a kind and a role; a
    designated timestamp alone): the type QuestDB gave each column, "absent" where it made none, None when the
    batch failed (its tests then send their own frames)."""

    def __init__(self, server):
        self.server = server
        self.db = questdb.connect(f"ws::addr={server.host}:{server.http_port};")
        self.types: dict[tuple, str | None] = {}

    def type_of(self, situation, situations: list, column_of: Callable[[tuple], object], name: str) -> str | None:
        if situation not in self.types:
            kind, _, role = situation
            batch = [other for other in situations if other[:1] + other[2:] == (kind, role)] \
                if role != DESIGNATED else [situation]
            columns = {"v" if role == DESIGNATED else f"c{index}": column_of(other) for index, other in enumerate(batch)}
            frame = frame_of(kind, columns, role == DESIGNATED)
            symbols = list(columns) if role == SYMBOL else []
            table = f"qwp_{name}_{len(self.types)}"
            try:
                types = send(self.db, self.server, frame, table, "v" if role == DESIGNATED else "ts", symbols)
            except (questdb.QuestDBError, TypeError):
                types = None
            finally:
                self.server.client.drop_table(table)
            for index, other in enumerate(batch):
                self.types[other] = (None if types is None else types["timestamp"] if role == DESIGNATED
                                     else types.get(f"c{index}", "absent"))
        return self.types[situation]

    def alone(self, frame, role: str, table: str) -> str | None:
        """``frame``'s ``v`` sent alone: the type QuestDB gave it (None: no column)."""
        try:
            types = send(self.db, self.server, frame, table, "v" if role == DESIGNATED else "ts",
                         ["v"] if role == SYMBOL else [])
            return types["timestamp"] if role == DESIGNATED else types.get("v")
        finally:
            self.server.client.drop_table(table)


@pytest.fixture(scope="module")
def batches(qwp_server):
    made = Batches(qwp_server)
    yield made
    made.db.close()


def accepted(situation) -> bool:
    return audit_of(frame_for(situation), situation[2])[1].accepted


@functools.cache
def accepted_situations() -> list:
    """The situations whose column QWP takes, sent together a kind (``Batches``); made when first asked, not at
    collection."""
    return [situation for situation in SITUATIONS if accepted(situation)]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("situation", SITUATIONS, ids=situation_id)
def test_the_audit_says_what_qwp_does(batches, situation):
    kind, case, role = situation
    frame = frame_for(situation)
    audits, audit = audit_of(frame, role)
    assert audit.role == role
    if audit.accepted:
        assert audit.path in (NUMPY_PLANNER, ARROW_STREAM, SKIPPED) and first_refusal(audits) is None
        assert (audit.questdb_type is None) == (audit.path == SKIPPED)
        created = batches.type_of(situation, accepted_situations(), lambda other: column_for(other[0], other[1]), "audit")
        if created is None:  # the batch failed: this column alone
            created = batches.alone(frame, role, f"qwp_audit_{SITUATIONS.index(situation)}")
        assert (None if created == "absent" else created) == audit.questdb_type
    else:
        assert audit.path == REFUSED and audit.questdb_type is None
        table = f"qwp_refused_{SITUATIONS.index(situation)}"
        with pytest.raises((questdb.QuestDBError, TypeError)) as raised:
            batches.alone(frame, role, table)
        assert audit.client_error in str(raised.value), (audit.client_error, str(raised.value))
        assert batches.server.client.table_columns(table) is None  # refused before anything landed
        line = first_refusal(audits)
        assert line.startswith(f"column 'v' ({audit.dtype}): {audit.refusal}; ") and "\n" not in line
        assert (f"convert it: {audit.fix}" if audit.fix else "no conversion") in line


FIXABLE = [situation for situation in SITUATIONS
           if not accepted(situation) and audit_of(frame_for(situation), situation[2])[1].fix]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("situation", FIXABLE, ids=situation_id)
def test_a_fix_makes_qwp_take_the_column(batches, situation):
    _, _, role = situation
    frame = frame_for(situation)
    audits, before = audit_of(frame, role)
    fixed = apply_fixes(frame, audits)
    _, after = audit_of(fixed, role)
    assert after.accepted, (before.fix, after)
    assert batches.alone(fixed, role, f"qwp_fixed_{FIXABLE.index(situation)}") == after.questdb_type


def test_the_catalogue_gives_a_verdict_on_each_awkward_dtype():
    """datetime64 of every unit, tz-aware, bytes, decimals, Arrow strings, categories, nullable columns, uint64,
    float16, timedelta, mixed objects: QWP's verdict on each, as established above."""
    verdicts = {situation: audit_of(frame_for(situation), situation[2])[1] for situation in SITUATIONS}

    def qwp(kind: str, case: str, role: str = FIELD) -> str:
        audit = verdicts[(kind, case, role)]
        return audit.questdb_type if audit.accepted else REFUSED

    assert [qwp("pandas", case) for case in ("datetime64[ns]", "datetime64[us]", "datetime64[ms]", "datetime64[s]")] \
        == ["TIMESTAMP_NS", "TIMESTAMP", "TIMESTAMP", "TIMESTAMP"]
    assert [qwp("arrow", case) for case in ("timestamp[ns]", "timestamp[us]", "timestamp[ms]", "timestamp[s]")] \
        == ["TIMESTAMP_NS", "TIMESTAMP", "DATE", "TIMESTAMP"]
    assert qwp("pandas", "datetime64[ms, UTC]") == REFUSED and qwp("pandas", "datetime64[ms, UTC]", DESIGNATED) \
        == "TIMESTAMP"
    assert qwp("pandas", "object bytes") == qwp("arrow", "binary") == qwp("polars", "Binary") == "BINARY"
    assert qwp("pandas", "object decimals") == qwp("pandas", "decimal128(10, 2)[pyarrow]") == "DECIMAL(38,2)"
    assert qwp("pandas", "object decimals of 41 digits") == "DECIMAL(76,1)"
    assert qwp("arrow", "string_view") == qwp("polars", "String") == "VARCHAR"
    assert qwp("pandas", "object strings", SYMBOL) == REFUSED and qwp("pandas", "str (pandas 3 default)", SYMBOL) \
        == "SYMBOL"
    assert qwp("pandas", "category of strings") == "VARCHAR" and qwp("pandas", "category of ints") == REFUSED
    assert qwp("pandas-mixed", "dictionary<int32, string>") == "SYMBOL"  # unasked, beside NumPy columns
    assert qwp("pandas", "Int8") == "LONG" and qwp("pandas", "int8") == qwp("arrow", "int8") == "INT"
    assert qwp("pandas", "float32") == qwp("polars", "Float16") == "FLOAT" and qwp("pandas", "float16") == REFUSED
    assert qwp("pandas", "boolean with nulls") == REFUSED and qwp("arrow", "bool with nulls") == "BOOLEAN"
    assert qwp("pandas-mixed", "bool") == REFUSED and qwp("pandas-arrow", "bool") == "BOOLEAN"
    assert qwp("pandas", "uint64") == "LONG" and qwp("pandas", "uint64 above 2^63") == REFUSED
    assert qwp("pandas", "timedelta64[ns]") == REFUSED and qwp("arrow", "duration[us]") == "LONG"
    assert qwp("pandas", "object ints and floats") == REFUSED and qwp("pandas", "object nulls only") is None
    assert qwp("pandas-arrow", "fixed_size_binary(16)") == REFUSED and qwp("arrow", "fixed_size_binary(16)") \
        == "BINARY"


def test_what_lands_otherwise_than_sent(batches):
    """The notes of the audit: a null in an Arrow boolean lands as false, a time of day and a duration as
    nanoseconds."""
    table = pa.table({"ts": pa.array(TS), "b": ARROW["bool with nulls"], "t": ARROW["time32[s]"],
                      "d": ARROW["duration[us]"]})
    audits = qwp_audit_frame(table, "ts", [])
    assert [(audit.questdb_type, audit.lands) for audit in audits[1:]] == [
        ("BOOLEAN", "a null lands as false"), ("LONG", "as nanoseconds since midnight"), ("LONG", "as nanoseconds")]
    try:
        send(batches.db, batches.server, table, "qwp_lands", "ts", [])
        _, rows = batches.server.client.query("select b, t, d from qwp_lands")
    finally:
        batches.server.client.drop_table("qwp_lands")
    assert [row[0] for row in rows] == [bool(value) for value in ARROW["bool with nulls"].to_pylist()]
    assert (rows[1][1], rows[1][2]) == (3_660_000_000_000, 1_000_000_000)  # 01:01:00; 1 s


# --- a run's refusal follows its way in --------------------------------------------------------------------------


def awkward_frame(rows: int = 3_000) -> pd.DataFrame:
    """Columns one way in refuses and the other takes, or types otherwise, beside plain ones."""
    rng = np.random.default_rng(7)
    ts = pd.date_range("2024-03-01", periods=rows, freq="s")
    return pd.DataFrame({
        "ts": ts.astype("datetime64[us]"),
        "host": pd.Categorical(rng.choice(["h1", "h2", "h3"], rows)),
        "seen": (ts - pd.Timedelta("3h")).astype("datetime64[us]"),
        "seen_ns": (ts + pd.Timedelta("1ns")).astype("datetime64[ns]"),
        "price": [decimal.Decimal(f"{value:.4f}") for value in rng.random(rows) * 1000],
        "raw": [bytes(rng.integers(0, 256, 5, dtype="uint8")) for _ in range(rows)],
        "name": pd.Series(rng.choice(["alpha", "beta", "gamma", None], rows), dtype="str"),
        "small": rng.integers(-100, 100, rows).astype("int8"),
        "ratio": rng.random(rows).astype("float32"),
        "count": rng.integers(0, 2**40, rows).astype("uint64"),
        "vector": [rng.random(3) for _ in range(rows)],
    })


def awkward_file(tmp_path) -> str:
    """``awkward_frame`` as Parquet: decimals as decimal128(18, 4), bytes as binary, lists of doubles."""
    frame = awkward_frame()
    schema = pa.schema([("ts", pa.timestamp("us")), ("host", pa.dictionary(pa.int32(), pa.string())),
                        ("seen", pa.timestamp("us")), ("seen_ns", pa.timestamp("ns")),
                        ("price", pa.decimal128(18, 4)), ("raw", pa.binary()), ("name", pa.string()),
                        ("small", pa.int8()), ("ratio", pa.float32()), ("count", pa.uint64()),
                        ("vector", pa.list_(pa.float64()))])
    path = tmp_path / "awkward.parquet"
    pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), path)
    return str(path)


def test_over_qwp_a_column_only_qwp_takes_is_sent_and_typed_as_qwp_makes_it():
    frame = awkward_frame(100)
    with pytest.raises(UsageError, match=r"column 'price' \(object\): the questdb client sends decimals only"):
        data_source(frame, at="ts", symbols=("host",))  # ILP, the default way in
    source = data_source(frame, at="ts", symbols=("host",), path=SendPath(qwp=True))
    (schema,) = source.schemas()
    assert dict(schema.columns) == {"host": "SYMBOL", "seen": "TIMESTAMP", "seen_ns": "TIMESTAMP_NS",
                                    "price": "DECIMAL(38,4)", "raw": "BINARY", "name": "VARCHAR", "small": "INT",
                                    "ratio": "FLOAT", "count": "LONG", "vector": "DOUBLE[]", "ts": "TIMESTAMP"}
    described = "\n".join(source.describe())
    assert "judged and the table typed by QWP (QuestDB.dataframe() of pandas frames), ILP" in described
    assert "QWP type" in described and "DECIMAL(38,4)" in described


@pytest.mark.parametrize("column, dtype, fix", [
    (pd.Series(["a", "b"] * 50, dtype=object), "object", "df['v'] = df['v'].astype('category')"),
    (pd.Series([True, False] * 50, dtype="bool[pyarrow]"), "bool[pyarrow]",
     "df['v'] = df['v'].fillna(False).astype('bool')"),
])
def test_over_qwp_a_column_qwp_refuses_is_refused_in_one_line(column, dtype, fix):
    """ILP takes both; QWP's NumPy planner takes no Python strings as a symbol, no bool[pyarrow] beside NumPy
    columns."""
    frame = pd.DataFrame({"ts": pd.date_range("2024", periods=100, freq="s"), "v": column})
    symbols = ("v",) if dtype == "object" else ()
    assert data_source(frame, symbols=symbols).refusal is None
    with pytest.raises(UsageError) as raised:
        data_source(frame, symbols=symbols, path=SendPath(qwp=True))
    message = str(raised.value)
    assert message.startswith(f"DataFrame: column 'v' ({dtype}): QWP") and f"convert it: {fix}" in message
    assert "\n" not in message


@pytest.mark.slow
def test_a_file_qwp_refuses_ends_the_run_before_anything_is_sent(qwp_questdb, tmp_path):
    path = tmp_path / "symbols.csv"
    pd.DataFrame({"ts": pd.date_range("2024", periods=50, freq="s"), "host": ["a", "b"] * 25}).to_csv(path,
                                                                                                      index=False)
    result = run_cli("bench", "--send", "--transport", "qwp", "--data", str(path), "--symbols", "host",
                     "--object-strings", "--host", qwp_questdb.host, "--http-port", str(qwp_questdb.http_port),
                     "--reporting-period", "0", "--sample-interval", "0", "--results", str(tmp_path / "r.json"))
    assert_one_line_error(result, 2, "column 'host' (object)", "QWP's NumPy planner takes symbols",
                          "--convert-dtypes", "astype('category')")
    assert qwp_questdb.client.table_columns("symbols") is None
    # Over ILP the same file is taken: its refusal was QWP's.
    assert data_source(str(path), symbols=("host",), object_strings=True).refusal is None


def _read_back(server, table: str, columns: list[str]) -> pa.Table:
    """The table's rows, ordered by ts, as the client's QWP query gives them (BINARY and DECIMAL whole)."""
    with questdb.connect(f"ws::addr={server.host}:{server.http_port};") as db:
        return db.query(f"select {', '.join(columns)} from '{table}' order by ts").to_arrow()


def _as_sent(values: list) -> list:
    """Values as the file holds them: timestamps naive UTC, Decimals and bytes as they are."""
    return [value.replace(tzinfo=None) if isinstance(value, dt.datetime) and value.tzinfo else value
            for value in values]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("frame", ["pandas", "pandas-arrow", "arrow", "polars"])
def test_a_file_of_awkward_columns_lands_exact_over_qwp(qwp_questdb, tmp_path, devnull, frame):
    """The table the run makes before sending is the one QWP makes of the data (sent again into a table QWP makes
    itself), and every value reads back as the file holds it."""
    table = "awkward"
    qwp_questdb.client.drop_table(table)
    path = awkward_file(tmp_path)
    options = BenchOptions(data=path, at="ts", send=True, transport="qwp", frame=frame, workers=2,
                           worker_chunk_row_count=700,
                           host=qwp_questdb.host, http_port=qwp_questdb.http_port, ilp_port=qwp_questdb.ilp_port,
                           reporting_period=0, sample_interval=0, results_dir=str(tmp_path / "results"))
    source = options.source()
    assert source.refusal is None and source.path == SendPath(2, True, FrameKind(frame))
    record = run_bench(options, out=devnull, source=source)
    assert record.status == "ok" and record.validation.visible_rows == 3_000
    made = dict(qwp_questdb.client.table_columns(table))
    assert made == dict(source.schemas()[0].columns)
    stored = {entry["column"]: entry for entry in record.parameters["audit"]}
    assert stored["price"]["path"] == REFUSED and stored["price"]["qwp"]["questdb_type"] == made["price"]
    # QWP's own table of the same rows: the same types (its designated timestamp named "timestamp").
    (piece,) = [chunk["awkward"] for chunk in source.chunks_as(FrameKind(frame), chunk_rows=3_000)]
    with questdb.connect(f"ws::addr={qwp_questdb.host}:{qwp_questdb.http_port};") as db:
        db.dataframe(piece, table_name="awkward_by_qwp", symbols=list(source.symbol_columns), at="ts")
    try:
        by_qwp = dict(qwp_questdb.client.table_columns("awkward_by_qwp"))
    finally:
        qwp_questdb.client.drop_table("awkward_by_qwp")
    assert {("ts" if name == "timestamp" else name): kind for name, kind in by_qwp.items()} == made
    names = list(made)
    landed = _read_back(qwp_questdb, table, names)
    sent = pq.read_table(path)
    for name in names:
        if name == "host":
            assert landed.column(name).to_pylist() == sent.column(name).cast(pa.string()).to_pylist()
        elif name == "vector":
            assert landed.column(name).to_pylist() == sent.column(name).to_pylist()
        else:
            assert _as_sent(landed.column(name).to_pylist()) == sent.column(name).to_pylist(), name
    qwp_questdb.client.drop_table(table)


@pytest.mark.slow
def test_the_command_line_run_over_qwp_lands_exact(qwp_questdb, tmp_path):
    qwp_questdb.client.drop_table("awkward")
    path = awkward_file(tmp_path)
    results = tmp_path / "r.json"
    result = run_cli("bench", "--send", "--transport", "qwp", "--data", path, "--at", "ts", "--host", qwp_questdb.host,
                     "--http-port", str(qwp_questdb.http_port), "--reporting-period", "0", "--sample-interval", "0",
                     "--results", str(results), timeout=300)
    assert result.returncode == 0, result.stderr
    assert "judged and the table typed by QWP" in result.stdout
    record = json.loads(results.read_text())
    assert record["validation"]["visible_rows"] == 3_000
    assert dict(qwp_questdb.client.table_columns("awkward"))["price"] == "DECIMAL(38,4)"
    landed = _read_back(qwp_questdb, "awkward", ["price", "raw"])
    sent = pq.read_table(path)
    assert landed.column("price").to_pylist() == sent.column("price").to_pylist()
    assert landed.column("raw").to_pylist() == sent.column("raw").to_pylist()
    qwp_questdb.client.drop_table("awkward")


# --- inspect ------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_inspect_shows_both_ways_and_judges_by_transport(tmp_path):
    path = awkward_file(tmp_path)
    ilp = run_cli("inspect", "--data", path, "--at", "ts")
    assert ilp.returncode == 2 and "QWP type" in ilp.stdout and "DECIMAL(38,4)" in ilp.stdout
    assert_one_line_error(ilp, 2, "column 'price' (object)", "decimals only under protocol version 3")
    qwp = run_cli("inspect", "--data", path, "--at", "ts", "--transport", "qwp")
    assert qwp.returncode == 0, qwp.stderr
    (header,) = [line.split() for line in qwp.stdout.splitlines() if line.startswith("column ")]
    assert header == ["column", "dtype", "role", "ILP", "path", "ILP", "type", "parallel", "QWP", "type", "note"]
    arrow = run_cli("inspect", "--data", path, "--at", "ts", "--transport", "qwp", "--frame", "arrow")
    assert arrow.returncode == 0 and "QWP dtype" in arrow.stdout and "decimal128(18, 4)" in arrow.stdout
    refused = run_cli("inspect", "--data", path, "--at", "ts", "--frame", "polars", "--convert-dtypes")
    assert_one_line_error(refused, 2, "--convert-dtypes", "--frame pandas")


def test_the_notebook_audit_holds_qwps_beside():
    frame = awkward_frame(50)
    audits = harness.inspect(frame, at="ts", symbols=["host"], transport="qwp", quiet=True)
    by_name = {audit.column: audit for audit in audits}
    assert not by_name["raw"].accepted and by_name["raw"].qwp.questdb_type == "BINARY"
    assert by_name["raw"].stored()["qwp"] == {"dtype": "object", "path": NUMPY_PLANNER, "questdb_type": "BINARY",
                                              "lands": None, "fix": None, "refusal": None}
    with pytest.raises(UsageError, match="column 'price'"):
        harness.inspect(frame, at="ts", symbols=["host"], quiet=True)
    polars = harness.inspect(pl.from_pandas(frame.drop(columns=["price", "raw"])), at="ts", transport="qwp",
                             quiet=True)
    assert {audit.column: audit.qwp.dtype for audit in polars}["name"] == "String"


@pytest.mark.slow
def test_a_sweep_trial_over_ilp_is_judged_by_ilp(tmp_path):
    """A source made for QWP, varied for a trial over ILP (tune's), is judged by ILP again."""
    source = data_source(awkward_frame(50).drop(columns=["price", "raw"]), at="ts", symbols=("host",),
                         path=SendPath(qwp=True))
    assert dict(source.schemas()[0].columns)["small"] == "INT"
    ilp = source.variant(False, SendPath(2))
    assert dict(ilp.schemas()[0].columns)["small"] == "LONG" and ilp.data is source.data



def test_the_numpy_planner_takes_an_arrow_column_only_whole_and_a_run_hands_it_so(batches):
    """A slice of a frame holding a pandas 3 ``str`` column beside NumPy ones is refused ("one contiguous zero-offset
    buffer"), and so is a ``pd.concat`` of two; each copied whole (what the run does to its chunks over QWP) is
    taken. A frame of Arrow-backed columns only goes to the Arrow stream, which takes slices as they are."""
    frame = pd.DataFrame({"ts": pd.date_range("2024", periods=10, freq="s"),
                          "s": pd.Series([f"v{i}" for i in range(10)], dtype="str")})
    # A table name each: the handle lands nothing in a table of a name it wrote before that was dropped since.
    for table, pieced in (("qwp_sliced", frame.iloc[3:6]), ("qwp_concat", pd.concat([frame.iloc[:5], frame.iloc[5:]]))):
        assert first_refusal(qwp_audit_frame(pieced, "ts", [])) is None  # not a dtype matter
        with pytest.raises(questdb.QuestDBError, match="one contiguous zero-offset buffer"):
            batches.db.dataframe(pieced, table_name=table, at="ts", symbols=[])
        whole = whole_arrow_columns(pieced)
        assert whole["s"].dtype == pieced["s"].dtype and whole["s"].tolist() == pieced["s"].tolist()
        try:
            assert send(batches.db, batches.server, whole, table, "ts", []) == {"s": "VARCHAR",
                                                                                "timestamp": "TIMESTAMP"}
        finally:
            batches.server.client.drop_table(table)
    arrow_only = frame.astype({"ts": "timestamp[us][pyarrow]"}).iloc[3:6]
    assert whole_arrow_columns(arrow_only) is arrow_only
