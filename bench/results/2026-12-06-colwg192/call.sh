#!/bin/bash
# Session 23, call 3 (branch exp/colwg-d192): HEAD_DIM 192's dK/dV on the column warpgroups (64×64×8: each
# warpgroup panel w and half w of panel 2, the half's chain starting 64 bytes into the panel's rows) as the
# default. The D192 checks against the f64 reference (the pair, the 192/128 geometry cases), memcheck, then
# the D192 backward rows (DV 192 and DV 128) beside the previous default (16×64×4 unsplit).
set -u
R=$OUT; T=/tmp/o4; rm -rf $T; mkdir -p $T
xz -dc .carry/flashgen.xz > /tmp/fg; chmod +x /tmp/fg
timeout 150 /tmp/fg check --quick --filter "_d192_,192" > $T/check.txt 2>&1; echo "check rc $?" | tee $R/head.txt
grep -E "FAIL" $T/check.txt | head -5 >> $R/head.txt; grep -E "passed" $T/check.txt | tail -3 >> $R/head.txt
timeout 60 /tmp/fg bench --d 192 --n 4096,16384 --causal 0,1 --backward --backward-only --timing do-bench --bwd-configs "w:16,64,4,2|64,32,4,2" --json $T/b.jsonl > $T/b.txt 2>&1
timeout 60 /tmp/fg bench --d 192 --dv 128 --n 4096,16384 --causal 0,1 --backward --backward-only --timing do-bench --bwd-configs "w:16,64,4,2|64,32,4,2" --json $T/b128.jsonl > $T/b128.txt 2>&1
OUT=$T/s CALL_LIMIT=200 SANITIZE_TIMEOUT=120 SANITIZE_RUNS="memcheck _d192_,192" bash bench/device.sh sanitizers > /dev/null 2>&1
cp $T/s/summary.txt $R/s_summary.txt 2>/dev/null
cat $T/b.jsonl $T/b128.jsonl > $R/rows.jsonl; tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; sed -n '/^---- /,$p' $R/s_summary.txt | grep -v "^ *$" | tail -4
for f in b b128; do echo "== $f"; grep -E "^bwd " $T/$f.txt; done
