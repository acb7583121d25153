"""The open loop (``bench --rate``): chunks sent at a fixed rate, each at its intended time, every latency and each
chunk's freshness measured from it; ramps and the search for the knee, queries beside, thresholds.

Its door is ``rates.open_loop_send``, given resolved settings and plain values, never the run's options:

- ``options``: its flags (``OpenLoopOptions``, which ``BenchOptions`` inherits), checked and resolved into the plan
- ``inputs``: what it is given: the plan (``OpenLoopPlan``) and the rest of the run as plain values
  (``SendContext``)
- ``run_log``: what it asks of the run it reports into: its record and its output (``RunLog``)
- ``schedule``: one rate's schedule of intended times (``RateSchedule``), the send phase's schedule
- ``made_ahead``: the chunks made ahead of their time, by a process of their own (``MadeAhead``) or a thread
- ``freshness``: the probe that counts the tables and times each chunk until visible (``FreshnessProbe``)
- ``rate_hold``: one rate held: its schedule, stream and probe, its figures recorded and said (``RateHold``)
- ``rates``: every rate in turn over consecutive chunks (``RatesInTurn``): the closed-loop step, a rate held,
  the ramp, the search; the knee named
- ``knee``: what holding a rate means, the knee among a ramp's steps, the search by bisection
- ``prompt_threads``: the process kept prompt over the send (the GIL's switch interval, ``gc.freeze``)
- ``queries_beside``: the queries run beside the ingest at their rate, their figures
- ``figures``: the record's figures of a rate and of the probe, and the last rate's (a matrix cell's)
- ``printing``: what it says of each rate, of a ramp or search, and its knee
- ``thresholds``: ``--threshold``'s grammar, judged on the figures; the lines of those missed

The record's dataclasses (``OpenLoopFigures``, ``RateStep`` ...) are the records' (``harness.records.run_record``).
"""
