"""The TSBS query benchmark's parts: each worker's connection over PGWire or HTTP (``clients``), the wire SQL,
latency statistics, and every answer checked against a reference computed from the data set. The commands
are ``harness.commands.queries_run`` and ``queries_generate``."""
