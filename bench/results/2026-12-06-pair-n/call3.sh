#!/bin/bash
# Session 25, call 3: call 2's ordered-against-atomic A/B again, in one process (`bench --fused`: the
# default, split, fused and fused-atomic rows; FLASHGEN_BACKWARD does not reach the bench's plan, so call 2's
# "atom" variant ran bwd_fused too).
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
v() { local name=$1 d=$2 n=$3 lim=$4; shift 4; N=$n OUT=$T/$name CALL_LIMIT=$lim BACKWARD=1 ROUNDS=2 VARIANTS="a:" D=$d CAUSAL=0 BENCH_ARGS="$*" bash bench/device.sh variants > /dev/null 2>&1; cp $T/$name/summary.txt $R/${name}_summary.txt; cp $T/$name/rows.jsonl $R/${name}_rows.jsonl; }
v at 64,128 1024,4096,16384 200 --fused
v gq 128 4096,16384 100 --fused --heads 64 --kv-heads 8 --batch 1
for x in at gq; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | tail -30; done
