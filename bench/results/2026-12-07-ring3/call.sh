#!/bin/bash
# Session 32: the fused backward at HEAD_DIM 128 on a ring of 3 Q/dO stages (one dQ staging buffer then:
# the shared memory holds 3 slots and 1 buffer, or 2 and 2) against the default 2 stages, bracketed (default,
# 3 stages, the default's tile named), do_bench timing, one pass, one process per row group; and at N 16384
# non-causal the persistent grid with the next tile loaded early (`early_next_tile`) beside them.
set -u
R=$OUT; mkdir -p /tmp/fg-bin
xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen; chmod +x /tmp/fg-bin/flashgen
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
{ date -u; cat .carry/build.txt; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; } > $R/summary.txt
B="bench --backward --backward-only --timing do-bench"
for pass in 1; do
  timeout 70 $F $B --d 128 --n 1024,4096 --causal 0 --bwd-configs "f:64,128,12,3@persistent_tiles=on;f:64,128,12,2@persistent_tiles=on" >> $R/ab.log 2>&1; echo "nc $pass rc=$?" >> $R/summary.txt
  timeout 60 $F $B --d 128 --n 16384 --causal 0 --bwd-configs "f:64,128,12,3;f:64,128,12,2@persistent_tiles=on,early_next_tile=on;f:64,128,12,2" >> $R/ab.log 2>&1; echo "nc16k $pass rc=$?" >> $R/summary.txt
  timeout 90 $F $B --d 128 --n 1024,4096,16384 --causal 1 --bwd-configs "fu:64,128,12,3;fu:64,128,12,2" >> $R/ab.log 2>&1; echo "c $pass rc=$?" >> $R/summary.txt
done
cat $R/summary.txt; grep -hE "^bwd flashgen" $R/ab.log
