"""``read``: a QuestDB table (whole, a time range, or ``--sql``) back into pandas DataFrames, measured, and
every value compared with the TSBS data set (``--check``) or the user's file (``--check-against``) that
filled it.

One generic reader loop (``loop``) drives every protocol behind one small interface (``protocols``): each
reader turns a query into DataFrames of about ``--chunk-rows`` rows (``frames`` holds the conversions they
share). ``plan`` decides what is read (columns, the time slices of ``--workers``); ``check`` compares what
arrives with the regenerated data set in bounded memory, and ``check_against``, through the same comparison,
with the user's file (``partitioned``: and the table's partitioning with the one the file and flags choose). The
command is ``harness.commands.read``.
"""
