#!/bin/bash
# Session 24, call 1: Schedule::mma_overlap (FA3's intra-warpgroup order in the fused backward) against the
# default in one bench process per round (rotated), D64/D128 x N 1024/4096/16384 x causal; its gradients
# on the GPU (check --backward-schedule); results land as each step ends.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; cp $T/$1/rows.jsonl $R/$1_rows.jsonl 2>/dev/null; }
F128="f:64,128,12,2@mma_overlap=2;f:64,128,12,2@mma_overlap=4;f:64,128,12,2@mma_overlap=6;f:64,128,12,2@mma_overlap=7"
U128="fu:64,128,12,2@mma_overlap=2;fu:64,128,12,2@mma_overlap=4;fu:64,128,12,2@mma_overlap=6"
F64="f:128,128,12,2@mma_overlap=2;f:128,128,12,2@mma_overlap=4;f:128,128,12,2@mma_overlap=6"
U64="fu:128,128,12,2@mma_overlap=2;fu:128,128,12,2@mma_overlap=4;fu:128,128,12,2@mma_overlap=6"
v() { local name=$1 d=$2 c=$3 cfg=$4 lim=$5; OUT=$T/$name CALL_LIMIT=$lim BACKWARD=1 ROUNDS=2 VARIANTS="a:" D=$d CAUSAL=$c BENCH_ARGS="--bwd-configs $cfg" bash bench/device.sh variants > /dev/null 2>&1; keep $name; }
v v128 128 0 "$F128" 100
v u128 128 1 "$U128" 100
v v64 64 0 "$F64" 100
v u64 64 1 "$U64" 100
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $R/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $R/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $R/$name.log | cut -c1-300 | tee -a $R/head.txt; }
c ovl6_check 70 $F check --quick --skip-decode --skip-geometry --fused-backward --backward-schedule mma_overlap=6 --filter ovl6
c ovl7_check 70 $F check --quick --skip-decode --skip-geometry --fused-backward --backward-schedule mma_overlap=7 --filter ovl7
cat $R/head.txt; for x in v128 u128 v64 u64; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0" | tail -40; done
