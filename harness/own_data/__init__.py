"""The user's own data: files and DataFrames read in bounded pieces, their dtypes audited, sent as the user's
code would.

- ``formats``: what a path names (a file's format and compression by its suffix; a folder or glob of files as one
  dataset, its Hive partitions); ``csv_dialect``: a CSV's delimiter, header and encoding, sniffed or given
- ``timestamps``: text and numbers made timestamps; ``names``: column names as QuestDB takes them;
  ``normalise``: each batch made what the client takes, every conversion named
- ``frames``: the data as DataFrames of a chunk's rows, and frames in memory; ``files``: a file or dataset read so
- ``audit``: what the client does with each dtype; ``source``: the data as a run's source
- ``choices``: the reading flags' choices
"""
