"""One comparison (``paths``, ``tune``, ``matrix``), its lifecycle written once, as TSBS's ``RunBenchmark`` drives
every target: a command supplies only its variants and its tables.

``ComparisonRun`` owns what every comparison does: its results path and run id; the scratch tables it claims for itself
alone (``harness.questdb.claims``) and drops however it ends; the servers its variants need of their own (the
matrix's cells), stopped however it ends; the variants alternated over rounds after a warm-up
(``harness.records.alternation``); how an early end (a trial that failed, Ctrl-C) is recorded, the record written
all the same; and, when it ends well, the record and the HTML report.

    with ComparisonRun("paths", recording, parameters, out) as comparison:
        comparison.claim(questdb, tables)            # dropped when the block ends, however it ends
        comparison.alternate(variants, rounds, name="paths", baseline=...)
    comparison.finish(table_text)                    # printed, the record written, the report where asked
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, TextIO

from harness.errors import HarnessError, RunError
from harness.options.declare import Spelling
from harness.questdb.claims import TableClaim
from harness.records.alternation import Variant, alternate
from harness.records.benchmark_record import BenchmarkRecord, Comparison
from harness.records.store import Recording, write_benchmark_record

if TYPE_CHECKING:
    from harness.questdb.http import QuestDBSql


class VariantServer(Protocol):
    """A server the comparison's variants need of their own (a matrix cell's QuestDB): started before the rounds
    by the command, stopped when the comparison ends, however it ends."""

    def stop(self) -> None: ...


class ComparisonRun:
    """One comparison's record (``record``, its ``path`` and ``run_id``) and what it holds until it ends."""

    def __init__(self, benchmark: str, recording: Recording, parameters: dict, out: TextIO,
                 spelling: Spelling = Spelling(), kept_note: str = ""):
        self.recording = recording
        self.out = out
        self.path = recording.path(benchmark)
        self.run_id = uuid.uuid4().hex[:12]
        self.record = BenchmarkRecord(benchmark=benchmark, parameters=parameters)
        self.spelling = spelling  # how the command says the parameters an error names
        self.kept_note = kept_note  # said beside the record of an early end (what it left behind for the user)
        self._started = time.perf_counter()
        self._releases: list[Callable[[], None]] = []

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self._started

    def claim(self, questdb: QuestDBSql, tables: list[str]) -> None:
        """Claim ``tables`` for this comparison alone, now; when it ends, however it ends, each is dropped and the
        claim released."""
        claim = TableClaim(questdb, self.run_id, tables)
        claim.take()

        def drop() -> None:
            for table in tables:
                with contextlib.suppress(RunError):
                    questdb.drop_table(table)
            claim.release()
        self._releases.append(drop)

    def hold(self, server: VariantServer) -> None:
        """``server`` (started by the command) is stopped when the comparison ends, however it ends."""
        self._releases.append(server.stop)

    def alternate(self, variants: Mapping[str, Variant], rounds: int, *, name: str, baseline: str | None = None,
                  parameters: dict | None = None, stop_before: Callable[[int], bool] | None = None) -> Comparison:
        """``variants`` alternated over ``rounds`` counted rounds after a warm-up round; their comparison, in the
        record."""
        compared = alternate(variants, rounds, name=name, warm_up=True, baseline=baseline, parameters=parameters,
                             stop_before=stop_before)
        self.record.comparisons.append(compared)
        return compared

    def __enter__(self) -> ComparisonRun:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if error is not None:
                # A comparison that ends early (a trial failed, Ctrl-C) still leaves its record, saying how it ended.
                cause = RunError(self.spelling.error(error)) if isinstance(error, HarnessError) else error
                self.record.ended_early(cause, self.seconds)
                self.say(f"Results: {write_benchmark_record(self.record, self.path)}{self.kept_note}")
        finally:
            for release in reversed(self._releases):
                release()
            self._releases.clear()

    def finish(self, *lines: str) -> BenchmarkRecord:
        """The comparison ended well: ``lines`` printed, the record written, and its report where asked."""
        self.record.extra.update(status="ok", seconds=round(self.seconds, 1))
        for line in lines:
            self.say(line)
        written = write_benchmark_record(self.record, self.path)
        self.say(f"Results: {written}")
        if self.recording.report:
            from harness.report.html import write_report  # matplotlib: only when the report is asked for

            self.say(f"Report: {write_report([], written.with_suffix('.html'), [self.record])}")
        return self.record
