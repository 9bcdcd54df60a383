#!/bin/bash
# Session 22, call 1: Schedule::split_kv_ring, the 128×176 tile on two stages (fwd_ws) and HEAD_DIM 256 ping-pong on two.
# Checks of the new specs against the f64 reference, memcheck and racecheck, then the forward rows of the
# default beside `ws:128,176,12,2` and `split_kv_ring=on` in one process: D128 non-causal table shapes, GQA
# (B 1, H 64 on 8) and fa4_bench.py's varlen batch (seed 0).
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
xz -dc .carry/flashgen.xz > /tmp/fg; chmod +x /tmp/fg
SPECS="ws:bf16,128,128,176,1,12,2;ws:fp16,128,128,176,1,12,2;ws:bf16,128,128,128,1,12,3@split_kv_ring=on;ws:fp16,128,128,128,3,12,3@split_kv_ring=on;wsp:bf16,128,128,128,1,12,3@split_kv_ring=on;wsp:fp16,128,128,128,1,12,3@split_kv_ring=on;wsp:bf16,64,192,128,1,16,4@split_kv_ring=on;wsp:fp16,64,256,64,3,20,4@split_kv_ring=on,own_blocks=off;ws:bf16,64,192,128,3,16,4@split_kv_ring=on;ws:bf16,256,128,64,1,12,2@split_kv_ring=on;ws:fp16,256,128,64,3,12,2@split_kv_ring=on"
timeout 90 /tmp/fg check --forward-only --specs "$SPECS" --filter "bn176,kvsplit1" > $T/check.txt 2>&1; echo "check rc $?" | tee $R/head.txt
grep -ciE "^(ok|pass)|passed" $T/check.txt >> $R/head.txt; tail -4 $T/check.txt >> $R/head.txt
OUT=$T/s CALL_LIMIT=150 SANITIZE_TIMEOUT=70 SANITIZE_RUNS="memcheck bn176 --forward-only --specs ws:bf16,128,128,176,1,12,2;racecheck bn176 --forward-only --specs ws:bf16,128,128,176,1,12,2" bash bench/device.sh sanitizers > /dev/null 2>&1
cp $T/s/summary.txt $R/s_summary.txt
C="ws:128,176,12,2;ws:128,128,12,3@split_kv_ring=on;wsp:128,128,12,3@split_kv_ring=on"
timeout 60 /tmp/fg bench --d 128 --n 1024,2048,4096,16384 --causal 0 --timing do-bench --configs "$C" --json $T/t1.jsonl > $T/t1.txt 2>&1
timeout 40 /tmp/fg bench --d 128 --n 4096,16384 --causal 0 --timing do-bench --configs "$C" --json $T/t2.jsonl > $T/t2.txt 2>&1
timeout 50 /tmp/fg bench --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096,16384 --causal 0 --timing do-bench --configs "$C" --json $T/g.jsonl > $T/g.txt 2>&1
timeout 35 /tmp/fg bench --varlen 0 --d 128 --causal 0 --timing do-bench --configs "$C" --json $T/v.jsonl > $T/v.txt 2>&1
timeout 50 /tmp/fg bench --d 256 --n 4096,16384 --causal 0,1 --timing do-bench --configs "ws:128,64,12,2@split_kv_ring=on;ws:128,32,12,2@split_kv_ring=on" --json $T/h.jsonl > $T/h.txt 2>&1
cat $T/t1.jsonl $T/t2.jsonl $T/g.jsonl $T/v.jsonl $T/h.jsonl > $R/rows.jsonl
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; sed -n '/^---- /,$p' $R/s_summary.txt | grep -v "^ *$" | tail -8
for f in t1 t2 g v h; do echo "== $f"; grep -vE "^\s*$" $T/$f.txt | tail -22; done
