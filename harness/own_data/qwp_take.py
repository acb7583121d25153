"""How QWP's ``QuestDB.dataframe()`` takes a column (``Take``), the client's words for a column that cannot play a
role (the designated timestamp, a symbol), and a refusal: the vocabulary ``qwp_dtypes`` and ``qwp_objects`` judge
columns in."""

from __future__ import annotations

from dataclasses import dataclass

from harness.own_data.client_dtypes import REFUSED
from harness.own_data.dtype_conversions import Conversion

# How QWP's client takes a column (``Take.path``): the planner of the whole frame.
NUMPY_PLANNER = "NumPy planner"
ARROW_STREAM = "Arrow stream"

# The client's words when a column cannot play a role: the designated timestamp, a symbol.
PLANNER_AT = "Bad argument `at`"
ARROW_AT = "is not Timestamp(_)"
PLANNER_SYMBOL = "Must be a strings column"
PLANNER_OBJECT_SYMBOL = "v1 only supports pandas string Categorical or string[pyarrow] symbol columns"
# What the NumPy planner takes as a symbol: neither Python str objects nor string[python], nor string_view[pyarrow].
PLANNER_STRINGS = {"symbol_refusal": "QWP's NumPy planner takes symbols from categories of strings and Arrow-backed "
                                     "strings (not string_view) only", "symbol_error": PLANNER_OBJECT_SYMBOL}
ARROW_SYMBOL = "is not a strings column"
# Decimal precisions of QuestDB's DECIMAL columns QWP makes, by the bits of the Arrow decimal it is sent as.
DECIMAL_PRECISION = {32: 18, 64: 18, 128: 38, 256: 76}


@dataclass(frozen=True)
class Take:
    """How QWP's client takes a column, before its role is known. As a field: ``field_type`` (None: no column is made,
    ``SKIPPED``), or ``refusal`` in the client's words ``client_error`` and the ``conversion`` that makes it accepted;
    ``early``: the client refuses it whatever its role. As the designated timestamp: ``at_type``, or refused in the
    words ``at_error``, ``at_conversion`` the fix. As a symbol: ``symbol``, or refused in the words
    ``symbol_error``, ``symbol_conversion`` the fix; ``always_symbol``: a SYMBOL even when ``symbols`` leaves it out.
    ``symbol_refusal`` says why it is no symbol. ``lands``: what lands otherwise than it was sent (a null boolean as
    false). ``nulls``: whether it holds a null (which the designated timestamp may not); ``route``: the planner of
    its frame (``path`` where the client takes it)."""

    path: str
    field_type: str | None = None
    at_type: str | None = None
    symbol: bool = False
    always_symbol: bool = False
    lands: str | None = None
    refusal: str | None = None
    client_error: str | None = None
    conversion: Conversion | None = None
    early: bool = False
    at_error: str = PLANNER_AT
    at_conversion: Conversion | None = None
    symbol_refusal: str = "QWP takes symbols from string columns only"
    symbol_error: str = PLANNER_SYMBOL
    symbol_conversion: Conversion | None = None
    nulls: bool = False
    route: str = NUMPY_PLANNER

    @property
    def at_null_error(self) -> str:
        """The client's words for a null in the designated timestamp."""
        return "cannot contain NaT" if self.at_error == PLANNER_AT else "must have no null rows"


def refused(refusal: str, client_error: str, conversion: Conversion | None = None, early: bool = False,
            **role) -> Take:
    """A column QWP refuses: why, in the client's words, and the conversion that makes it accepted."""
    return Take(REFUSED, refusal=refusal, client_error=client_error, conversion=conversion, early=early, **role)


def timestamp_type(unit: str) -> str:
    """The QuestDB type QWP makes of a timestamp of ``unit``."""
    return "TIMESTAMP_NS" if unit == "ns" else "TIMESTAMP"
