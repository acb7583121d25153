#!/bin/bash
# Captures each runner with tcpdump on lo (PGWire port 8812) in rotating order. "ournamed"/"ouronce" ran
# the runner with an experiment switch (EXP_NAMED / EXP_ONCE) that was patched in for the run and is not kept.
# TSBS_BIN: /work/tsbs-build here; the query files from tsbs_generate_queries and `queries generate`.
# usage: pcap_round3.sh TYPE ROUNDS RUNNERS... -> /tmp/tr/cap-TYPE-RUNNER-ROUND.pcap (order rotates)
T=$1; R=$2; shift 2; RUNNERS=("$@"); N=${#RUNNERS[@]}; cd /work/main
for i in $(seq $R); do
  for k in $(seq 0 $((N-1))); do
    r=${RUNNERS[$(( (k + i) % N ))]}
    tcpdump -i lo -w /tmp/tr/cap-$T-$r-$i.pcap -s 256 -B 32768 "tcp port 8812" >/dev/null 2>&1 & TP=$!; sleep 0.5
    case $r in
      go) /work/tsbs-build/tsbs_run_queries_questdb --file=/tmp/tr/$T.gob --workers=1 --print-interval=0 --pg-host=127.0.0.1 --pg-port=8812 2>&1 | grep -oE "Overall query rate [0-9.]+" | sed "s/^/$i $r /";;
      ours) .venv/bin/python -m harness queries run /tmp/tr/$T.jsonl --workers 1 --host 127.0.0.1 --reporting-period 0 --results /tmp/tr/q.json 2>&1 | grep -oE "Overall query rate [0-9.]+" | head -1 | sed "s/^/$i $r /";;
      ournamed) EXP_NAMED=1 .venv/bin/python -m harness queries run /tmp/tr/$T.jsonl --workers 1 --host 127.0.0.1 --reporting-period 0 --results /tmp/tr/q.json 2>&1 | grep -oE "Overall query rate [0-9.]+" | head -1 | sed "s/^/$i $r /";;
    esac
    sleep 0.3; kill $TP; wait $TP 2>/dev/null
  done
done
