#!/bin/bash
# How output.txt was made (by hand, 2026-11-24): run from this folder. PY is the repo's venv;
# original_on_our_deps.py runs questdb/py-tsbs-benchmark (checked out at /work/original/py-tsbs-benchmark,
# requests installed to /tmp/reqs) in that interpreter; naive.py runs `harness` with zone-less timestamps.
PY=/work/main/.venv/bin/python
A="bench --row-count 2000000 --seed 1 --protocol-version 1 --symbol-dtype string[pyarrow] --reporting-period 0 --workers 2"
show() { python3 -c "
import json; p=json.load(open('$2'))['phases']['serialize']; print('$1', round(p['rows']/p['seconds']/1e6,3), 'M/s', round(p['client_cpu_seconds']/2,3), 'CPU-s/M')"; }
for r in 1 2 3 4 5; do
  $PY original_on_our_deps.py 2>&1 | awk '/rows in/ {printf "orig   %s M/s ", $5} /Serialize CPU/ {sub("s","",$3); printf "%.3f CPU-s/M\n", $3/2}'
  $PY -m harness $A --results /tmp/a1.json >/dev/null 2>&1; show "ours  " /tmp/a1.json
  $PY -m harness $A --sample-interval 0 --results /tmp/a2.json >/dev/null 2>&1; show "ours-s0" /tmp/a2.json
  NAIVE=1 $PY naive.py $A --results /tmp/a3.json >/dev/null 2>&1; show "naive " /tmp/a3.json
done
