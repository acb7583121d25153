"""Live progress of a running phase: TSBS-style periodic lines, and a progress bar on a terminal.

Lines (every ``--reporting-period`` seconds, as TSBS's loaders print them) are plain CSV, fit for logs:
``time,phase,per. row/s,row total,overall row/s,per. MiB/s,MiB total,overall MiB/s``.
The bar is drawn only when stdout is a terminal, so logs never get carriage returns. Another run's report
printed beside a run's own (``queries run --under-load``'s ingest) has each line prefixed (``PrefixedLines``).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from harness.telemetry.phase import PhaseProgress

MIB = 1024 * 1024
HEADER = "time,phase,per. row/s,row total,overall row/s,per. MiB/s,MiB total,overall MiB/s"


class ProgressPrinter:
    """Watches one ``PhaseProgress`` on a daemon thread until ``stop()``."""

    def __init__(self, progress: PhaseProgress, total_rows: int, reporting_period: float,
                 out: TextIO | None = None, bar: bool | None = None):
        self.progress = progress
        self.total_rows = total_rows
        self.period = reporting_period
        self.out = out or sys.stdout
        self.bar = self.out.isatty() if bar is None else bar
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._header_printed = False

    def __enter__(self) -> ProgressPrinter:
        if self.period > 0 or self.bar:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.bar:
            self._draw_bar(final=True)

    def _run(self) -> None:
        last_line = last_bar = time.perf_counter()
        last_rows = last_bytes = 0
        tick = 0.25 if self.bar else self.period
        while not self._stop.wait(tick):
            now = time.perf_counter()
            if self.bar and now - last_bar >= 0.25:
                self._draw_bar()
                last_bar = now
            if self.period > 0 and now - last_line >= self.period:
                rows, nbytes = self.progress.rows, self.progress.bytes
                self._line(now, rows - last_rows, nbytes - last_bytes, now - last_line)
                last_line, last_rows, last_bytes = now, rows, nbytes

    def _line(self, now: float, period_rows: int, period_bytes: int, period_seconds: float) -> None:
        elapsed = max(now - self.progress.started, 1e-9)
        rows, nbytes = self.progress.rows, self.progress.bytes
        if self.bar:
            self.out.write("\r\033[K")
        if not self._header_printed:
            self.out.write(HEADER + "\n")
            self._header_printed = True
        self.out.write(
            f"{int(time.time())},{self.progress.phase},{period_rows / period_seconds:.2f},{rows:.6E},"
            f"{rows / elapsed:.2f},{period_bytes / MIB / period_seconds:.2f},{nbytes / MIB:.2f},"
            f"{nbytes / MIB / elapsed:.2f}\n"
        )
        self.out.flush()

    def _draw_bar(self, final: bool = False) -> None:
        rows = self.progress.rows
        fraction = min(1.0, rows / self.total_rows) if self.total_rows else 1.0
        width = 30
        filled = int(fraction * width)
        elapsed = max(time.perf_counter() - self.progress.started, 1e-9)
        self.out.write(
            f"\r\033[K{self.progress.phase:9} [{'#' * filled}{'.' * (width - filled)}] "
            f"{fraction * 100:5.1f}% {rows}/{self.total_rows} rows {rows / elapsed / 1e6:.2f} M rows/s"
        )
        if final:
            self.out.write("\n")
        self.out.flush()


class PrefixedLines:
    """A text stream that prefixes each line (another run's report, interleaved with a run's own)."""

    def __init__(self, out: TextIO, prefix: str):
        self.out, self.prefix = out, prefix
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            lines = text.splitlines(keepends=True)
            self.out.write("".join(self.prefix + line if line.strip() else line for line in lines))
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return False
