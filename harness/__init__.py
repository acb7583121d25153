"""TSBS-exact pandas -> QuestDB ingestion benchmark harness. How it is built, and the walk of one run from its flags
to its record: docs/architecture.md.

For notebooks: ``harness.measure(df_or_path, ...)``, ``harness.tune(df_or_path, ...)`` and
``harness.inspect(df_or_path)`` (``harness.api``), the functions the command line's ``bench --data``, ``tune``
and ``inspect`` call; loaded when first used, so ``import harness`` stays light.

The package in layers, lowest first (``LAYERS``): a module imports only from its own layer or those below,
type-only imports included, and no two modules import each other, directly or round a circle
(tests/test_layers.py reads every import and checks both).

- foundation: ``errors`` (the one-line errors, and whether a signal asked the run to end), ``versions`` (the
  pinned stack), ``output_file`` (files written whole or not at all), ``frames`` (the kinds of frame handed to the
  client: pandas, pyarrow, Polars)
- domain: ``source`` (what a run sends, whatever it is: the interface every source implements), ``tsbs`` (TSBS's
  data sets and queries, exactly; a subpackage per use case), ``own_data`` (the user's files and DataFrames in
  bounded pieces, their dtypes audited)
- telemetry: ``telemetry`` (a phase's counters and figures, progress, time series, peak RSS, Prometheus metrics,
  profiles' stacks and their named buckets)
- records: ``records`` (run and benchmark records: model, codec, store, versions), ``report`` (text
  tables and the HTML report)
- access: ``questdb`` (SQL over HTTP, schemas, WAL, claims, PGWire login, credentials, TLS), ``servers``
  (native QuestDB and the socat sink), ``ingest`` (serialize and send; what goes over the wire behind one
  interface, ``ingest/wire/``), ``read`` (tables back into pandas),
  ``queries`` (TSBS's queries run and checked), ``scaleout`` (N clients: their meeting, launch and merged record),
  ``ingest_paths`` (every way a DataFrame goes into QuestDB: ILP, PGWire INSERTs, to_sql, /imp, COPY,
  read_parquet), ``profiling`` (both sides of a run sampled: py-spy, async-profiler; the verdict)
- options: ``options`` (every flag declared once, as dataclass fields; the command protocol)
- open loop: ``open_loop`` (``bench --rate``: the schedule, chunks made ahead, freshness, rates, ramps and the
  knee's search, queries beside, thresholds; its flags and their resolved plan)
- run: ``run`` (a run's lifecycle, tables, limits; the bench run's options, its resolved plan and phases; the
  comparison runner of paths, tune and matrix)
- commands: ``commands`` (one module per command)
- front doors: ``cli`` (the thin typer shell), ``__main__``, ``api`` (the notebook functions) and this package's
  face, which names them
"""

from harness.versions import HARNESS_VERSION as __version__

__all__ = ["LAYERS", "__version__", "inspect", "measure", "paths", "tune"]

# What ``harness.NAME`` loads on first use: the notebook API.
_API = {"measure": "harness.api", "tune": "harness.api", "inspect": "harness.api", "paths": "harness.api"}


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


# Lowest first; each entry names a module or a package of ``harness`` (a package stands for everything in it).
LAYERS = (
    ("foundation", ("errors", "versions", "output_file", "frames")),
    ("domain", ("source", "tsbs", "own_data")),
    ("telemetry", ("telemetry",)),
    ("records", ("records", "report")),
    ("access", ("questdb", "servers", "ingest", "read", "queries", "scaleout", "ingest_paths", "profiling")),
    ("options", ("options",)),
    ("open loop", ("open_loop",)),
    ("run", ("run",)),
    ("commands", ("commands",)),
    ("front doors", ("cli", "__main__", "api")),
)
