#!/bin/bash
# Session 23, call 1: HEAD_DIM 256's dK/dV on the column warpgroups (bwd_dkdv_wgmma 64×64 on 8 warps: both
# warpgroups on the program's 64 keys, each half of dK's and dV's columns, P and dS handed over in shared
# memory) as the default. The D256 checks against the f64 reference (the pair and the geometry's D256
# cases), memcheck and racecheck of the new kernel, then the D256 backward rows beside the column slices
# (the previous default, 32×64×4) and the column warpgroups on 32-row query blocks, in one process.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
xz -dc .carry/flashgen.xz > /tmp/fg; chmod +x /tmp/fg
timeout 120 /tmp/fg check --quick --filter "_d256_,D256" > $T/check.txt 2>&1; echo "check rc $?" | tee $R/head.txt
grep -cE "^ok|^pass|PASS" $T/check.txt >> $R/head.txt; grep -E "FAIL" $T/check.txt | head -5 >> $R/head.txt; tail -3 $T/check.txt >> $R/head.txt
OUT=$T/s CALL_LIMIT=330 SANITIZE_TIMEOUT=100 SANITIZE_RUNS="memcheck bn64_w8 --quick --skip-geometry;racecheck bn64_w8 --quick --skip-geometry" bash bench/device.sh sanitizers > /dev/null 2>&1
cp $T/s/summary.txt $R/s_summary.txt
timeout 90 /tmp/fg bench --d 256 --n 4096,16384 --causal 0,1 --backward --backward-only --timing do-bench --bwd-configs "w:32,64,4,2|64,32,4,2;w:32,64,8,2|64,32,4,2" --json $T/b.jsonl > $T/b.txt 2>&1
cat $T/b.jsonl > $R/rows.jsonl
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; sed -n '/^---- /,$p' $R/s_summary.txt | grep -v "^ *$" | tail -8
echo "== bwd"; grep -vE "^\s*$" $T/b.txt | tail -16
