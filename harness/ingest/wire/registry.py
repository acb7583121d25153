"""The wires by the scheme that picks them (a configuration string's, or ``--transport``'s): the one place a wire is
chosen. A wire's module is imported only when it is used."""

from __future__ import annotations

import importlib

from harness.ingest.wire.interface import Wire
from harness.ingest.wire.settings import SenderSettings

# Scheme -> the wire's class (``module:class``), whose ``(settings)`` is the wire.
WIRES = {
    "http": "harness.ingest.wire.ilp:IlpWire",
    "https": "harness.ingest.wire.ilp:IlpWire",
    "tcp": "harness.ingest.wire.ilp:IlpWire",
    "tcps": "harness.ingest.wire.ilp:IlpWire",
    "ws": "harness.ingest.wire.qwp:QwpWire",
    "wss": "harness.ingest.wire.qwp:QwpWire",
    "raw": "harness.ingest.wire.raw:RawWire",
}


def wire_for(settings: SenderSettings, scheme: str | None = None) -> Wire:
    """The wire of ``settings`` (its scheme, or ``scheme`` where a command always sends one way: the replay's
    ``raw``)."""
    module, _, name = WIRES[scheme or settings.scheme].partition(":")
    return getattr(importlib.import_module(module), name)(settings)
