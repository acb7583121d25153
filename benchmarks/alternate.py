"""Variants alternated over rounds (``harness.records.alternation``: the one way the scripts measure side by
side), and where a script writes its benchmark record."""

from __future__ import annotations

from pathlib import Path

from harness.records.alternation import Variant, alternate, alternate_groups, round_order
from harness.records.benchmark_record import BenchmarkRecord
from harness.records.store import default_results_path, write_benchmark_record

__all__ = ["Variant", "alternate", "alternate_groups", "round_order", "write_record"]


def write_record(record: BenchmarkRecord, path: str | Path | None) -> Path:
    """Write the script's benchmark record to ``path``, or by default to ``results/<UTC time>-<benchmark>.json``,
    and say where."""
    written = write_benchmark_record(record, path or default_results_path(record.benchmark))
    print(f"Results: {written}")
    return written
