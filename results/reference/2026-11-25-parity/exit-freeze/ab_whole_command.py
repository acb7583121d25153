"""A/B, run by hand: replay's whole command from two checkouts, alternated round by round.

    python ab_whole_command.py BASE_CHECKOUT NEW_CHECKOUT ROUNDS [sink|questdb] [FILE]

Each checkout's `python -m harness replay FILE --workers 2` (this interpreter, the checkout as its working
directory, so its own `harness` package is the one imported) into the socat sink on 127.0.0.1:9019, or into
the native QuestDB (`make native-up`: HTTP 9000, ILP 9009). Prints per checkout the median whole command and
the median time outside the send (into QuestDB: outside the send and the wait until the rows are visible).
"""

import json
import statistics
import subprocess
import sys
import time

base, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
target = sys.argv[4] if len(sys.argv) > 4 else "sink"
data_file = sys.argv[5] if len(sys.argv) > 5 else "/work/tsbs-build/data/cpu-only-4000-3h.ilp"
whole: dict[str, list[float]] = {base: [], new: []}
outside: dict[str, list[float]] = {base: [], new: []}
for round_number in range(rounds):
    for checkout in (base, new) if round_number % 2 == 0 else (new, base):
        command = [sys.executable, "-m", "harness", "replay", data_file, "--workers", "2", "--host", "127.0.0.1",
                   "--results", "/tmp/ab-whole-command.json"]
        command += ["--ilp-port", "9019", "--target", "sink"] if target == "sink" else \
            ["--ilp-port", "9009", "--http-port", "9000"]
        started = time.perf_counter()
        finished = subprocess.run(command, cwd=checkout, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if finished.returncode != 0:
            sys.exit(f"{checkout}: {finished.stderr.strip()}")
        record = json.load(open("/tmp/ab-whole-command.json"))
        loading = record["phases"]["send"]["seconds"] + ((record.get("validation") or {}).get("time_to_visible_seconds") or 0)
        whole[checkout].append(seconds)
        outside[checkout].append(seconds - loading)
for checkout in (base, new):
    print(f"{checkout}: whole command median {statistics.median(whole[checkout]):.3f} s, outside the send "
          f"median {statistics.median(outside[checkout]):.3f} s [{min(outside[checkout]):.3f}-{max(outside[checkout]):.3f}]")
