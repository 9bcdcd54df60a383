#!/bin/bash
# Session 25, call 1: the products whose N is a head dim over the real columns (P·V and dV over V's, dK over
# Q/K's: N 96 / 32 at the padded 96 / 32, not the tile's 128 / 64) against main (flashgen_main), one process
# per variant per round, rotated; then the head dims' checks and memcheck.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; cp $T/$1/rows.jsonl $R/$1_rows.jsonl 2>/dev/null; }
ab() { local name=$1 d=$2 bwd=$3 lim=$4; shift 4; N=4096,16384 OUT=$T/$name CALL_LIMIT=$lim BACKWARD=$bwd ROUNDS=2 VARIANTS="main:bin=flashgen_main;new:" D=$d CAUSAL=0,1 BENCH_ARGS="$*" bash bench/device.sh variants > /dev/null 2>&1; keep $name; }
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
ab hf 32,96 0 100
ab hb 32,96 1 110
ls /tmp/fg-bin >> $R/head.txt
c d96 120 $F check --quick --skip-decode --filter _d32_,_d96_
c dv192 60 $F check --quick --skip-decode --filter "dv 192/128"
left=$((575-SECONDS)); echo "sanitizers get $left s" >> $R/head.txt
OUT=$T/s CALL_LIMIT=$left SANITIZE_TIMEOUT=90 SANITIZE_RUNS="memcheck _d96_ --skip-decode --skip-geometry;racecheck bwd_fused_up_bf16_d96 --skip-decode --skip-geometry --fused-backward" bash bench/device.sh sanitizers > /dev/null 2>&1; keep s
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in hf hb s; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0" | tail -30; done
