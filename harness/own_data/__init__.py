"""The user's own data: files and DataFrames read in bounded pieces, their dtypes audited, sent as the user's
code would.

- ``formats``: what a path names (a file's format and compression by its suffix; a folder or glob of files as one
  dataset, its Hive partitions); ``compression``: a compressed file's bytes as a stream (a ``.zip``'s one file);
  ``csv_dialect``: a CSV's delimiter, header and encoding, sniffed or given
- ``readers``: a reader per format (Parquet, Arrow IPC, CSV/TSV, JSON lines), one file at a time, found by the
  format's name; ``reading``: how the user's choices say a file is read
- ``schemas``: a dataset's files' schemas as one, a text file's columns as read
- ``timestamps``: text and numbers made timestamps; ``time_formats``: the formats of text timestamps, inferred;
  ``periods``: quarters and months as their first instant; ``joined_times``: a timestamp written in several columns
  (a date and a time of day, or its parts) joined; ``time_columns``: which columns become timestamps and how,
  found or named; ``names``: column names as QuestDB takes them;
  ``read_names``: a file's names as read (a repeat made unique, pandas' index a column: ``pandas_index``);
  ``placeholders``: text columns of numbers with placeholders for missing values read as numbers;
  ``normalise``: each batch made what the client takes, every conversion named
- ``frames``: the data as DataFrames of a chunk's rows, and frames in memory; ``files``: a file or dataset read so,
  what is known of it before sending; ``part_errors``: its errors naming their file and place;
  ``reading_said``: how it was read, as a run prints it and its record keeps it
- ``client_dtypes``: what ILP's ``Sender.dataframe()`` does with each dtype; ``qwp_dtypes``: what QWP's
  ``QuestDB.dataframe()`` does with each, per kind of frame; ``dtype_conversions``: the lines that fix one;
  ``audit``: the audit of a frame's columns, both ways side by side, and the way in that judges a run;
  ``source``: the data as a run's source; ``partitioning``: its table's PARTITION BY, named or chosen from its
  time span, rows and width within the server's mappings
- ``cross_check``: a second, independent reading of a file by DuckDB (``duckdb_reading``) held against the run's,
  compared by ``cross_check_compare``; ``cross_check_sample``: the head and tail a run checks before sending
- ``choices``: the reading choices' values
"""
