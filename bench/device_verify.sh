#!/usr/bin/env bash
# After a change to how kernels are loaded or to the defaults: the first call (cold, then warm: the second
# process must not run LLVM), the prebuilt path, autotune from a cold cache (every key's seconds; the bar is
# 2 s), compute-sanitizer on the forward defaults (ping-pong on two consumers, three consumers) and the
# backward, the GPU tests; with BENCH_D and BENCH_CONFIGS also a bench of those configs first.
# Same .carry/ as device_run.sh; writes under $OUT.
set -u -o pipefail
source bench/device_common.sh
if [ -n "${BENCH_CONFIGS:-}" ]; then
  echo "== bench"; $B bench --d ${BENCH_D:-64,128} --configs "$BENCH_CONFIGS" --reps ${REPS:-6} --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  grep -A80 "=== flashgen" "$OUT/bench.log" | cut -c1-120
fi
first_calls
autotune_cold
echo "== memcheck / racecheck"
sanitize "memcheck fwd_ws_bf16_d128 --forward-only" "racecheck fwd_ws_bf16_d128_st1 --forward-only" "memcheck fwd_ws_bf16_d64 --forward-only" "racecheck fwd_ws_bf16_d64_st3 --forward-only" "memcheck dkdv_wgmma_bf16" "racecheck dkdv_wgmma_bf16_d64"
echo "== GPU tests"; $BIN/gpu_test --ignored 2>&1 | tee -a "$OUT/extras.log" | grep -E "^test |test result"
