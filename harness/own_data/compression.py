"""Compressed files: the suffixes that name a compression, and a compressed file's bytes as a stream read front to
back. gzip by ISA-L (``isal``, the ILP file reader's too), which takes 0.4 of zlib's CPU; xz (LZMA) by Python's
``lzma``; a ``.zip`` by Python's ``zipfile``, holding exactly one file (folders and macOS's ``__MACOSX/`` and ``._``
entries aside): a zip of more, or of none, is refused in one line; the others by Arrow's codecs.

A ``.zip``'s format is its name's (``data.csv.zip``) or, where its name names none (``data.zip``), its one file's.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa

COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4", ".xz": "xz", ".zip": "zip"}


class NotOneFile(ValueError):
    """A ``.zip`` that does not hold exactly one file, or is no zip: what is wrong, said without the file's name."""


def zip_member(path: Path) -> str:
    """The name of the one file ``path``'s zip holds; a zip of none or of more, or no zip, raises NotOneFile."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [item.filename for item in archive.infolist() if not item.is_dir()
                     and not item.filename.startswith("__MACOSX/") and not Path(item.filename).name.startswith("._")]
    except (zipfile.BadZipFile, OSError) as exc:
        raise NotOneFile(f"not a readable zip file: {exc}") from None
    if len(names) != 1:
        shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
        raise NotOneFile(f"a .zip holding {len(names)} files{f' ({shown})' if names else ''}, not one: unzip it "
                         f"and give the file, or the folder of them")
    return names[0]


def open_stream(path: Path, compression: str | None):
    """``path``'s bytes, decompressed as ``compression`` says (None: as they are), as a stream pyarrow reads."""
    if compression == "gzip":
        from isal import igzip

        return pa.PythonFile(igzip.open(str(path), "rb"), mode="r")
    if compression == "xz":
        import lzma

        return pa.PythonFile(lzma.open(str(path), "rb"), mode="r")
    if compression == "zip":
        archive = zipfile.ZipFile(path)
        member = archive.open(zip_member(path))
        archive.close()  # the member keeps the file open until it is closed itself
        return pa.PythonFile(member, mode="r")
    return pa.input_stream(str(path), compression=compression)
