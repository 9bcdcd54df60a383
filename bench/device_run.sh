#!/usr/bin/env bash
# One device session: correctness first, then our timings, then the anchors, in one call so ratios hold.
# Run from the repository root on the GPU machine with the release binary and anchor_bench.py in .carry/.
# Writes everything under $OUT; prints short tables last.
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=./.carry/flashgen
EXTRA_SPECS=${EXTRA_SPECS:-"bf16,64,64,128,3,4,3;bf16,128,64,128,1,4,2;bf16,64,128,32,3,4,4;fp16,128,64,64,3,4,3;bf16,128,128,128,3,8,2;fp16,64,128,64,1,4,2"}
BENCH_CONFIGS=${BENCH_CONFIGS:-"128,128,8,2;64,64,4,3;128,64,4,3;128,32,8,4;64,128,4,2"}
{ date -u; git rev-parse HEAD 2>/dev/null; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } | tee "$OUT/env.txt"
echo "== check"; $B check --specs "$EXTRA_SPECS" --json "$OUT/check.jsonl" 2>&1 | tee "$OUT/check.log" | tail -25
echo "== bench"; $B bench --configs "$BENCH_CONFIGS" --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
if [ "${ANCHORS:-1}" = 1 ]; then
  echo "== anchors"; PYTHONUNBUFFERED=1 OUT=$OUT timeout ${ANCHOR_TIMEOUT:-330} python3 .carry/anchor_bench.py ${ANCHOR_ARGS:-} > "$OUT/anchors.log" 2>&1; echo "anchors rc=$?"
fi
if [ "${SANITIZE:-0}" = 1 ]; then
  echo "== compute-sanitizer"; timeout 120 compute-sanitizer --tool memcheck $B check --quick > "$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
fi
echo "== tables"; grep -A100 "=== flashgen" "$OUT/bench.log"; grep -A100 "=== table" "$OUT/anchors.log" 2>/dev/null | grep fwd
