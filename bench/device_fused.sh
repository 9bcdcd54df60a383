#!/usr/bin/env bash
# Device session for the fused backward (bwd_pre + bwd_fused, opt-in: FLASHGEN_BACKWARD=fused): correctness
# first (the quick backward suite on the fused kernels only, the GPU test with its bit-for-bit rerun),
# compute-sanitizer (SANITIZE=0 leaves it out), then the backward timed beside the three-kernel default
# (bench --backward --fused; BENCH_D, BENCH_N; BWD_CONFIGS, e.g. "f:64,128,12,3;fa:64,128,12,3"; DQ_CHAINS,
# bwd_fused with more chains of dQ additions, e.g. "2,4") and the
# anchors (ANCHOR_N) in the same call.
# Same .carry/ as device_run.sh; writes under $OUT; prints short tables last.
set -u -o pipefail
source bench/device_common.sh
echo "== check --quick, bwd_fused only"
timeout ${CHECK_TIMEOUT:-300} $B check --quick --fused-backward --filter bwd_fused --json "$OUT/check.jsonl" > /tmp/check.log 2>&1; echo "check rc=$?"
cat /tmp/check.log >> "$OUT/extras.log"; grep -E "^backward|passed, |FAIL|error" /tmp/check.log | tail -12
echo "== GPU test (fused)"; timeout 300 $BIN/gpu_test --ignored fused_backward 2>&1 | tee -a "$OUT/extras.log" | grep -E "^test |test result|panicked"
if [ "${SANITIZE:-1}" = 1 ]; then
  echo "== memcheck / racecheck (bwd_fused)"
  sanitize "memcheck bwd_fused_bf16_d128 --fused-backward" "racecheck bwd_fused_bf16_d64_st3 --fused-backward"
fi
if [ "${TUNE:-1}" = 1 ]; then
  # the fused backward's configs (one or two warpgroups at HEAD_DIM 128, 2-4 stages) from a cold cache
  TUNE_KERNELS=bwd_fused autotune_cold --d 64,128 --n 4096,16384 --causal 0,1
fi
echo "== bench backward: default (three kernels) and fused"
timeout ${BENCH_TIMEOUT:-360} $B bench --backward --backward-only --fused ${DQ_CHAINS:+--dq-chains "$DQ_CHAINS"} --bwd-configs "${BWD_CONFIGS-f:64,64,8,2;fa:64,64,8,2;f:64,128,12,3}" --d ${BENCH_D:-64,128} --n ${BENCH_N:-1024,4096,16384} --reps ${REPS:-6} --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
echo "== anchors (N=${ANCHOR_N:=4096,16384})"; PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=$ANCHOR_N timeout ${ANCHOR_TIMEOUT:-240} python3 .carry/anchor_bench.py > "$OUT/anchors.log" 2>&1; echo "anchors rc=$?"; rm -f "$OUT/anchors.json"
echo "== tables"; grep -A60 "=== flashgen" "$OUT/bench.log" | grep -E "bwd|===|N " ; grep -A40 "=== table" "$OUT/anchors.log" | grep -v efficient
