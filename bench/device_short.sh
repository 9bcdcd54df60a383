#!/usr/bin/env bash
# A short device session for a change that needs GPU confirmation but not the whole of device_run.sh:
# the quick correctness suite (forward and backward), the GPU tests, autotune from a cold cache, the bench
# with tuned configs and the backward, compute-sanitizer on the backward defaults, and the anchors on
# ANCHOR_N only; the mma.sync path (FLASHGEN_WGMMA=0) checked and benched beside the defaults (wgmma on sm_90a).
# Same .carry/ as device_run.sh; writes under $OUT; prints short tables last.
set -u -o pipefail
source bench/device_common.sh
echo "== check --quick"; $B check --quick --json "$OUT/check.jsonl" 2>&1 | tee "$OUT/extras.log" | grep -E "^backward|passed, |FAIL|error" | tail -20
echo "== GPU tests"; $BIN/gpu_test --ignored 2>&1 | tee -a "$OUT/extras.log" | grep -E "^test |test result"
echo "== autotune (cold)"; rm -rf /tmp/flashgen-tune-cache
FLASHGEN_CACHE_DIR=/tmp/flashgen-tune-cache $B autotune --kernel ${TUNE_KERNELS:-fwd,bwd_dkdv,bwd_dq} > /tmp/autotune.log 2>&1; echo "autotune rc=$?"
grep '"kind": "autotune"' /tmp/autotune.log | tee "$OUT/runtime.jsonl"; cat /tmp/autotune.log >> "$OUT/extras.log"
cp -r /tmp/flashgen-tune-cache/autotune "$FLASHGEN_CACHE_DIR/"
mma_sync_check
echo "== bench"; $B bench --mma-sync --tuned --backward --reps ${REPS:-6} --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
echo "== memcheck / racecheck (backward defaults)"
timeout 120 compute-sanitizer --tool memcheck $B check --quick --filter dkdv_bf16 > /tmp/mc.log 2>&1; echo "memcheck rc=$?" | tee -a "$OUT/extras.log"; grep -E "passed, |ERROR SUMMARY" /tmp/mc.log | tail -2 | tee -a "$OUT/extras.log"
timeout 120 compute-sanitizer --tool racecheck $B check --quick --filter dkdv_bf16_d64 > /tmp/rc.log 2>&1; echo "racecheck rc=$?" | tee -a "$OUT/extras.log"; grep -E "passed, |RACECHECK SUMMARY" /tmp/rc.log | tail -2 | tee -a "$OUT/extras.log"
echo "== anchors (N=${ANCHOR_N:=16384})"; PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=$ANCHOR_N timeout 200 python3 .carry/anchor_bench.py > "$OUT/anchors.log" 2>&1; echo "anchors rc=$?"; rm -f "$OUT/anchors.json"
echo "== tables"; grep -A40 "=== flashgen" "$OUT/bench.log"; grep -A40 "=== table" "$OUT/anchors.log" | grep -v efficient
