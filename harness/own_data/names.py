"""Column names as QuestDB takes them: which names it refuses, the name each refused one gets instead, and the
user's own ``old=new`` choices (``rename``). One rule, stated once:

QuestDB refuses a column name that is empty, longer than ``MAX_NAME_BYTES`` bytes of UTF-8, or holds any of
``REFUSED`` (``? . , ' " \\ / : ( ) + - * % ~``, the control characters and a byte-order mark); the client
refuses the same ones. A refused name gets each refused character replaced by ``_`` (so ``price (USD)`` becomes
``price _USD_`` and ``load %`` becomes ``load _``), is cut to ``MAX_NAME_BYTES`` bytes, and an empty name (a
CSV header cell left empty, as ``DataFrame.to_csv`` writes the index's) becomes ``column<i>``, its position from
0, the name a file without a header gives every column. QuestDB's names are case-insensitive: a name that
equals an earlier one but for case gets ``_2``, ``_3`` ... appended.

A file may repeat a name (a CSV's header, a Parquet or Arrow file's fields): each repeat is read under the first
free name of ``NAME_2``, ``NAME_3`` ... that no column of the file takes, its case aside (``unique_names``), the
change named as a rename.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import ParameterError, UsageError, named

# QuestDB's TableUtils.isValidColumnName, and the client's own check.
REFUSED = frozenset("?.,'\"\\/:)(+-*%~\x7f\ufeff") | frozenset(chr(code) for code in range(0x10))
# cairo.max.file.name.length: a column is a file of that name.
MAX_NAME_BYTES = 127


def positional_name(position: int) -> str:
    """The name of a column that has none (a file without a header, an empty header cell)."""
    return f"column{position}"


def unique_names(names: Sequence[str]) -> list[str]:
    """``names`` with every repeat of an earlier name given the first free suffix (``ISE``, ``ISE_2``; ``ISE_3``
    where a column is already named ``ISE_2`` or ``ise_2``)."""
    taken = {name.lower() for name in names}
    seen: set[str] = set()
    result = []
    for name in names:
        if name in seen:
            number = 2
            while f"{name}_{number}".lower() in taken:
                number += 1
            name = f"{name}_{number}"
            taken.add(name.lower())
        seen.add(name)
        result.append(name)
    return result


def refusal(name: str) -> str | None:
    """Why QuestDB refuses ``name`` as a column name, or None when it takes it."""
    if not name:
        return "empty"
    if len(name.encode()) > MAX_NAME_BYTES:
        return f"longer than {MAX_NAME_BYTES} bytes"
    bad = sorted({char for char in name if char in REFUSED})
    if bad:
        return "holds " + " ".join(repr(char) for char in bad)
    return None


def safe_name(name: str, position: int) -> str:
    """``name`` made a name QuestDB takes, by the rule above (case-insensitive clashes aside)."""
    if not name:
        return positional_name(position)
    fixed = "".join("_" if char in REFUSED else char for char in name)
    encoded = fixed.encode()
    if len(encoded) > MAX_NAME_BYTES:
        fixed = encoded[:MAX_NAME_BYTES].decode(errors="ignore")
    return fixed


def parse_renames(text: str | None) -> tuple[tuple[str, str], ...]:
    """``old=new,old=new`` as pairs; a pair without ``=`` or with an empty side is refused in one line."""
    if text is None or not text.strip():
        return ()
    pairs = []
    for item in text.split(","):
        old, equals, new = item.partition("=")
        if not equals or not old.strip() or not new.strip():
            raise ParameterError("rename", f"OLD=NEW[,OLD=NEW...], got {item.strip()!r}")
        pairs.append((old.strip(), new.strip()))
    return tuple(pairs)


def column_names(names: Sequence[str], renames: Sequence[tuple[str, str]], source: str) -> list[str]:
    """The name each column gets, in order: the user's ``renames`` first (a rename of a column the data lacks, or
    to a name QuestDB still refuses, is refused in one line), then the rule for every other refused name, then
    case-insensitive clashes numbered."""
    chosen = dict(renames)
    rename = named("rename")
    for old, new in renames:
        if old not in names:
            raise UsageError(f"{rename} {old}={new}: {source} has no column {old!r} (columns: "
                             f"{', '.join(repr(name) for name in names)})")
        if (why := refusal(new)) is not None:
            raise UsageError(f"{rename} {old}={new}: QuestDB refuses the column name {new!r} ({why})")
    result: list[str] = []
    taken: set[str] = set()
    for position, name in enumerate(names):
        wanted = chosen.get(name)
        if wanted is None:
            wanted = name if refusal(name) is None else safe_name(name, position)
        final, number = wanted, 2
        while final.lower() in taken:
            if name in chosen:
                raise UsageError(f"{rename} {name}={wanted}: another column of {source} is already named {wanted!r} "
                                 f"(QuestDB's names are case-insensitive)")
            final, number = f"{wanted}_{number}", number + 1
        taken.add(final.lower())
        result.append(final)
    return result
