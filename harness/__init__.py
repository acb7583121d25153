"""TSBS-exact pandas -> QuestDB ingestion benchmark harness.

Data flows one way through the subpackages:
generate (``harness.tsbs``) -> serialize/send (``harness.ingest``) ->
validate (``harness.questdb``) -> report (``harness.results``, ``harness.metrics``).
``harness.cli`` is a thin typer shell over these library APIs.
"""

__version__ = "0.1.0"
