"""What a file's reader gives, made what the client takes, before the dtype audit sees it: each record batch's
timestamps parsed (``harness.own_data.timestamps``; columns joined into one, ``harness.own_data.joined_times``),
its types normalised, its column names made QuestDB's (``harness.own_data.names``). Decided once from the file's
schema and first rows (a day and month that read either way: by the read before sending); every conversion named,
so that ``inspect`` shows it, ``bench --data`` prints it and the record keeps it.

Types, as pyarrow's readers give them, and what is sent instead:

- ``timestamp[s]``, ``timestamp[ms]`` (naive or with a zone): ``timestamp[us]``, the same instants (the client
  refuses tz-aware second and millisecond timestamps, and QuestDB's TIMESTAMP is microseconds).
- ``date32``, ``date64``: ``timestamp[us]`` at midnight UTC (the client refuses ``datetime.date`` objects).
- ``time32``, ``time64``: the time of day as text (``HH:MM:SS[.ffffff]``): QuestDB has no time-of-day type.
- a column with no values at all (``null``): text, every value NULL.
- ``halffloat``: ``float``; ``string_view``: ``string``; a ``struct`` (JSON's nested objects): a column per
  field, named ``parent.field`` before the name rule makes it ``parent_field``.
- a text file's column of numbers with placeholders for missing values (``-``, ``?``, ``NA``): int64 or double,
  the placeholders nulls, counted (``harness.own_data.placeholders``: the rule); a text column parsed as
  timestamps (or joined into one) has ``NA``, ``null``, ``NaN`` ... (``ARROW_NULLS``) as nulls.

Integer and boolean columns holding nulls anywhere in the file become pandas' nullable ``Int64`` and
``boolean`` in every piece (pandas would give a piece with nulls ``float64`` or ``object``, a piece without
``int64`` or ``bool``: one column, two dtypes): ``nullable`` names their types for ``harness.own_data.files``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from harness.own_data import placeholders as placeholder_rule
from harness.own_data.joined_times import JoinedTime
from harness.own_data.names import column_names, refusal
from harness.own_data.timestamps import BadValue, TimeParser


@dataclass(frozen=True)
class Conversion:
    """One column's conversion: the file's name, what the file holds, what is sent, how."""

    column: str
    source: str
    result: str
    how: str

    def stored(self) -> dict:
        return {"column": self.column, "from": self.source, "to": self.result, "how": self.how}

    def line(self) -> str:
        return f"{self.column}: {self.source} -> {self.result} ({self.how})"


class BadRow(Exception):
    """A value of a parsed column that does not parse: its column (the file's name), row in the batch, value
    and why."""

    def __init__(self, column: str, position: int, value: object, why: str):
        super().__init__(why)
        self.column, self.position, self.value, self.why = column, position, value, why


def target_type(arrow_type: pa.DataType) -> tuple[pa.DataType, str] | None:
    """The type sent instead of ``arrow_type`` and how, or None when it is sent as it is."""
    if pa.types.is_timestamp(arrow_type) and arrow_type.unit in ("s", "ms"):
        return pa.timestamp("us", arrow_type.tz), f"{arrow_type.unit} precision to microseconds"
    if pa.types.is_date(arrow_type):
        return pa.timestamp("us"), "dates at midnight UTC"
    if pa.types.is_time(arrow_type):
        return pa.string(), "the time of day as text: QuestDB has no time-of-day type"
    if pa.types.is_null(arrow_type):
        return pa.string(), "no values: text, every value NULL"
    if pa.types.is_float16(arrow_type):
        return pa.float32(), "half floats to float"
    if arrow_type == pa.string_view():
        return pa.string(), "string_view to string"
    return None


def flatten_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every struct field a field per child (``parent.child``), as ``Table.flatten`` does."""
    fields = []
    for item in schema:
        if pa.types.is_struct(item.type):
            fields.extend(flatten_schema(pa.schema([pa.field(f"{item.name}.{child.name}", child.type)
                                                    for child in item.type])))
        else:
            fields.append(item)
    return pa.schema(fields)


@dataclass
class Normalisation:
    """The plan for every batch of one file: ``parsers`` (by the file's column name), the columns joined into one
    timestamp (``join``: their struct, by the joined name, is parsed as a column is), text columns of numbers with
    placeholders (``placeholders``, by the file's name), the type conversions, the final names (of the columns as
    joined: ``joined_schema``); ``schema``: what each batch becomes."""

    raw_schema: pa.Schema  # flattened
    parsers: dict[str, TimeParser | JoinedTime]
    names: list[str]
    bad_rows: str = "fail"
    join: JoinedTime | None = None
    placeholders: dict[str, placeholder_rule.Placeholders] = field(default_factory=dict)
    joined_schema: pa.Schema = field(init=False)
    schema: pa.Schema = field(init=False)

    def __post_init__(self) -> None:
        self.joined_schema = joined_schema(self.raw_schema, self.join)
        if self.join is not None:
            self.parsers = {**self.parsers, self.join.name: self.join}
        fields, self._casts = [], {}
        for item, name in zip(self.joined_schema, self.names):
            parser = self.parsers.get(item.name)
            if parser is not None:
                fields.append(pa.field(name, parser.type))
                continue
            if (numbers := self.placeholders.get(item.name)) is not None:
                fields.append(pa.field(name, numbers.type))
                continue
            target = target_type(item.type)
            if target is not None:
                self._casts[item.name] = target[0]
            fields.append(pa.field(name, item.type if target is None else target[0]))
        self.schema = pa.schema(fields)

    @property
    def conversions(self) -> list[Conversion]:
        """Each column's conversion, as decided so far (a day and month decided while reading said so)."""
        found = []
        for item in self.joined_schema:
            parser = self.parsers.get(item.name)
            if self.join is not None and parser is self.join:
                source = " + ".join(_source(self.raw_schema.field(part).type) for part in self.join.parts)
                found.append(Conversion(self.join.spec, source, str(parser.type), parser.describe()))
            elif parser is not None:
                found.append(Conversion(item.name, _source(item.type), str(parser.type), parser.describe()))
            elif (numbers := self.placeholders.get(item.name)) is not None:
                found.append(Conversion(item.name, "text", str(numbers.type), numbers.describe()))
            elif (target := target_type(item.type)) is not None:
                found.append(Conversion(item.name, str(item.type), str(target[0]), target[1]))
        return found

    def undecided(self) -> list[TimeParser | JoinedTime]:
        """The parsers whose day and month no value has told yet."""
        return [parser for parser in self.parsers.values() if parser.undecided]

    def file_columns(self, columns: list[str] | None) -> list[str] | None:
        """``columns`` (as joined) as the file's: a joined column its parts."""
        if columns is None or self.join is None:
            return columns
        return [part for name in columns for part in (self.join.parts if name == self.join.name else (name,))]

    @property
    def renames(self) -> dict[str, str]:
        """The file's names that change, each to its new one."""
        return {old: new for old, new in zip(self.joined_schema.names, self.names) if old != new}

    def rename_lines(self) -> list[str]:
        return [f"{old!r} -> {new!r}" + (f" (QuestDB refuses it: {why})" if (why := refusal(old)) else "")
                for old, new in self.renames.items()]

    def final_name(self, raw: str) -> str:
        return self.names[self.joined_schema.names.index(raw)]

    def raw_name(self, final: str) -> str:
        return self.joined_schema.names[self.names.index(final)]

    def apply(self, batch: pa.RecordBatch, tally: dict[str, dict[str, int]] | None = None
              ) -> tuple[pa.RecordBatch, int]:
        """``batch`` as sent, and the rows it lost to values that did not parse (``bad_rows='skip'``); with
        ``'fail'`` the first such value raises BadRow. ``batch`` may hold a subset of the columns. ``tally``:
        each placeholder column's placeholders counted into it (by the file's name)."""
        batch = flattened(batch)
        if self.join is not None:
            batch = self.join.merged(batch)
        arrays, names, bad = [], [], None
        for name, column in zip(batch.schema.names, batch.columns):
            parser = self.parsers.get(name)
            if (numbers := self.placeholders.get(name)) is not None:
                column, counts = numbers.convert(column)
                if tally is not None:
                    found = tally.setdefault(name, {})
                    for token, count in counts.items():
                        found[token] = found.get(token, 0) + count
            elif parser is not None:
                if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                    column = placeholder_rule.as_nulls(column)
                try:
                    column, column_bad = parser.parse(column, self.bad_rows)
                except BadValue as exc:
                    value = exc.value if exc.value is not None else column[exc.position].as_py()
                    raise BadRow(name, exc.position, value, exc.why) from None
                if column_bad is not None:
                    bad = column_bad if bad is None else bad | column_bad
            elif name in self._casts:
                column = _cast(column, self._casts[name])
            arrays.append(column)
            names.append(self.final_name(name))
        # The file's schema metadata kept: pandas' own (a Parquet file pandas wrote) gives back its dtypes.
        result = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(
            [pa.field(name, array.type) for name, array in zip(names, arrays)], metadata=batch.schema.metadata))
        if bad is None:
            return result, 0
        return result.filter(pa.array(~bad)), int(bad.sum())


