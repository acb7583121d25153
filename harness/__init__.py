"""TSBS-exact pandas -> QuestDB ingestion benchmark harness.

The package in layers, lowest first (``LAYERS``): a module imports only from its own layer or those below,
type-only imports included, and no two modules import each other, directly or round a circle
(tests/test_layers.py reads every import and checks both).

- foundation: ``errors`` (the one-line errors), ``versions`` (the pinned stack), ``output_file`` (files
  written whole or not at all)
- domain: ``tsbs`` (TSBS's data sets and queries, exactly; a subpackage per use case), ``own_data`` (the
  user's own files and DataFrames: read in pieces, their dtypes audited)
- measurement: ``measure`` (a phase's counters and figures, progress, time series, Prometheus metrics)
- records: ``records`` (run and benchmark records: model, codec, store, versions), ``report`` (text
  tables and the HTML report)
- access: ``questdb`` (SQL over HTTP, schemas, WAL, claims, PGWire login), ``servers`` (native QuestDB and
  the socat sink), ``ingest`` (serialize and send), ``read`` (tables back into pandas), ``queries`` (TSBS's
  queries run and checked), ``scaleout`` (N clients: their meeting, launch and merged record)
- options: ``options`` (every flag declared once, as dataclass fields; the command protocol)
- run: ``run`` (a run's session, tables, limits; the bench run's options and phases)
- commands: ``commands`` (one module per command)
- command line: ``cli`` (the thin typer shell) and ``__main__``
"""

__version__ = "0.1.0"

# Lowest first; each entry names a module or a package of ``harness`` (a package stands for everything in it).
LAYERS = (
    ("foundation", ("errors", "versions", "output_file")),
    ("domain", ("tsbs", "own_data")),
    ("measurement", ("measure",)),
    ("records", ("records", "report")),
    ("access", ("questdb", "servers", "ingest", "read", "queries", "scaleout")),
    ("options", ("options",)),
    ("run", ("run",)),
    ("commands", ("commands",)),
    ("command line", ("cli", "__main__")),
)
