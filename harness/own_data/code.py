"""The code a user's own program reads their data with, as a run read it (``reading_code``): its imports, its
constants and the body of a generator of frames (pandas DataFrames, or the run's kind of frame: Arrow, Polars) of at
most ``CHUNK_ROWS`` rows, from which the tuning sweep's
printed script sends (``harness.run.tune.setting_code``). A file is read with pyarrow's readers where they give the
frames the run sent, else with the harness's own reader (``DataFile``) and the flags the run read it with; the dtype
conversions the run made are made on each piece (a file's), or once before the first (frames in memory)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from harness.frames.kinds import FrameKind
from harness.own_data.audit import ColumnAudit
from harness.own_data.frames import DataFrames

@dataclass(frozen=True)
class ReadingCode:
    """What a script needs to read the data: its imports, its constants (beside ``CHUNK_ROWS``), and the lines of a
    generator's body that leave each piece in ``df`` (the caller's ``yield df`` follows them, one level deeper)."""

    imports: list[str]
    constants: list[str]
    body: list[str]


# Each kind of frame (``harness.frames.kinds``) made of a record batch ``batch`` in a user's script, and the import
# it needs beside pyarrow's; a NumPy-backed pandas frame is the reader's own line.
BATCH_AS = {FrameKind.pandas_arrow: ("batch.to_pandas(types_mapper=pd.ArrowDtype)", None),
            FrameKind.arrow: ("pa.Table.from_batches([batch])", None),
            FrameKind.polars: ("pl.from_arrow(batch)", "import polars as pl")}


def reading_code(data: DataFrames, converted: bool, audits: Sequence[ColumnAudit],
                 piece_audits: Sequence[ColumnAudit] | None, frame: FrameKind = FrameKind.pandas) -> ReadingCode:
    """How a script reads ``data`` as a run did (``converted``: with the dtype audit's conversions, ``audits``
    proposing them for frames in memory, ``piece_audits`` for each piece of a file), into frames of kind
    ``frame``: an Arrow or Polars frame straight from the file's record batches, as the run read it."""
    if frame != FrameKind.pandas:
        return _reading_kind(data, frame)
    if not data.is_file():
        fixes = [audit.fix for audit in audits if audit.fix] if converted else []
        body = [*(["    df = frame.copy(deep=False)  # converted once, before sending"] if fixes else []),
                *(f"    {fix}" for fix in fixes),
                *(["    frame_sent = df"] if fixes else ["    frame_sent = frame"]),
                "    for start in range(0, len(frame_sent), CHUNK_ROWS):  # frame: your DataFrame",
                "        df = frame_sent.iloc[start:start + CHUNK_ROWS]"]
        return ReadingCode([], [], body)
    piece_fixes = [f"        {audit.fix}" for audit in piece_audits or () if audit.fix] if converted else []
    constants = [f"PATH = {data.name!r}"]
    if _read_by_the_harness(data):
        imports = ["# The harness's reader: the file read as the sweep read it (timestamps parsed, types and names made",
                   "# what the client and QuestDB take; harness.own_data.files).",
                   "from harness.own_data.files import DataFile, Reading"]
        return ReadingCode(imports, constants,
                           [f"    for df in {_reading_call(data, converted)}.frames(CHUNK_ROWS):", *piece_fixes])
    arrow_strings = converted and data.object_strings
    reader = data.reader
    imports = list(reader.script_imports)
    if not imports or arrow_strings:  # pa itself, where the batches or the strings' mapping need it
        imports = ["import pyarrow as pa", *imports]
    if arrow_strings:
        constants += ["# Strings read as Arrow strings (pandas 2 would make Python objects of them, which hold the GIL).",
                      "ARROW_STRINGS = {pa.string(): pd.StringDtype('pyarrow'), pa.large_string(): "
                      "pd.StringDtype('pyarrow')}"]
    read = "batch.to_pandas(types_mapper=ARROW_STRINGS.get)" if arrow_strings else "batch.to_pandas()"
    body = [f"    for batch in {reader.script_batches}:", f"        df = {read}"]
    if data.object_strings and not converted:
        body.append("        df = df.astype({name: object for name in df.columns "
                    "if isinstance(df[name].dtype, pd.StringDtype)})  # strings as pandas 2 reads them")
    return ReadingCode(imports, constants, body + piece_fixes)


def _reading_kind(data: DataFrames, frame: FrameKind) -> ReadingCode:
    """How a script reads ``data`` into frames of ``frame``'s kind (never NumPy-backed pandas; no dtype conversions,
    which are pandas'): frames in memory sliced as they are, a file's record batches each made a frame."""
    made, extra = BATCH_AS[frame]
    imports = ["import pyarrow as pa", *([extra] if extra else [])]
    if not data.is_file():
        return ReadingCode([], [], ["    for start in range(0, len(frame), CHUNK_ROWS):  # frame: your frame",
                                    "        df = frame.slice(start, CHUNK_ROWS)" if frame != FrameKind.pandas_arrow
                                    else "        df = frame.iloc[start:start + CHUNK_ROWS]"])
    constants = [f"PATH = {data.name!r}"]
    if _read_by_the_harness(data):
        imports += ["# The harness's reader: the file read as the sweep read it (timestamps parsed, types and names",
                    "# made what the client and QuestDB take; harness.own_data.files).",
                    "from harness.frames.kinds import FrameKind",
                    "from harness.own_data.files import DataFile, Reading"]
        return ReadingCode(imports, constants, [f"    for df in {_reading_call(data, False)}.pieces(CHUNK_ROWS, "
                                                f"FrameKind({str(frame)!r})):"])
    imports += list(data.reader.script_imports)
    return ReadingCode(list(dict.fromkeys(imports)), constants,
                       [f"    for batch in {data.reader.script_batches}:", f"        df = {made}"])


def _read_by_the_harness(data) -> bool:
    """Whether the code reads the file with the harness's own reader: a format whose types are inferred from text
    or that pyarrow alone reads no other way, a dataset, or a file whose reading converts a type or a name
    (pyarrow's readers alone would hand the client other dtypes, or text timestamps it refuses; pandas' index as the
    frame's index, not a column; a repeated name twice)."""
    return data.reader.infers_types or data.reader.script_batches is None or data.dataset or \
        bool(data.normalisation.conversions) or bool(data.described()["renames"]) or \
        data.index_timestamp() is not None


def _reading_call(data, converted: bool) -> str:
    """``DataFile(PATH, ...)`` with the flags the run read the file with."""
    reading = data.reading
    defaults = type(reading)()
    given = ", ".join(f"{item.name}={getattr(reading, item.name)!r}" for item in dataclasses.fields(reading)
                      if getattr(reading, item.name) != getattr(defaults, item.name))
    strings = ", object_strings=True" if data.object_strings and not converted else ""
    return f"DataFile(PATH{strings}, reading=Reading({given}))"
