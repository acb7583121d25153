"""Checking a query's answer against the reference: equal values, in the order the server promises.

Which order the pinned QuestDB promises (from its query plans): an unkeyed SAMPLE BY sorts its buckets by
time, and ORDER BY orders; a keyed SAMPLE BY (``SELECT hostname, avg(...) ... SAMPLE BY 1h``) sorts only
by the bucket, so the keys of one bucket come in hash-map order: only each key's own rows keep time
order; a filtered ``SELECT *`` scans the table forward, so rows come in timestamp order with rows of one
timestamp in no promised order; ``latest by`` promises no order at all. The iot queries' rules are their
reference's (``order_rule``): ``ORDER BY name, day`` is compared in order, ``ORDER BY day`` in day order,
the rest as sets of rows.
"""

from __future__ import annotations

import math
import operator
import threading

from harness.errors import RunError
from harness.queries.answer import Answer
from harness.queries.wire_sql import QueryShape, inline_params, one_line, shape_of
from harness.tsbs.query_types import Query

RELATIVE_TOLERANCE = 1e-9
# A relative tolerance accepts nothing next to an exact zero, yet an average summed in another order can
# land a few ulps of its summands (values up to 100, ulp ~1e-14) off zero; this is only used where the
# expected value is exactly zero.
ZERO_ABSOLUTE_TOLERANCE = 1e-12
ROWS_SHOWN = 5

EXACT, PER_KEY, TIME_ORDER, DAY_ORDER, UNORDERED = "exact", "per key", "time order", "day order", "unordered"
# The column whose order a TIME_ORDER or DAY_ORDER answer must keep.
_ORDERED_COLUMN = {TIME_ORDER: "timestamp", DAY_ORDER: "day"}
_ORDER_NOTES = {
    EXACT: "compared in order",
    PER_KEY: "compared per hostname, each hostname's rows in order; hostnames of one bucket in any order",
    TIME_ORDER: "compared in timestamp order; rows of one timestamp in any order",
    DAY_ORDER: "compared in day order; rows of one day in any order",
    UNORDERED: "compared as sets of rows (no order promised)",
}


def order_rule(shape: QueryShape) -> str:
    """How rows must be ordered for this query (see the module docstring)."""
    if shape.order_by_timestamp is not None:
        return EXACT
    if shape.sample_by_micros is not None:
        return PER_KEY if shape.key_columns else EXACT
    if shape.latest_by is not None:
        return UNORDERED
    return TIME_ORDER


def values_equal(expected, actual) -> bool:
    """Equal cells: floats within 1e-9 relative (sums taken in another order differ in the last bits)."""
    if isinstance(expected, float) and isinstance(actual, (float, int)) and not isinstance(actual, bool):
        if math.isnan(expected) or math.isnan(actual):
            return math.isnan(expected) and math.isnan(actual)
        absolute = ZERO_ABSOLUTE_TOLERANCE if expected == 0.0 else 0.0
        return math.isclose(expected, actual, rel_tol=RELATIVE_TOLERANCE, abs_tol=absolute)
    # Types must agree otherwise: a LONG answered as DOUBLE (or the reverse) is a wrong answer.
    return type(expected) is type(actual) and expected == actual


def rows_equal(expected: tuple, actual: tuple) -> bool:
    return len(expected) == len(actual) and all(values_equal(e, a) for e, a in zip(expected, actual))


def _tagged_sort_key(row: tuple) -> tuple:
    # Exact cells (strings, ints, None) first so that rows tie-break on them, not on floats that may
    # differ in their last bits; each cell tagged by kind so that mixed types and None still compare.
    exact = tuple((0, "") if cell is None else (1, cell) if isinstance(cell, str) else (2, cell)
                  for cell in row if not isinstance(cell, float))
    inexact = tuple(cell for cell in row if isinstance(cell, float))
    return exact, inexact


def _sorted_rows(rows: list[tuple], template: tuple | None) -> list[tuple]:
    """Rows sorted on their exact cells, then their floats (cell kinds taken from ``template``)."""
    if template is not None:
        exact = [position for position, cell in enumerate(template) if not isinstance(cell, float)]
        inexact = [position for position, cell in enumerate(template) if isinstance(cell, float)]
        try:
            # itemgetter builds the key in C: a high-cpu-all answer has tens of thousands of rows.
            return sorted(rows, key=operator.itemgetter(*exact, *inexact))
        except (TypeError, IndexError):
            pass  # a NULL, a cell of another type or a short row: the slower key copes with all of them
    return sorted(rows, key=_tagged_sort_key)


