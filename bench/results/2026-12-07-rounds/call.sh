#!/bin/bash
# Session 31, call 1: Schedule::dq_sum_rounds and Schedule::prefetch_next_tile on the persistent fused
# backward, against persistent_tiles=on alone (the non-causal default), one process per row group (do_bench
# timing), two passes; the GPU check of every fused set with both switches between the passes; memcheck.
set -u
LIMIT=${LIMIT:-560}
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T /tmp/fg-bin
xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen; chmod +x /tmp/fg-bin/flashgen
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
S=$R/summary.txt
{ date -u; cat .carry/build.txt; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; } > $S
B="bench --backward --backward-only --timing do-bench --json $R/ab.jsonl"
left() { echo $((LIMIT-SECONDS)); }
cfgs() { # tile -> the three variants beside the default
  echo "f:$1@persistent_tiles=on,dq_sum_rounds=on;f:$1@persistent_tiles=on,prefetch_next_tile=on;f:$1@persistent_tiles=on,dq_sum_rounds=on,prefetch_next_tile=on"
}
for pass in 1 2; do
  if [ $pass = 2 ]; then
    timeout $(( $(left) > 330 ? 150 : ($(left) > 140 ? $(left) - 40 : 100) )) $F check --fused-backward --filter bwd_fused --skip-decode \
      --backward-schedule persistent_tiles=on,dq_sum_rounds=on,prefetch_next_tile=on > $T/check.log 2>&1
    echo "check rc=$? $(grep -ciE 'fail|mismatch' $T/check.log) fail-lines $(grep -c 'dqr1_pft1' $T/check.log) switched-lines" >> $S
    tail -3 $T/check.log >> $S
    [ $(left) -lt 170 ] && break
  fi
  timeout 70 $F $B --d 64 --n 1024,4096 --causal 0 --bwd-configs "$(cfgs 128,128,12,2)" >> $R/ab.log 2>&1; echo "d64nc $pass rc=$?" >> $S
  timeout 70 $F $B --d 128 --n 1024,4096 --causal 0 --bwd-configs "$(cfgs 64,128,12,2)" >> $R/ab.log 2>&1; echo "d128nc $pass rc=$?" >> $S
  timeout 50 $F $B --d 64 --n 16384 --causal 0 --bwd-configs "$(cfgs 128,128,12,2)" >> $R/ab.log 2>&1; echo "d64nc16k $pass rc=$?" >> $S
  timeout 50 $F $B --d 128 --n 16384 --causal 0 --bwd-configs "$(cfgs 64,128,12,2)" >> $R/ab.log 2>&1; echo "d128nc16k $pass rc=$?" >> $S
  timeout 60 $F $B --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096,16384 --causal 0 --bwd-configs "$(cfgs 64,128,12,2)" >> $R/ab.log 2>&1; echo "gqa $pass rc=$?" >> $S
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
if [ $(left) -gt 90 ]; then
  timeout $(( $(left) - 20 )) $cs --tool memcheck --print-limit 20 $F check --quick --fused-backward --skip-decode --filter bwd_fused_bf16_d64,bwd_fused_f16_d128 \
    --backward-schedule persistent_tiles=on,dq_sum_rounds=on,prefetch_next_tile=on > $T/san_mem.log 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $T/san_mem.log | tail -1)" >> $S
fi
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $S; grep -hE "^ *(bwd|fwd)|fused|bwd:" $R/ab.log | head -80
