"""The cross-check: a second, independent reading of the user's file, by DuckDB (``harness.own_data.duckdb_reading``),
held against the run's (``harness.own_data.files.DataFile``), so that a wrong reading (a date read alone where a time
of day beside it was meant: 1,440 rows to each midnight) is caught rather than sent. Both readings are measured by the
same SQL aggregates: the run's as its record batches stream past (bounded memory), DuckDB's over the file as DuckDB
reads it. The designated timestamp is read by DuckDB from the columns the run read it from: one column as DuckDB
types it (an epoch number with the run's ``--at-unit``; text DuckDB's sniffer left as text parsed by DuckDB with the
run's format), a date and a time of day as DuckDB's own DATE and TIME added, a timestamp's parts by
``make_timestamp``. The comparison is ``harness.own_data.cross_check_compare``'s; the sample a run checks before
sending, ``harness.own_data.cross_check_sample``'s.

``CrossCheck`` is what a check found: what was read, how, the disagreements and the notes, or why it could not run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from harness.errors import named
from harness.own_data import duckdb_reading as duck
from harness.own_data.cross_check_compare import Context, compare
from harness.own_data.joined_times import JoinedTime
from harness.own_data.timestamps import TimeParser

# The designated timestamp read as DuckDB reads it: the microseconds a unit's numbers are multiplied by.
_UNIT_MICROS = {"s": "1e6", "ms": "1e3", "us": "1", "ns": "1e-3"}


@dataclass
class CrossCheck:
    """What the cross-check of ``what`` (the whole file, or a sample of it) found: ``how`` DuckDB read it, the
    ``differences`` (each one line), the ``notes`` on expected differences, the seconds it took; ``why_not``: why it
    did not run (None: it ran)."""

    what: str
    how: str = ""
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    why_not: str | None = None
    columns: int = 0
    cpu_seconds: float = 0.0  # the process's, DuckDB's threads among it

    @property
    def agrees(self) -> bool:
        return self.why_not is None and not self.differences

    def lines(self) -> list[str]:
        if self.why_not is not None:
            return [f"Cross-check: not made: {self.why_not}"]
        verdict = "agrees" if self.agrees else f"DISAGREES ({len(self.differences)})"
        lines = [f"Cross-check: {self.how} of {self.what} {verdict} with the run's reading (rows, the designated "
                 f"timestamp's first, last and distinct instants, {self.columns} columns' types and nulls; "
                 f"{self.seconds:.2f}s, {self.cpu_seconds:.2f}s of CPU)"]
        return lines + [f"  differs: {line}" for line in self.differences] + [f"  note: {line}" for line in self.notes]

    def refusal(self, name: str, unchecked: str | None = None) -> str:
        """The one line a disagreement ends in; ``unchecked``: the parameter that sends the file as read."""
        send = f", or send it as read with {named(unchecked)}" if unchecked else ""
        return (f"{name}: DuckDB's reading of {self.what} disagrees with the run's: {'; '.join(self.differences)} "
                f"(pin the reading with {named('at')} and the flags of its format{send})")

    def stored(self) -> dict:
        return {"ran": self.why_not is None, "what": self.what, "how": self.how, "agrees": self.agrees,
                "differences": self.differences, "notes": self.notes, "seconds": round(self.seconds, 3),
                "cpu_seconds": round(self.cpu_seconds, 3),
                "why_not": self.why_not}


def skipped(why: str) -> CrossCheck:
    return CrossCheck("nothing", why_not=why)


def cross_check(data, at: str) -> CrossCheck:
    """The whole of ``data`` (a ``DataFile``) read by DuckDB and by the run, ``at`` the designated timestamp (the
    run's name), compared."""
    with duck.scratch_folder() as scratch:
        scan = _scan_of(data, [part.path for part in data.parts], data.kind, scratch)
        return compared(data, at, scan, data.batches, "the whole file")


def _scan_of(data, paths: list[Path], kind, scratch: Path) -> duck.DuckScan:
    arrow = kind.format.startswith("arrow")
    return duck.duck_scan(kind, paths, data.dialect, any(part.partitions for part in data.parts), scratch,
                          arrow_batches=data.reader.batches if arrow else None,
                          arrow_schema=data.reader.schema(paths[0]) if arrow else None)


def compared(data, at: str, scan: duck.DuckScan, batches: Callable[[], Iterator[pa.RecordBatch]],
             what: str, distinct: bool = True) -> CrossCheck:
    """``scan`` (DuckDB's reading) against ``batches()`` (the run's reading of the same rows) of ``data``, the
    distinct instants counted where ``distinct`` says; a reading DuckDB cannot make is said as the check not
    made."""
    import duckdb

    started, cpu = time.perf_counter(), time.process_time()
    with duck.scratch_folder() as spill:
        con = duck.connect(spill)
        try:
            run, skipped_rows = _run_figures(con, data, at, batches, distinct)
            theirs, context = _duck_figures(con, data, at, scan, set(run.columns), distinct)
        except duckdb.Error as exc:
            return CrossCheck(what, scan.how, why_not=f"DuckDB could not read it: {' '.join(str(exc).split())[:300]}",
                              seconds=time.perf_counter() - started, cpu_seconds=time.process_time() - cpu)
        finally:
            con.close()
    context.skipped_rows = skipped_rows
    differences, notes = compare(run, theirs, context)
    return CrossCheck(what, scan.how, differences, notes, time.perf_counter() - started, columns=len(run.columns),
                      cpu_seconds=time.process_time() - cpu)


def _run_figures(con, data, at: str, batches: Callable[[], Iterator[pa.RecordBatch]],
                 distinct: bool) -> tuple[duck.Figures, int]:
    """The run's reading measured as its batches stream past; and the rows it skipped."""
    stream = iter(batches())
    first = next(stream, None)
    schema = first.schema if first is not None else data.schema
    types = dict(duck.describe(con, duck.ARROW_SOURCE, lambda: pa.RecordBatchReader.from_batches(schema, iter(()))))
    columns = [duck.Measured(name, duck.quoted(name), types[name]) for name in schema.names]
    figures = duck.measure(con, duck.ARROW_SOURCE, columns, duck.quoted(at), arrow=lambda: pa.RecordBatchReader.
                           from_batches(schema, _chained(first, stream)), distinct=distinct)
    return figures, data.skipped_rows


def _chained(first: pa.RecordBatch | None, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    if first is not None:
        yield first
    for batch in rest:
        yield batch


def _duck_figures(con, data, at: str, scan: duck.DuckScan, measured: set[str],
                  distinct: bool) -> tuple[duck.Figures, Context]:
    """DuckDB's reading measured: each run column ``measured`` mapped to DuckDB's column of the same place in the
    file."""
    theirs = duck.describe(con, scan.source, scan.arrow)
    normalisation = data.normalisation
    top = data.raw_schema.names
    file_sql = {}  # the file's (flattened) name -> (DuckDB's SQL of it, DuckDB's name)
    for name in normalisation.raw_schema.names:
        root = name if name in top else next(item for item in top if name.startswith(item + "."))
        index = top.index(root)
        if index >= len(theirs):
            continue
        path = [] if root == name else name[len(root) + 1:].split(".")
        file_sql[name] = ("".join([duck.quoted(theirs[index][0]), *("." + duck.quoted(part) for part in path)]),
                          ".".join([theirs[index][0], *path]))
    typed = _types(con, scan, {name: sql for name, (sql, _) in file_sql.items()})
    context = _context(data, at, typed, {name: shown for name, (_, shown) in file_sql.items()})
    columns = []
    for name in [name for name in data.schema.names if name in measured]:
        raw = normalisation.raw_name(name)
        if raw in file_sql:
            tokens = normalisation.placeholders[raw].tokens if raw in normalisation.placeholders else ()
            run_type = data.schema.field(name).type
            numbers = duck.family(typed[raw]) == "text" and (pa.types.is_integer(run_type)
                                                              or pa.types.is_floating(run_type))
            columns.append(duck.Measured(name, file_sql[raw][0], typed[raw], tokens, numbers))
    instant, why = _duck_instant(data, at, file_sql, typed)
    context.instants_unread = why
    figures = duck.measure(con, scan.source, columns, instant, scan.arrow, distinct)
    figures.unmatched = tuple(name for name, _ in theirs[len(top):])
    return figures, context


def _types(con, scan: duck.DuckScan, sqls: dict[str, str]) -> dict[str, str]:
    """DuckDB's type of each SQL expression over ``scan``."""
    if not sqls:
        return {}
    listed = ", ".join(f"{sql} AS {duck.quoted(f'c{index}')}" for index, sql in enumerate(sqls.values()))
    with duck.registered(con, scan.arrow):
        described = con.execute(f"DESCRIBE SELECT {listed} FROM {scan.source}").fetchall()
    return {name: row[1] for name, row in zip(sqls, described)}


def _context(data, at: str, typed: dict[str, str], shown: dict[str, str]) -> Context:
    """What the comparison needs of the run's reading beside its figures (``typed``: DuckDB's type of each file
    column; ``shown``: DuckDB's name of it)."""
    normalisation, reading = data.normalisation, data.reading
    raw_at = normalisation.raw_name(at)
    parser = normalisation.parsers.get(raw_at)
    at_columns = tuple(parser.parts) if isinstance(parser, JoinedTime) else (raw_at,)
    final = {raw: normalisation.final_name(raw) for raw in normalisation.joined_schema.names}
    kept = {data.sent_name(name): named("symbols") for name in reading.symbols}
    kept.update({data.sent_name(name): named("keep_text") for name in reading.keep_text})
    return Context(
        at=at, at_columns=tuple(shown.get(name, name) for name in at_columns),
        file_names={final[raw]: shown[raw] for raw in final if raw in shown},
        time_beside=_time_beside(normalisation, raw_at, typed, final) if parser is None or
        isinstance(parser, TimeParser) else (),
        placeholders={final[raw]: numbers.tokens for raw, numbers in normalisation.placeholders.items()},
        kept_text=kept, partitions=tuple(final[key] for key, _ in data.parts[0].partitions if key in final),
        times_of_day=tuple(final[item.name] for item in normalisation.raw_schema
                           if pa.types.is_time(item.type) and item.name in final),
        parsed={final[raw]: parser.describe() for raw, parser in normalisation.parsers.items()
                if raw in final and isinstance(parser, TimeParser)},
        tz=reading.tz, dates_only=reading.at_dates_only)


def _time_beside(normalisation, raw_at: str, typed: dict[str, str], final: dict[str, str]) -> tuple[str, ...]:
    """The run's columns that DuckDB reads as TIME where it reads the designated one, read alone, as dates: beside
    it or further on (the run joins only a time of day next to its date)."""
    if typed.get(raw_at, "").upper() != "DATE":
        return ()
    return tuple(final[name] for name in normalisation.raw_schema.names if name in final and name != raw_at
                 and typed.get(name, "").upper().startswith("TIME")
                 and not typed[name].upper().startswith("TIMESTAMP"))


def _duck_instant(data, at: str, file_sql: dict, typed: dict[str, str]) -> tuple[str | None, str | None]:
    """The SQL of the designated timestamp as DuckDB reads it (a TIMESTAMP or TIMESTAMPTZ), from the columns the run
    read it from; or None and why it is not read."""
    normalisation = data.normalisation
    raw = normalisation.raw_name(at)
    parser = normalisation.parsers.get(raw)
    tz = data.reading.tz
    if isinstance(parser, JoinedTime):
        if any(part not in file_sql for part in parser.parts):
            return None, "DuckDB reads other columns"
        columns = [(file_sql[part][0], typed[part], file_sql[part][1]) for part in parser.parts]
        instant, why = _joined(parser, columns)
    elif raw in file_sql:
        instant, why = _one_column(parser, file_sql[raw][0], typed[raw], file_sql[raw][1])
    else:
        return None, "DuckDB reads other columns"
    if instant is not None and tz is not None:
        instant = f"timezone({duck.sql_text(tz)}, CAST({instant} AS TIMESTAMP))"
    return instant, why


def _one_column(parser: TimeParser | None, sql: str, duck_type: str, name: str) -> tuple[str | None, str | None]:
    family = duck.family(duck_type)
    upper = duck_type.upper()
    if family == "time" and upper.startswith("TIMESTAMP"):
        return sql, None  # as it is: a cast of nanoseconds to microseconds would round, where epoch_us truncates
    if upper == "DATE":
        return f"CAST({sql} AS TIMESTAMP)", None
    if parser is None:
        return None, f"DuckDB reads `{name}` as {duck_type}"
    if parser.kind == "epoch" and family == "number":
        return f"make_timestamp(CAST(round({sql} * {_UNIT_MICROS[parser.epoch_unit]}) AS BIGINT))", None
    if parser.kind == "iso" and family == "text":
        return f"TRY_CAST({sql} AS TIMESTAMPTZ)", None
    if parser.kind == "format" and family in ("text", "number") and "%" in (parser.format or ""):
        return f"try_strptime(CAST({sql} AS VARCHAR), {duck.sql_text(parser.format)})", None
    return None, f"DuckDB reads `{name}` as {duck_type} and has no reading of {parser.describe()}"


def _joined(parser: JoinedTime, columns: list[tuple[str, str, str]]) -> tuple[str | None, str | None]:
    """A date and a time of day as DuckDB's own DATE and TIME added; a timestamp's parts by make_timestamp."""
    if parser.date is not None:
        (date_sql, date_type, date_name), (clock_sql, clock_type, clock_name) = columns
        if date_type.upper() != "DATE":
            return None, f"DuckDB reads `{date_name}` as {date_type}, not DATE"
        if not clock_type.upper().startswith("TIME") or clock_type.upper().startswith("TIMESTAMP"):
            return None, f"DuckDB reads `{clock_name}` as {clock_type}, not TIME"
        return f"({date_sql} + {clock_sql})", None
    if any(duck.family(duck_type) != "number" for _, duck_type, _ in columns):
        name, duck_type = next((name, duck_type) for _, duck_type, name in columns
                               if duck.family(duck_type) != "number")
        return None, f"DuckDB reads the part `{name}` as {duck_type}"
    whole = [f"CAST({sql} AS BIGINT)" for sql, _, _ in columns]
    day = f"make_timestamp({whole[0]}, {whole[1]}, {whole[2]}, 0, 0, 0)"
    later = [f"to_{unit}({value})" for unit, value in zip(("hours", "minutes", "seconds"), whole[3:])]
    return " + ".join([day, *later]), None
