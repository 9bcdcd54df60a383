#!/usr/bin/env bash
# A short device session for a change that needs GPU confirmation but not the whole of device_run.sh:
# the quick correctness suite (forward and backward, every Hopper forward variant), autotune from a cold
# cache, the bench with tuned configs and the backward, the anchors (ANCHOR_N) in the same call,
# compute-sanitizer on the warp-specialized forward and the backward defaults, the GPU tests (SANITIZE=0,
# GPU_TESTS=0 leave them out); with
# MMA_SYNC=1 also the mma.sync path (FLASHGEN_WGMMA=0) checked and benched beside the defaults; TUNE=0
# leaves out the autotune (and bench's --tuned); CHECK_FLAGS and BENCH_FLAGS add flags (e.g.
# --fused-backward, --fused: the other backward paths beside the default).
# Same .carry/ as device_run.sh; writes under $OUT; prints short tables last.
set -u -o pipefail
source bench/device_common.sh
echo "== check --quick ${CHECK_FLAGS:-}"; $B check --quick ${CHECK_FLAGS:-} --json "$OUT/check.jsonl" 2>&1 | tee "$OUT/extras.log" | grep -E "^backward|passed, |FAIL|error" | tail -20
TUNED=""; [ "${TUNE:-1}" = 1 ] && { autotune_cold; TUNED="--tuned"; }
MS=""; [ "${MMA_SYNC:-0}" = 1 ] && { mma_sync_check; MS="--mma-sync"; }
echo "== bench"; $B bench $MS $TUNED --backward ${BENCH_FLAGS:-} --reps ${REPS:-6} --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
echo "== anchors (N=${ANCHOR_N:=16384})"; PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=$ANCHOR_N timeout ${ANCHOR_TIMEOUT:-200} python3 .carry/anchor_bench.py > "$OUT/anchors.log" 2>&1; echo "anchors rc=$?"; rm -f "$OUT/anchors.json"
if [ "${SANITIZE:-1}" = 1 ]; then
  echo "== memcheck / racecheck (fwd_ws: ping-pong on two consumers, three consumers; backward defaults)"
  sanitize "memcheck fwd_ws_bf16_d128 --forward-only" "racecheck fwd_ws_bf16_d128_st1 --forward-only" "memcheck fwd_ws_bf16_d64_st3 --forward-only" "racecheck fwd_ws_bf16_d64_st3 --forward-only" "memcheck dkdv_wgmma_bf16" "racecheck dkdv_wgmma_bf16_d64"
fi
[ "${GPU_TESTS:-1}" = 1 ] && { echo "== GPU tests"; $BIN/gpu_test --ignored 2>&1 | tee -a "$OUT/extras.log" | grep -E "^test |test result"; }
echo "== tables"; grep -A40 "=== flashgen" "$OUT/bench.log"; grep -A40 "=== table" "$OUT/anchors.log" | grep -v efficient
