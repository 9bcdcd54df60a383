#!/bin/bash
# Session 29, call 1: Schedule::dq_sum_follows (the dQ sum pass started on the fused kernel's trigger,
# waiting on its locks): an A/B against the same kernels with the switch off, one process per row group
# (do_bench timing), the GPU check of every fused set between two passes, then memcheck over fused sets.
set -u
LIMIT=${LIMIT:-560}
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T /tmp/fg-bin
xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen; chmod +x /tmp/fg-bin/flashgen
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
S=$R/summary.txt
{ date -u; cat .carry/build.txt; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; } > $S
B="bench --backward --backward-only --timing do-bench --json $R/ab.jsonl"
left() { echo $((LIMIT-SECONDS)); }
for pass in 1 2; do
  if [ $pass = 2 ]; then
    # (between the passes: the GPU check of every fused set, geometry included, at the lengths the plan uses)
    timeout $(( $(left) > 330 ? 150 : ($(left) > 140 ? $(left) - 40 : 100) )) $F check --fused-backward --filter bwd_fused --skip-decode > $T/check.log 2>&1
    echo "check rc=$? $(grep -ciE 'fail|mismatch' $T/check.log) fail-lines" >> $S
    tail -3 $T/check.log >> $S
    [ $(left) -lt 170 ] && break
  fi
  timeout 60 $F $B --d 64 --n 1024,4096 --causal 0 --bwd-configs "f:128,128,12,2@persistent_tiles=on,dq_sum_follows=off" >> $R/ab.log 2>&1; echo "d64nc $pass rc=$?" >> $S
  timeout 60 $F $B --d 128 --n 1024,4096 --causal 0 --bwd-configs "f:64,128,12,2@persistent_tiles=on,dq_sum_follows=off" >> $R/ab.log 2>&1; echo "d128nc $pass rc=$?" >> $S
  timeout 60 $F $B --d 64 --n 1024,4096,16384 --causal 1 --bwd-configs "fu:128,128,12,2@dq_sum_follows=off" >> $R/ab.log 2>&1; echo "d64c $pass rc=$?" >> $S
  timeout 60 $F $B --d 128 --n 1024,4096,16384 --causal 1 --bwd-configs "fu:64,128,12,2@dq_sum_follows=off" >> $R/ab.log 2>&1; echo "d128c $pass rc=$?" >> $S
  timeout 40 $F $B --d 64 --n 16384 --causal 0 --bwd-configs "f:128,128,12,2@dq_sum_follows=off" >> $R/ab.log 2>&1; echo "d64nc16k $pass rc=$?" >> $S
  timeout 40 $F $B --d 128 --n 16384 --causal 0 --bwd-configs "f:64,128,12,2@dq_sum_follows=off" >> $R/ab.log 2>&1; echo "d128nc16k $pass rc=$?" >> $S
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
if [ $(left) -gt 90 ]; then
  timeout $(( $(left) - 20 )) $cs --tool memcheck --print-limit 20 $F check --quick --fused-backward --skip-decode --filter bwd_fused_bf16_d64,bwd_fused_up_f16_d128 > $T/san_mem.log 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $T/san_mem.log | tail -1)" >> $S
fi
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $S; grep -hE "^ *(bwd|fwd)|fused|bwd:" $R/ab.log | head -60
