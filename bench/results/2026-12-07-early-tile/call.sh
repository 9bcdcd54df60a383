#!/bin/bash
# Session 32, call 1: Schedule::early_next_tile (a persistent program's next tile's K/V, and at HEAD_DIM 64 its
# first Q/dO block, loaded under this tile's staged epilogue) against the persistent default, one process per
# row group, bracketed (default, early, plain persistent named), do_bench timing, two passes; the GPU test
# that it is the persistent grid bit for bit; racecheck and memcheck of multi-tile programs.
set -u
LIMIT=${LIMIT:-560}
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T /tmp/fg-bin
xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen; chmod +x /tmp/fg-bin/flashgen
xz -dc .carry/gpu_test.xz > /tmp/fg-bin/gpu_test; chmod +x /tmp/fg-bin/gpu_test
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
S=$R/summary.txt
{ date -u; cat .carry/build.txt; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; } > $S
left() { echo $((LIMIT-SECONDS)); }
timeout 120 /tmp/fg-bin/gpu_test --ignored --exact early_next_tile_is_the_persistent_grid_bit_for_bit > $T/gpu_test.log 2>&1
echo "gpu test rc=$? $(grep -E 'test result' $T/gpu_test.log)" >> $S
B="bench --backward --backward-only --timing do-bench"
E64="f:128,128,12,2@persistent_tiles=on,early_next_tile=on;f:128,128,12,2@persistent_tiles=on"
E128="f:64,128,12,2@persistent_tiles=on,early_next_tile=on;f:64,128,12,2@persistent_tiles=on"
for pass in 1 2; do
  timeout 70 $F $B --d 64 --n 1024,4096 --causal 0 --bwd-configs "$E64" >> $R/ab.log 2>&1; echo "d64 $pass rc=$?" >> $S
  timeout 70 $F $B --d 128 --n 1024,4096 --causal 0 --bwd-configs "$E128" >> $R/ab.log 2>&1; echo "d128 $pass rc=$?" >> $S
  timeout 50 $F $B --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096 --causal 0 --bwd-configs "$E128" >> $R/ab.log 2>&1; echo "gqa $pass rc=$?" >> $S
  [ $(left) -lt 200 ] && break
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
SB="bench --backward --backward-only --timing batched --reps 1 --warmup-ms 0 --batch 2 --heads 16 --n 1024 --causal 0"
for tool in racecheck memcheck; do
  for d in 64 128; do
    [ $(left) -lt 40 ] && break
    if [ $d = 64 ]; then C="f:128,128,12,2@persistent_tiles=on,early_next_tile=on"; else C="f:64,128,12,2@persistent_tiles=on,early_next_tile=on"; fi
    timeout $(( $(left) > 150 ? 110 : $(left) - 30 )) $cs --tool $tool --print-limit 20 $F $SB --d $d --bwd-configs "$C" > $T/san_${tool}_$d.log 2>&1
    echo "$tool d$d rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $T/san_${tool}_$d.log | tail -1) $(grep -c early_next_tile $T/san_${tool}_$d.log) early-lines" >> $S
  done
done
cp $T/*.log $R/ 2>/dev/null
cat $S; grep -hE "^bwd flashgen" $R/ab.log | head -40
