"""The process's peak resident memory over a block of work, sampled on a thread (``read``'s peak RSS, each ``paths`` trial's)."""

from __future__ import annotations

import threading

import psutil


class PeakRss:
    """The process's resident memory, sampled every ``interval`` seconds on a thread while in the block:
    ``peak`` is the largest seen (a phase's own peak, unlike ru_maxrss, which covers the whole process's life)."""

    def __init__(self, interval: float = 0.02):
        self.interval = interval
        self.peak = 0
        self._process = psutil.Process()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)

    def _sample(self) -> None:
        self.peak = max(self.peak, self._process.memory_info().rss)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> PeakRss:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
