#!/bin/bash
# Session 24, call 4: (1) the wgmma products over the real columns only (Q·Kᵀ over the head dim at the padded
# 32/96, dO·Vᵀ and P·V over V's at 192/128) against the build before it (flashgen_b), one process per
# variant per round, rotated; (2) early_dv (bwd_fused_up at HEAD_DIM 128) against early_dv=off in one process:
# the table's causal rows, GQA, the window, the packed batch; (3) checks of the head dims; (4) sanitizers.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; cp $T/$1/rows.jsonl $R/$1_rows.jsonl 2>/dev/null; }
ab() { local name=$1 d=$2 bwd=$3 lim=$4; shift 4; N=4096,16384 OUT=$T/$name CALL_LIMIT=$lim BACKWARD=$bwd ROUNDS=2 VARIANTS="a:;b:bin=flashgen_b" D=$d CAUSAL=0,1 BENCH_ARGS="$*" bash bench/device.sh variants > /dev/null 2>&1; keep $name; }
ab hf 32,96 0 60
ab hb 32,96 1 70
ab hf192 192 0 40 --dv 128
ab hb192 192 1 50 --dv 128
OFF="fu:64,128,12,2@early_dv=off"
v() { local name=$1 n=$2 lim=$3; shift 3; N=$n OUT=$T/$name CALL_LIMIT=$lim BACKWARD=1 ROUNDS=2 VARIANTS="a:" D=128 CAUSAL=1 BENCH_ARGS="--bwd-configs $OFF $*" bash bench/device.sh variants > /dev/null 2>&1; keep $name; }
v et 1024,4096,16384 70
v eg 4096,16384 45 --heads 64 --kv-heads 8 --batch 1
v ew 16384 35 --heads 16 --batch 1 --window-left 1024
v ep 16384 35 --varlen 0 --heads 16
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
c d32 90 $F check --quick --skip-decode --filter _d32_,_d96_
c dv192 60 $F check --quick --skip-decode --filter _dv128
c edv 60 $F check --quick --skip-decode --skip-geometry --fused-backward --filter bwd_fused_up_bf16_d128,bwd_fused_up_fp16_d128
left=$((575-SECONDS)); echo "sanitizers get $left s" >> $R/head.txt
OUT=$T/s CALL_LIMIT=$left SANITIZE_TIMEOUT=90 SANITIZE_RUNS="memcheck _d96_ --skip-decode --skip-geometry;racecheck bwd_fused_up_bf16_d128 --skip-decode --skip-geometry --fused-backward" bash bench/device.sh sanitizers > /dev/null 2>&1; keep s
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in hf hb hf192 hb192 et eg ew ep s; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | grep -v "rc=0" | tail -30; done
