"""One rate held (``RateHold``): its schedule over its chunk stream, the freshness probe counting beside it, the
run's metrics fed, and its figures recorded and said once it is over."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness.open_loop.figures import probe_figures, rate_step
from harness.open_loop.printing import say_step

if TYPE_CHECKING:
    from harness.ingest.phase_loop import ChunkStream
    from harness.open_loop.freshness import FreshnessProbe
    from harness.open_loop.schedule import RateSchedule
    from harness.records.run_record import OpenLoopFigures
    from harness.telemetry.metrics import RunMetrics


class RateHold:
    """``schedule`` over ``stream``, and ``probe`` counting beside it when sending to QuestDB. The send phase
    takes ``stream`` and ``schedule`` inside the ``with`` block; leaving it adds the rate's figures to ``figures``
    (and says them when the send went well). ``drain_seconds``: how long the probe may wait, at most, for the
    chunks sent last to become visible."""

    def __init__(self, schedule: RateSchedule, stream: ChunkStream, probe: FreshnessProbe | None,
                 drain_seconds: float, figures: OpenLoopFigures, say: Callable[[str], None], metrics: RunMetrics):
        self.schedule, self.stream, self.probe = schedule, stream, probe
        self.drain_seconds = drain_seconds
        self.figures, self.say = figures, say
        observer = metrics.open_loop(schedule.rate, lambda: schedule.behind(time.perf_counter()))
        schedule.schedule_delay.observer = observer("schedule_delay")
        schedule.ack_latency.observer = observer("acknowledged")
        if probe is not None:
            probe.freshness.observer = observer("freshness")
            schedule.on_sent = probe.sent
        seconds = math.ceil(schedule.total_rows / schedule.chunk_rows) * schedule.interval
        probed = f"; freshness probed every {probe.interval * 1e3:g} ms" if probe is not None else ""
        say(f"Open loop: {schedule.rate:,.0f} rows/s, a chunk of {schedule.chunk_rows} rows every "
            f"{schedule.interval * 1e3:.1f} ms, {schedule.total_rows} rows over {seconds:.1f}s{probed}")

    def __enter__(self) -> RateHold:
        if self.probe is not None:
            self.probe.start()
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.stream.close()
        if self.probe is not None:
            # After a send that went well, the chunks sent last become visible: the probe waits for them until
            # the schedule's grace is over (and at most the validation's timeout); those still unseen are counted.
            drain = min(self.drain_seconds, self.schedule.grace_left(time.perf_counter()))
            self.probe.stop(drain_seconds=drain if error is None else 0.0)
        self.figures.steps.append(rate_step(self.schedule, self.probe))
        probe = probe_figures(self.probe)
        if probe is not None:
            self.figures.probe = probe if self.figures.probe is None else self.figures.probe.plus(probe)
        if error is None:
            say_step(self.say, self.figures.steps[-1], probe)
