#!/bin/bash
# Session 27, call 2: (1) bwd_fused_up's grid folded at every number of waves (flashgen_f: FOLD_BELOW_WAVES
# 1e6) against main, the table's causal rows D64/D128 at N 1024-16384; (2) ncu: each backward kernel's
# duration (bwd_pre, the fused kernel, its dQ sum pass) at the short rows; (3) ncu of the D64 fused kernel
# at N 16384 (L2 reductions).
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; cp $T/$1/rows.jsonl $R/$1_rows.jsonl 2>/dev/null; }
: # (the fold A/B ran in the first form of this call)
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
d() { local name=$1; shift; timeout 90 $ncu --clock-control none -k "regex:bwd_pre|bwd_fused|bwd_dkdv|bwd_dq" --launch-skip 6 --launch-count 6 --section SpeedOfLight $F bench "$@" --backward --backward-only --reps 1 > $T/$name.log 2>&1; echo "== $name ($*)" >> $R/durations.txt; grep -E "^  fa2_|Duration|DRAM Throughput|Compute \(SM\)" $T/$name.log >> $R/durations.txt; }
d d64n1024 --d 64 --n 1024 --causal 0
d d64n1024c --d 64 --n 1024 --causal 1
d d128n1024 --d 128 --n 1024 --causal 0
d d128n4096 --d 128 --n 4096 --causal 0
left=$((580-SECONDS)); echo "ncu gets $left s" >> $R/durations.txt
[ $left -gt 60 ] && { OUT=$T/n CALL_LIMIT=$left NCU_TIMEOUT=$((left-10)) NCU_RUNS="d64bwd|fa2_bwd_fused_bf16_d64_st1|--d 64 --n 16384 --causal 0 --backward --backward-only" bash bench/device.sh ncu > /dev/null 2>&1; keep n; cp $T/n/*.details.txt $R/ 2>/dev/null; }
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/durations.txt | grep -v "^ *$" | head -80; for x in fold n; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt 2>/dev/null | grep -v "^ *$" | grep -v "rc=0" | tail -40; done
