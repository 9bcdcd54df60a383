#!/bin/bash
# Session 24, call 2: mma_overlap at HEAD_DIM 128 (bits 1, 2, 3, 5 non-causal; 2, 3 causal) against the default,
# three rotated rounds; GQA (H 64 / 8, B 1) with mma_overlap=2.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; cp $T/$1/rows.jsonl $R/$1_rows.jsonl 2>/dev/null; }
F128="f:64,128,12,2@mma_overlap=1;f:64,128,12,2@mma_overlap=2;f:64,128,12,2@mma_overlap=3;f:64,128,12,2@mma_overlap=5"
U128="fu:64,128,12,2@mma_overlap=2;fu:64,128,12,2@mma_overlap=3"
v() { local name=$1 d=$2 c=$3 cfg=$4 lim=$5 rounds=$6; shift 6; N=${NN:-1024,4096,16384} OUT=$T/$name CALL_LIMIT=$lim BACKWARD=1 ROUNDS=$rounds VARIANTS="a:" D=$d CAUSAL=$c BENCH_ARGS="--bwd-configs $cfg $*" bash bench/device.sh variants > /dev/null 2>&1; keep $name; }
v v128 128 0 "$F128" 140 3
v u128 128 1 "$U128" 110 3
NN=4096,16384 v g128 128 0 "f:64,128,12,2@mma_overlap=2" 60 2 --heads 64 --kv-heads 8 --batch 1
NN=4096,16384 v gu128 128 1 "fu:64,128,12,2@mma_overlap=2" 60 2 --heads 64 --kv-heads 8 --batch 1
for x in v128 u128 g128 gu128; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0" | tail -40; done
