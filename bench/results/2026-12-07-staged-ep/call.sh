#!/bin/bash
# Session 31, call 3: Schedule::staged_epilogue (dK/dV through the K/V tiles, 16-byte stores) against the
# default of each row, one process per row group (do_bench timing), two passes; the GPU check of every
# fused set with the switch between them; memcheck over two staged sets.
set -u
LIMIT=${LIMIT:-560}
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T /tmp/fg-bin
xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen; chmod +x /tmp/fg-bin/flashgen
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
S=$R/summary.txt
{ date -u; cat .carry/build.txt; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; } > $S
B="bench --backward --backward-only --timing do-bench"
left() { echo $((LIMIT-SECONDS)); }
for pass in 1 2; do
  if [ $pass = 2 ]; then
    timeout $(( $(left) > 330 ? 150 : ($(left) > 140 ? $(left) - 40 : 100) )) $F check --fused-backward --filter bwd_fused --skip-decode \
      --backward-schedule staged_epilogue=on > $T/check.log 2>&1
    echo "check rc=$? $(grep -ciE 'fail|mismatch' $T/check.log) fail-lines $(grep -c '_sep1' $T/check.log) staged-lines" >> $S
    tail -3 $T/check.log >> $S
    [ $(left) -lt 170 ] && break
  fi
  timeout 50 $F $B --d 64 --n 1024,4096 --causal 0 --bwd-configs "f:128,128,12,2@persistent_tiles=on,staged_epilogue=on" >> $R/ab.log 2>&1; echo "d64nc $pass rc=$?" >> $S
  timeout 50 $F $B --d 128 --n 1024,4096 --causal 0 --bwd-configs "f:64,128,12,2@persistent_tiles=on,staged_epilogue=on" >> $R/ab.log 2>&1; echo "d128nc $pass rc=$?" >> $S
  timeout 60 $F $B --d 64 --n 1024,4096,16384 --causal 1 --bwd-configs "fu:128,128,12,2@staged_epilogue=on" >> $R/ab.log 2>&1; echo "d64c $pass rc=$?" >> $S
  timeout 60 $F $B --d 128 --n 1024,4096,16384 --causal 1 --bwd-configs "fu:64,128,12,2@staged_epilogue=on" >> $R/ab.log 2>&1; echo "d128c $pass rc=$?" >> $S
  timeout 40 $F $B --d 64 --n 16384 --causal 0 --bwd-configs "f:128,128,12,2@staged_epilogue=on" >> $R/ab.log 2>&1; echo "d64nc16k $pass rc=$?" >> $S
  timeout 40 $F $B --d 128 --n 16384 --causal 0 --bwd-configs "f:64,128,12,2@staged_epilogue=on" >> $R/ab.log 2>&1; echo "d128nc16k $pass rc=$?" >> $S
  timeout 60 $F $B --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096,16384 --causal 1 --bwd-configs "fu:64,128,12,2@staged_epilogue=on" >> $R/ab.log 2>&1; echo "gqac $pass rc=$?" >> $S
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
if [ $(left) -gt 90 ]; then
  timeout $(( $(left) - 20 )) $cs --tool memcheck --print-limit 20 $F check --quick --fused-backward --skip-decode --filter bwd_fused_up_bf16_d128,bwd_fused_f16_d64 \
    --backward-schedule staged_epilogue=on > $T/san_mem.log 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $T/san_mem.log | tail -1)" >> $S
fi
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $S; grep -hE "^bwd flashgen" $R/ab.log | head -80
