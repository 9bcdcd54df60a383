#!/bin/bash
# Session 25, call 8: the fused kernel's dQ over HEAD_DIM 32's real columns (N 32, 8 KB pieces; branch
# exp/d32-dq-columns) against main, one process per variant per round, rotated; then the D32 checks (the
# fused kernels among them) and memcheck / racecheck of the D32 fused kernels.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
N=1024,4096,16384 OUT=$T/hb CALL_LIMIT=130 BACKWARD=1 ROUNDS=2 VARIANTS="main:bin=flashgen_main;new:" D=32 CAUSAL=0,1 bash bench/device.sh variants > /dev/null 2>&1
cp $T/hb/summary.txt $R/hb_summary.txt; cp $T/hb/rows.jsonl $R/hb_rows.jsonl
c d32 120 $F check --quick --skip-decode --fused-backward --filter _d32_
grep -E "^backward" $T/d32.log | head -12 >> $R/head.txt
OUT=$T/s CALL_LIMIT=200 SANITIZE_TIMEOUT=90 SANITIZE_RUNS="memcheck _d32_ --skip-decode --skip-geometry --fused-backward;racecheck bwd_fused_up_bf16_d32 --skip-decode --skip-geometry --fused-backward" bash bench/device.sh sanitizers > /dev/null 2>&1; cp $T/s/summary.txt $R/s_summary.txt
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in hb s; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0  " | tail -14; done
