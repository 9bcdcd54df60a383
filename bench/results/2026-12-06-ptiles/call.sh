#!/bin/bash
# Session 28, call 1: persistent_tiles on the fused backward (bwd_fused, non-causal): correctness on the GPU,
# A/B against the default grid in one process (do_bench timing, two passes), then ncu stall samples of both
# at D64 N 1024.
set -u
LIMIT=${LIMIT:-560}
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T /tmp/fg-bin
xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen; chmod +x /tmp/fg-bin/flashgen
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
S=$R/summary.txt
{ date -u; cat .carry/build.txt; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; } > $S
for pass in 1 2; do
  for d in 64 128; do
    if [ $d = 64 ]; then cfg="f:128,128,12,2@persistent_tiles=on"; else cfg="f:64,128,12,2@persistent_tiles=on"; fi
    timeout 120 $F bench --d $d --n 1024,4096,16384 --causal 0 --backward --backward-only --timing do-bench --bwd-configs "$cfg" --json $R/ab.jsonl > $T/ab_${pass}_$d.log 2>&1
    echo "bench d$d pass $pass rc=$?" >> $S
  done
  timeout 100 $F bench --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096,16384 --causal 0 --backward --backward-only --timing do-bench --bwd-configs "f:64,128,12,2@persistent_tiles=on" --json $R/ab.jsonl > $T/ab_${pass}_gqa.log 2>&1
  echo "bench gqa pass $pass rc=$?" >> $S
done
cat $T/ab_*.log > $R/ab.log
timeout $(( LIMIT > 400 ? 170 : 90 )) $F check --quick --fused-backward --backward-schedule persistent_tiles=on --filter bwd_fused --skip-decode > $T/check.log 2>&1
echo "check rc=$? $(grep -ciE 'fail|mismatch' $T/check.log) fail-lines; $(grep -c ptile1 $T/check.log) ptile1 lines" >> $S
tail -3 $T/check.log >> $S
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
san() { local name=$1 tool=$2; shift 2; timeout 70 $cs --tool $tool --print-limit 20 $F check --quick --fused-backward --skip-decode --skip-geometry "$@" > $T/san_$name.log 2>&1
  echo "$name rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $T/san_$name.log | tail -1) $(grep -c ptile1 $T/san_$name.log) ptile1 lines" >> $S; }
left() { echo $((LIMIT-SECONDS)); }
[ $(left) -gt 200 ] && san mem_pt memcheck --backward-schedule persistent_tiles=on --filter bwd_fused_bf16_d64,bwd_fused_f16_d128
[ $(left) -gt 150 ] && san race_def racecheck --filter bwd_fused_bf16_d64_st1
[ $(left) -gt 80 ] && san race_pt racecheck --backward-schedule persistent_tiles=on --filter bwd_fused_bf16_d64_st1
left=$((LIMIT-SECONDS)); echo "ncu gets $left s" >> $S
if [ $left -gt 90 ]; then
  OUT=$T/n CALL_LIMIT=$left NCU_TIMEOUT=$(( (left-20)/2 )) NCU_RUNS="def|fa2_bwd_fused_bf16_d64_st1_bm128_bn128_w12_ns2_sm90a\$|--d 64 --n 1024 --causal 0 --backward --backward-only;pt|ptile1\$|--d 64 --n 1024 --causal 0 --backward --backward-only --bwd-configs f:128,128,12,2@persistent_tiles=on" bash bench/device.sh ncu > $T/ncu.log 2>&1
  cp $T/n/*.sass.csv.xz $R/ 2>/dev/null
fi
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $S; grep -hE "^ *(bwd|fwd)|fused|bwd:" $R/ab.log | head -40
