#!/bin/bash
# Session 22, call 2: HEAD_DIM 256's forward on the split ring as the default (128×64×2, ping-pong): the check
# suite's D256 forward cases and the other split specs against the f64 reference, memcheck and racecheck of
# the D256 defaults, the hdim rows against the tile without the split.
set -u
R=$OUT; T=/tmp/o2; rm -rf $T; mkdir -p $T
xz -dc .carry/flashgen.xz > /tmp/fg; chmod +x /tmp/fg
SPECS="ws:bf16,128,128,176,1,12,2;ws:fp16,128,128,176,1,12,2;ws:bf16,128,128,128,1,12,3@split_kv_ring=on;ws:fp16,128,128,128,3,12,3@split_kv_ring=on;wsp:bf16,128,128,128,1,12,3@split_kv_ring=on;wsp:bf16,64,192,128,1,16,4@split_kv_ring=on;wsp:fp16,64,256,64,3,20,4@split_kv_ring=on,own_blocks=off"
timeout 100 /tmp/fg check --quick --forward-only --specs "$SPECS" --filter "kvsplit1,bn176" > $T/check.txt 2>&1; echo "check rc $?" > $R/head.txt
tail -5 $T/check.txt >> $R/head.txt
OUT=$T/s CALL_LIMIT=90 SANITIZE_TIMEOUT=42 SANITIZE_RUNS="memcheck kvsplit1 --forward-only;racecheck kvsplit1 --forward-only" bash bench/device.sh sanitizers > /dev/null 2>&1
cp $T/s/summary.txt $R/s_summary.txt
timeout 40 /tmp/fg bench --d 256 --n 4096,16384 --causal 0,1 --timing do-bench --configs "ws:128,64,12,2@split_kv_ring=off" --json $T/h.jsonl > $T/h.txt 2>&1
cat $T/h.jsonl > $R/rows.jsonl
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; sed -n '/^---- /,$p' $R/s_summary.txt | grep -v "^ *$" | tail -6
for f in h; do echo "== $f"; grep -E "^(fwd|bwd) " $T/$f.txt | tail -12; done
