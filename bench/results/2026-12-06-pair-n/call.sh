#!/bin/bash
# Session 25, call 2: (1) the D32/D96 checks with the wgmma pair's products over the real columns (build
# 0ca3b70); (2) what the ordered dQ chains cost the non-causal fused backward: bwd_fused against
# bwd_fused_atomic (FLASHGEN_BACKWARD=fused-atomic, additions in arrival order), MHA and GQA, the bound on
# any reordering of the chains; (3) branch exp/colwg-dp-steps (rebased, flashgen_dp) at 192/128.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; }
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
v() { local name=$1 d=$2 n=$3 causal=$4 lim=$5 variants=$6; shift 6; N=$n OUT=$T/$name CALL_LIMIT=$lim BACKWARD=1 ROUNDS=2 VARIANTS="$variants" D=$d CAUSAL=$causal BENCH_ARGS="$*" bash bench/device.sh variants > /dev/null 2>&1; keep $name; }
# (the binaries are unpacked by the first variants run; check after it)
v at 64,128 1024,4096,16384 0 120 "ord:;atom:FLASHGEN_BACKWARD=fused-atomic"
c pair 150 $F check --quick --skip-decode --filter _d32_,_d96_
grep -E "^backward" $T/pair.log | head -24 >> $R/head.txt
v gq 128 4096,16384 0 70 "ord:;atom:FLASHGEN_BACKWARD=fused-atomic" --heads 64 --kv-heads 8 --batch 1
v dp 192 4096,16384 0,1 80 "new:;dp:bin=flashgen_dp" --dv 128
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in at gq dp; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | tail -14; done
