"""Which use cases' query answers ``queries run --check`` can compute, and with what: each such use case's
reference class (its ``generate(spec, fields)``, ``expected(query)``, ``order_rule(query)`` and
``table_rows()``), imported only to check."""

from __future__ import annotations

import importlib

# Use case -> "module:class" of its reference. devops has none: its queries are cpu-only's, its cpu table not.
_REFERENCES = {
    "cpu-only": "harness.queries.reference:ReferenceData",
    "iot": "harness.queries.iot_reference:IotReference",
}
CHECKED_USE_CASES = tuple(_REFERENCES)


def reference_class(use_case: str):
    """The reference class of ``use_case`` (one of ``CHECKED_USE_CASES``)."""
    module, name = _REFERENCES[str(use_case)].split(":")
    return getattr(importlib.import_module(module), name)
