#!/bin/bash
# Session 25, call 9: the fused dQ's column pieces reduced over their real columns (HEAD_DIM 96: warpgroup
# 1's piece 8 KB; branch exp/d32-dq-columns, with D32's row pieces of call 8) against main, one process
# per variant per round, rotated; the D96 checks (fused among them) and memcheck / racecheck.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
N=1024,4096,16384 OUT=$T/hb CALL_LIMIT=110 BACKWARD=1 ROUNDS=2 VARIANTS="main:bin=flashgen_main;new:" D=96 CAUSAL=0,1 bash bench/device.sh variants > /dev/null 2>&1
cp $T/hb/summary.txt $R/hb_summary.txt; cp $T/hb/rows.jsonl $R/hb_rows.jsonl
c d96 120 $F check --quick --skip-decode --fused-backward --filter _d96_
grep -E "^backward" $T/d96.log | head -12 >> $R/head.txt
OUT=$T/s CALL_LIMIT=150 SANITIZE_TIMEOUT=70 SANITIZE_RUNS="memcheck bwd_fused_bf16_d96,bwd_fused_up_bf16_d96 --skip-decode --fused-backward;racecheck bwd_fused_bf16_d96 --skip-decode --skip-geometry --fused-backward" bash bench/device.sh sanitizers > /dev/null 2>&1; cp $T/s/summary.txt $R/s_summary.txt
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in hb s; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0  " | tail -14; done
