"""Missing values a text file marks with a placeholder: a CSV's or JSON lines file's column read as text whose values
are numbers but for a few placeholders (``-``, ``?``, ``NA`` ...) is read as numbers, the placeholders nulls. The
rule, stated once (docs/own-data.md says it too), on the column's first ``HEAD_ROWS`` values, blanks around a value
aside:

- it holds a number, and besides numbers at most ``MAX_TOKENS`` distinct values, each a placeholder: a word of
  ``NULL_WORDS`` (any case), or punctuation alone (``-``, ``--``, ``?``, ``.``; an empty text), however often it
  comes; the tokens ``na_values`` names (``--na-values``) are placeholders too, and not counted among the three;
- it is then int64 where every number is an integer (and fits), else double; its placeholders nulls, counted;
- further on, a value that is neither a number nor one of its placeholders (those found, those named) ends the read
  in one line naming it, its line, ``--na-values`` and ``--keep-text`` (``Unexpected``): the type decided on the
  first rows is never changed in silence; a decimal in an int64 column widens it to double, named.

A column the user keeps as text (``--keep-text``), a symbol or a timestamp is left alone, as is one whose other
values are not placeholders (a label ``NA`` among ``EU`` and ``US``): where numbers are at least half of its values,
a line says that it stays text and why (``kept_as_text``). A column whose every value is a token ``--na-values``
names would be left with nothing: refused in one line (``decide``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from harness.errors import UsageError, named

MAX_TOKENS = 3
NULL_WORDS = frozenset({"na", "n/a", "n.a.", "nan", "null", "none", "nil", "#n/a", "missing"})
# A number as Arrow's cast from text reads one: digits, a sign in front, a decimal point, an exponent.
NUMBER = r"^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
INTEGER = r"^-?\d+$"
# The text pyarrow's CSV reader would have made nulls of (its default null values, and empty): for a text column
# read as timestamps, nulls still (``as_nulls``).
ARROW_NULLS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "N/A", "NA",
               "NULL", "NaN", "n/a", "nan", "null")


def is_placeholder(token: str) -> bool:
    """Whether the rule takes ``token`` (stripped) for a placeholder: a null word, or punctuation alone."""
    return token.lower() in NULL_WORDS or not any(char.isalnum() for char in token)


def parse_tokens(text: str | None) -> tuple[str, ...]:
    """``--na-values TOK,TOK`` as the tokens, blanks around each aside."""
    return tuple(dict.fromkeys(token.strip() for token in (text or "").split(",") if token.strip()))


class Unexpected(Exception):
    """A value further on in a placeholder column that is not one of its values: its column (the file's name), row
    in the batch, value, and whether it is a decimal number (its int64 column is widened to double instead)."""

    def __init__(self, column: str, position: int, value: str, decimal: bool, tokens: tuple[str, ...]):
        shown = ", ".join(repr(token) for token in tokens)
        super().__init__(f"column {column!r}: {value!r} is neither a number nor a placeholder for a missing value its "
                         f"first rows held ({shown}): {named('na_values')} {','.join((*tokens, value))} reads it as "
                         f"missing, {named('keep_text')} {column} keeps the column as text")
        self.column, self.position, self.value, self.decimal = column, position, value, decimal


@dataclass(frozen=True)
class Placeholders:
    """A text column read as numbers of ``type`` (int64 or double), its ``tokens`` nulls."""

    column: str
    tokens: tuple[str, ...]
    type: pa.DataType

    def describe(self) -> str:
        return f"numbers, {', '.join(repr(token) for token in self.tokens)} read as missing"

    def convert(self, column: pa.Array) -> tuple[pa.Array, dict[str, int]]:
        """``column`` (text) as numbers, and how many of each token it held; a value neither a number nor a token
        raises Unexpected."""
        trimmed = pc.utf8_trim_whitespace(column)
        token = pc.fill_null(pc.is_in(trimmed, value_set=pa.array(self.tokens, pa.string())), False)
        counts = {}
        if pc.any(token).as_py():
            counts = {item["values"].as_py(): item["counts"].as_py()
                      for item in pc.value_counts(trimmed.filter(token))}
        number = pc.fill_null(pc.match_substring_regex(trimmed, NUMBER), True)
        wrong = pc.and_(pc.invert(number), pc.invert(token))
        if pa.types.is_integer(self.type):
            wrong = pc.or_(wrong, pc.and_(number, pc.invert(pc.fill_null(pc.match_substring_regex(trimmed, INTEGER),
                                                                       True))))
        if pc.any(wrong).as_py():
            position = pc.index(wrong, True).as_py()
            raise Unexpected(self.column, position, column[position].as_py(), number[position].as_py(), self.tokens)
        kept = pc.if_else(token, pa.scalar(None, pa.string()), trimmed)
        return kept.cast(self.type), counts


def decide(column: str, values: pa.Array, given: tuple[str, ...]) -> Placeholders | str | None:
    """What the rule makes of a text ``column`` whose first values are ``values``, ``given`` the tokens of
    ``--na-values``: its Placeholders, or why it stays text though numbers are at least half of it, or None (text,
    nothing to say); every value one of ``given`` is refused in one line."""
    trimmed = pc.utf8_trim_whitespace(values.drop_null())
    if not len(trimmed):
        return None
    number = pc.match_substring_regex(trimmed, NUMBER)
    numbers = pc.sum(number).as_py() or 0
    others = {item["values"].as_py(): item["counts"].as_py()
              for item in pc.value_counts(trimmed.filter(pc.invert(number)))}
    if not numbers:
        if others and set(others) <= set(given):
            raise UsageError(f"{named('na_values')} {','.join(given)}: every value of column {column!r} in its first "
                             f"{len(values)} rows is one of them, so nothing would be left of it: leave them out, or "
                             f"keep the column as text with {named('keep_text')} {column}")
        return None
    if not others:
        return None  # numbers written as text (a JSON file's quoted numbers): text, as the file says
    found = [token for token in others if token not in given]
    if len(found) <= MAX_TOKENS and all(is_placeholder(token) for token in found):
        numbers_text = trimmed.filter(number)
        whole = pc.all(pc.match_substring_regex(numbers_text, INTEGER)).as_py()
        if whole:
            try:
                numbers_text.cast(pa.int64())
            except pa.ArrowInvalid:  # beyond int64
                whole = False
        tokens = tuple(sorted(others, key=lambda token: (-others[token], token))) + \
            tuple(token for token in given if token not in others)
        return Placeholders(column, tokens, pa.int64() if whole else pa.float64())
    if numbers * 2 >= len(trimmed):
        shown = ", ".join(repr(token) for token in sorted(others, key=lambda token: -others[token])[:4])
        return (f"{column}: numbers but for {len(others)} other values ({shown}{' ...' if len(others) > 4 else ''}); "
                f"{named('na_values')} TOK,TOK... reads such values as missing")
    return None


def read_as_numbers(head: pa.Table, texts: list[str], given: tuple[str, ...]) -> tuple[dict[str, Placeholders],
                                                                                   list[str]]:
    """Of ``texts``, the text columns of ``head`` (a file's first rows), those the rule reads as numbers, by name,
    and why each column of numbers, mostly, stays text (``decide``)."""
    found, kept = {}, []
    for name in texts:
        if name in head.column_names:
            decided = decide(name, head.column(name), given)
            if isinstance(decided, str):
                kept.append(decided)
            elif decided is not None:
                found[name] = decided
    return found, kept


def as_nulls(column: pa.Array) -> pa.Array:
    """A text ``column`` with ``ARROW_NULLS`` nulls: a timestamp column's placeholders, as they always were."""
    return pc.if_else(pc.fill_null(pc.is_in(column, value_set=pa.array(ARROW_NULLS, column.type)), False),
                      pa.scalar(None, column.type), column)
