#!/bin/bash
# Session 22, call 2: HEAD_DIM 256's forward on the split ring as the default (128×64×2, ping-pong): the check
# suite's D256 forward cases and the other split specs against the f64 reference, memcheck and racecheck of
# the D256 defaults, the hdim rows against the tile without the split, softcap 30 against the old modified tile.
set -u
R=$OUT; T=/tmp/o2; rm -rf $T; mkdir -p $T
xz -dc .carry/flashgen.xz > /tmp/fg; chmod +x /tmp/fg
SPECS="ws:bf16,128,128,176,1,12,2;ws:fp16,128,128,176,1,12,2;ws:bf16,128,128,128,1,12,3@split_kv_ring=on;ws:fp16,128,128,128,3,12,3@split_kv_ring=on;wsp:bf16,128,128,128,1,12,3@split_kv_ring=on;wsp:bf16,64,192,128,1,16,4@split_kv_ring=on;wsp:fp16,64,256,64,3,20,4@split_kv_ring=on,own_blocks=off"
timeout 120 /tmp/fg check --quick --forward-only --specs "$SPECS" --filter "kvsplit1,bn176" > $T/check.txt 2>&1; echo "check rc $?" > $R/head.txt
tail -5 $T/check.txt >> $R/head.txt
OUT=$T/s CALL_LIMIT=110 SANITIZE_TIMEOUT=50 SANITIZE_RUNS="memcheck _d256_ --forward-only;racecheck _d256_ --forward-only" bash bench/device.sh sanitizers > /dev/null 2>&1
cp $T/s/summary.txt $R/s_summary.txt
timeout 45 /tmp/fg bench --d 256 --n 4096,16384 --causal 0,1 --timing do-bench --configs "ws:128,64,12,2@split_kv_ring=off" --json $T/h.jsonl > $T/h.txt 2>&1
timeout 35 /tmp/fg bench --d 256 --n 4096,16384 --causal 1 --softcap 30 --timing do-bench --configs "ws:128,32,12,4" --json $T/c.jsonl > $T/c.txt 2>&1
cat $T/h.jsonl $T/c.jsonl > $R/rows.jsonl
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; sed -n '/^---- /,$p' $R/s_summary.txt | grep -v "^ *$" | tail -6
for f in h c; do echo "== $f"; grep -E "^(fwd|bwd) " $T/$f.txt | tail -12; done
