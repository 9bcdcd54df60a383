#!/bin/bash
# Session 21, the H200 call (build ad2e07c: TMA boxes the default for split decode calls): the decode rows and
# the batch-1 step of the default beside `tma_kv=off` (the cp.async kernel) in one process per round.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
OUT=$T/h CALL_LIMIT=100 DECODE=1 ROUNDS=3 VARIANTS="ab:--decode-schedule tma_kv=off" bash bench/device.sh variants > /dev/null 2>&1
cp $T/h/summary.txt $R/h_summary.txt; tar czf $R/h_rows_logs.tgz -C $T/h . 2>/dev/null
sed -n '/^---- /,$p' $R/h_summary.txt | grep -v "^ *$" | tail -34
grep -h 'us_layers' $T/h/rows.jsonl | python3 -c 'import sys,json; [print(r["config"], r["us"], r["us_layers"], r["us_graph"]) for r in map(json.loads, sys.stdin)]'
