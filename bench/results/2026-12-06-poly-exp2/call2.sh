#!/bin/bash
# Session 25, call 7: call 6's timing again (bench has no --schedule: the switch goes after a config's
# tiles): the D32 defaults' tiles at N 4096 / 16384 with poly_exp2 = 0 (the config as it is), 4 and 2, one
# process (rows side by side), two rounds; D64's 16384 tile the same way.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
v() { local name=$1 d=$2 n=$3 lim=$4 cfg=$5; N=$n OUT=$T/$name CALL_LIMIT=$lim BACKWARD=0 ROUNDS=2 D=$d CAUSAL=0,1 VARIANTS="a:" BENCH_ARGS="--configs $cfg" bash bench/device.sh variants > /dev/null 2>&1; cp $T/$name/summary.txt $R/${name}_summary.txt; cp $T/$name/rows.jsonl $R/${name}_rows.jsonl; }
C32="ws:192,128,16,4;ws:192,128,16,4@poly_exp2=4;ws:192,128,16,4@poly_exp2=2;wsp:192,128,16,4;wsp:192,128,16,4@poly_exp2=4;wsp:192,128,16,4@poly_exp2=2;wsp:256,64,20,4;wsp:256,64,20,4@poly_exp2=4;wsp:256,64,20,4@poly_exp2=2"
v t32 32 4096,16384 250 "$C32"
v t64 64 16384 120 "ws:192,128,16,4;ws:192,128,16,4@poly_exp2=4;ws:192,128,16,4@poly_exp2=2"
for x in t32 t64; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0" | tail -44; done
