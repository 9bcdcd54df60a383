#!/bin/bash
# Session 25, call 6: `Schedule::poly_exp2` (every k-th n8 tile of P's exponentials by an FMA-pipe
# polynomial instead of MUFU's ex2) on the forward: checks with k = 2 (the most polynomial the switch is
# meant for) on the D32 and D64 forwards, then the timing, k = 0 (the default) against 4, 3 and 2, one
# process per variant per round, rotated.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
v() { local name=$1 d=$2 n=$3 lim=$4; N=$n OUT=$T/$name CALL_LIMIT=$lim BACKWARD=0 ROUNDS=2 D=$d CAUSAL=0,1 VARIANTS="p0:;p4:--schedule poly_exp2=4;p3:--schedule poly_exp2=3;p2:--schedule poly_exp2=2" bash bench/device.sh variants > /dev/null 2>&1; cp $T/$name/summary.txt $R/${name}_summary.txt; cp $T/$name/rows.jsonl $R/${name}_rows.jsonl; }
v t32 32 1024,4096,16384 150
c chk 150 $F check --quick --forward-only --skip-decode --filter _d32_,_d64_ --forward-schedule poly_exp2=2
grep -E "pexp" $T/chk.log | head -6 >> $R/head.txt
v t64 64 1024,4096,16384 150
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in t32 t64; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0" | tail -14; done