def _order_violation(answer: Answer, column: str) -> str | None:
    if column not in answer.columns:
        return None
    position = answer.columns.index(column)
    for index in range(1, len(answer.rows)):
        previous, current = answer.rows[index - 1][position], answer.rows[index][position]
        if isinstance(previous, int) and isinstance(current, int) and current < previous:
            return f"actual rows are not in {column} order: row {index} ({current}) comes after {previous}"
    return None


def _per_key(answer: Answer) -> dict:
    position = answer.columns.index("hostname") if "hostname" in answer.columns else 0
    groups: dict = {}
    for row in answer.rows:
        groups.setdefault(row[position], []).append(row)
    return groups


def _differences(expected: list[tuple], actual: list[tuple]) -> list[tuple[int, tuple | None, tuple | None]]:
    """(position, expected row, actual row) where they differ, a missing row as None."""
    differing = []
    for index in range(max(len(expected), len(actual))):
        want = expected[index] if index < len(expected) else None
        got = actual[index] if index < len(actual) else None
        if want is None or got is None:
            differing.append((index, want, got))
        # Equal tuples of cells of the same types are equal rows; only the rest need the tolerance.
        elif not (want == got and tuple(map(type, want)) == tuple(map(type, got))) and not rows_equal(want, got):
            differing.append((index, want, got))
    return differing


def compare(query: Query, actual: Answer, expected: Answer, rule: str | None = None) -> str | None:
    """None when ``actual`` equals ``expected``; else a readable multi-line description of how it differs.
    ``rule``: the row order to hold the answer to (default: the one a cpu-only query's SQL promises)."""
    rule = rule or order_rule(shape_of(query))
    problems: list[str] = []
    differing: list[tuple[str, int, tuple | None, tuple | None]] = []
    if [name.lower() for name in actual.columns] != [name.lower() for name in expected.columns]:
        problems.append(f"columns: expected {expected.columns}, actual {actual.columns}")
    elif rule == EXACT:
        differing = [("row", *difference) for difference in _differences(expected.rows, actual.rows)]
    elif rule == PER_KEY:
        want_groups, got_groups = _per_key(expected), _per_key(actual)
        for key in sorted(set(want_groups) | set(got_groups), key=lambda k: (str(type(k)), k)):
            for index, want, got in _differences(want_groups.get(key, []), got_groups.get(key, [])):
                differing.append((f"{key!s} row", index, want, got))
    else:
        if rule in _ORDERED_COLUMN and (violation := _order_violation(actual, _ORDERED_COLUMN[rule])):
            problems.append(violation)
        template = expected.rows[0] if expected.rows else None
        differing = [("sorted row", *difference) for difference in
                     _differences(_sorted_rows(expected.rows, template), _sorted_rows(actual.rows, template))]
    if not problems and not differing:
        return None
    query_type = query.query_type
    sql = one_line(inline_params(query.sql, query.params))
    lines = [
        f"query type {query_type}: the answer differs from the reference",
        f"  SQL: {sql}",
        f"  rows: expected {len(expected.rows)}, actual {len(actual.rows)} ({_ORDER_NOTES[rule]})",
        *(f"  {problem}" for problem in problems),
    ]
    if differing:
        lines.append(f"  {len(differing)} differing row(s); the first {min(ROWS_SHOWN, len(differing))}:")
        for label, index, want, got in differing[:ROWS_SHOWN]:
            lines.append(f"    {label} {index}: expected {_show(want)}")
            lines.append(f"    {' ' * len(f'{label} {index}')}    actual {_show(got)}")
    return "\n".join(lines)


def _show(row: tuple | None) -> str:
    return "(no row)" if row is None else repr(row)


class AnswerChecker:
    """The ``on_answer(query, answer)`` callback of the query runner: checks every answer against the
    reference (its ``expected(query)`` in its ``order_rule(query)``) as it comes and keeps the mismatches.
    Safe to call from several worker threads."""

    def __init__(self, reference):
        self.reference = reference
        self.checked = 0
        self.mismatches: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, query, answer: Answer) -> None:
        description = compare(query, answer, self.reference.expected(query), self.reference.order_rule(query))
        with self._lock:
            self.checked += 1
            if description is not None:
                self.mismatches.append(description)

    def error(self) -> RunError | None:
        """None when every answer matched; else a one-line RunError (the details are in ``mismatches``)."""
        if not self.mismatches:
            return None
        first_type = self.mismatches[0].split(":", 1)[0]
        return RunError(f"{len(self.mismatches)} of {self.checked} query answers differ from the reference "
                        f"(the first: {first_type})")