def flattened(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every struct column a column per field (``parent.child``), nulls of the parent kept."""
    if not any(pa.types.is_struct(item.type) for item in batch.schema):
        return batch
    arrays, names = [], []
    for name, column in zip(batch.schema.names, batch.columns):
        if pa.types.is_struct(column.type):
            inner = flattened(pa.RecordBatch.from_arrays(column.flatten(), names=[item.name for item in column.type]))
            arrays.extend(inner.columns)
            names.extend(f"{name}.{child}" for child in inner.schema.names)
        else:
            arrays.append(column)
            names.append(name)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _cast(column: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    if pa.types.is_time(column.type):
        # Arrow's cast of a time to text keeps every digit of its unit: "12:30:00.000000" becomes "12:30:00".
        text = pc.cast(column, pa.string())
        return pc.replace_substring_regex(text, r"\.0+$", "")
    return column.cast(arrow_type)


def decide(raw_schema: pa.Schema, parsers: dict[str, TimeParser], join: JoinedTime | None, renames, bad_rows: str,
           source: str, placeholders: dict[str, placeholder_rule.Placeholders] | None = None) -> Normalisation:
    """The plan of a file whose (flattened) schema is ``raw_schema``: ``parsers`` make timestamps of the columns
    they name, ``join`` one of several (``harness.own_data.time_columns`` decides both, a text column's
    placeholders nulls); ``renames``: the user's ``rename`` pairs; ``placeholders``: the text columns read as
    numbers."""
    names = column_names(joined_schema(raw_schema, join).names, renames, source)
    return Normalisation(raw_schema, parsers, names, bad_rows, join, placeholders or {})


def joined_schema(raw_schema: pa.Schema, join: JoinedTime | None) -> pa.Schema:
    """``raw_schema`` with ``join``'s parts one text column, its name, in the first part's place."""
    if join is None:
        return raw_schema
    first = min(raw_schema.get_field_index(part) for part in join.parts)
    fields = []
    for index, item in enumerate(raw_schema):
        if index == first:
            fields.append(pa.field(join.name, pa.string()))
        if item.name not in join.parts:
            fields.append(item)
    return pa.schema(fields)


def _source(arrow_type: pa.DataType) -> str:
    return "text" if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) else str(arrow_type)


def nullable(arrow_type: pa.DataType) -> bool:
    """Whether a column of ``arrow_type`` holding nulls needs pandas' nullable dtype to keep one dtype."""
    return pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type)


NULLABLE_DTYPES = {pa.int8(): "Int8", pa.int16(): "Int16", pa.int32(): "Int32", pa.int64(): "Int64",
                   pa.uint8(): "UInt8", pa.uint16(): "UInt16", pa.uint32(): "UInt32", pa.uint64(): "UInt64",
                   pa.bool_(): "boolean"}

