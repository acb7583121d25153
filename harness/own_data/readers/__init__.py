"""The user's files read one format at a time: a reader per format, each with the same small interface
(``base.FileReader``: a file's schema, record batches, rows where its metadata counts them, statistics where it
keeps them; its traits), found by the format's name in ``registry``.

- ``parquet``: Parquet; ``arrow_ipc``: Arrow IPC files and streams; ``csv``: CSV and TSV; ``json_lines``: JSON
  lines; ``text``: what the two text formats share
- ``base``: the interface, what a reader is given (``FileKind``) and the problems it finds in a file
"""
