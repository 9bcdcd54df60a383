#!/usr/bin/env bash
# One device session: correctness first, then our timings, then the anchors, in one call so ratios hold.
# Run from the repository root on the GPU machine with the release binary (xz-compressed to fit the
# 64 MiB transfer), the GPU test binary, the prebuilt example (built alone: no LLVM) and anchor_bench.py in .carry/:
#   cargo build --release && cargo test --release -p flashgen-tests --test gpu --no-run
#   mkdir -p .carry && cp ../shared/anchors/anchor_bench.py .carry/
#   xz -T2 -c target/release/flashgen > .carry/flashgen.xz; xz -T2 -c target/release/deps/gpu-<hash> > .carry/gpu_test.xz
#   cargo build --release -p flashgen-prebuilt-example && xz -c target/release/flashgen-prebuilt-example > .carry/prebuilt.xz
# Steps can be left out: BENCH=0, AUTOTUNE=0, SANITIZE=0, ANCHORS=0, MMA_SYNC=0; TUNE_KERNELS=fwd tunes the forward
# only. Everything at once runs past the device tool's 10-minute limit, so run it as two calls:
# PART=1 (correctness: first call, checks, Triton parity, prebuilt, GPU tests, sanitizers, the mma.sync
# path) and PART=2 (autotune, bench, anchors: the timings side by side); bench/device_short.sh is quicker.
# Writes everything under $OUT; prints short tables last.
set -u -o pipefail
source bench/device_common.sh
# Tile shapes beyond the defaults: BLOCK_N > BLOCK_M (the seed's failing case), 2 m16 tiles per warp,
# BLOCK_N 16/32/128, 2 and 4 stages, both dtypes.
# The same for the wgmma forward ("w:"): one warpgroup, BLOCK_N 16/32/128, the 3- and 4-stage overlap.
EXTRA_SPECS=${EXTRA_SPECS:-"bf16,64,64,128,3,4,3;bf16,128,64,32,1,4,4;bf16,64,128,32,3,4,4;fp16,128,64,64,3,4,3;fp16,64,128,128,1,8,2;bf16,128,128,16,3,8,2;fp16,64,64,128,3,4,2;w:bf16,128,64,32,3,4,3;w:fp16,64,128,128,1,8,2;w:bf16,128,128,64,1,8,4;w:bf16,64,64,16,3,4,2;w:fp16,128,128,32,3,8,3"}
BENCH_CONFIGS=${BENCH_CONFIGS:-"w:128,64,8,2;w:128,128,8,2;w:64,64,4,3;w:128,64,8,3;128,64,4,3"}
PART=${PART:-all}
if [ "$PART" != 2 ]; then
first_calls
echo "== check"; $B check --specs "$EXTRA_SPECS" --json "$OUT/check.jsonl" --parity-dir /tmp/parity 2>&1 | tee -a "$OUT/extras.log" | grep -E "^backward|passed, |FAIL|error" | tail -30
echo "== Triton parity (seed kernel, same inputs)"; PYTHONUNBUFFERED=1 timeout 300 python3 bench/triton_parity.py /tmp/parity .carry/anchor_bench.py 2>&1 | tee "$OUT/parity.jsonl" | tail -9
if [ -x $BIN/gpu_test ]; then echo "== GPU integration tests (cargo test --ignored)"; $BIN/gpu_test --ignored 2>&1 | tee -a "$OUT/extras.log" | grep -E "^test |test result"; fi
if [ "${MMA_SYNC:-1}" = 1 ]; then mma_sync_check; fi
if [ "${SANITIZE:-1}" = 1 ]; then
  echo "== compute-sanitizer memcheck (default specs, ragged lengths)"
  timeout ${SANITIZE_TIMEOUT:-240} compute-sanitizer --tool memcheck $B check --quick > /tmp/sanitizer.log 2>&1; echo "memcheck rc=$?" | tee -a "$OUT/extras.log"; grep -E "passed|ERROR SUMMARY" /tmp/sanitizer.log | tail -2 | tee -a "$OUT/extras.log"
  echo "== compute-sanitizer racecheck (bf16 default specs)"
  timeout ${SANITIZE_TIMEOUT:-240} compute-sanitizer --tool racecheck $B check --quick --filter bf16_d64 > /tmp/racecheck.log 2>&1; echo "racecheck rc=$?" | tee -a "$OUT/extras.log"; grep -E "passed|RACECHECK SUMMARY|ERROR SUMMARY" /tmp/racecheck.log | tail -2 | tee -a "$OUT/extras.log"
fi
fi
if [ "$PART" != 1 ]; then
if [ "${AUTOTUNE:-1}" = 1 ]; then
  FLASHGEN_PRINT_AUTOTUNING=1 autotune_cold --out /tmp/tuning.json
  $B emit --tuned /tmp/tuning.json --out-dir /tmp/tuned-kernels > /dev/null && echo "emit --tuned: $(ls /tmp/tuned-kernels/*.ptx | wc -l) tuned kernels generated"
fi
if [ "${BENCH:-1}" = 1 ]; then echo "== bench"; $B bench --mma-sync ${TUNED_FLAG:---tuned} ${BACKWARD_FLAG:---backward} --bwd-configs "${BWD_CONFIGS:-;}" --reps ${REPS:-15} --configs "$BENCH_CONFIGS" --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"; fi
if [ "${ANCHORS:-1}" = 1 ]; then
  echo "== anchors"; PYTHONUNBUFFERED=1 OUT=$OUT timeout ${ANCHOR_TIMEOUT:-330} python3 .carry/anchor_bench.py ${ANCHOR_ARGS:-} > "$OUT/anchors.log" 2>&1; echo "anchors rc=$?"
fi
fi
rm -f "$OUT/anchors.json"   # the same rows as anchors.log; at most 8 files come back
echo "== tables"; grep -A200 "=== flashgen" "$OUT/bench.log" 2>/dev/null; grep -A100 "=== table" "$OUT/anchors.log" 2>/dev/null | grep -v efficient
