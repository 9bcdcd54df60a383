#!/usr/bin/env bash
# fwd_ws_persistent's first device call (persistent-v1): correctness first (every check length, both stages,
# HEAD_DIM 64 and 128; memcheck on D64), then the persistent kernel against fwd_ws and fwd_wgmma at HEAD_DIM
# 64 (and 128 at N = 1024, 4096) in one call, then the anchors; writes under $OUT.
set -u -o pipefail
source bench/device_common.sh
SPECS=${SPECS:-"wsp:bf16,64,192,128,1,16,4;wsp:bf16,64,192,128,3,16,4;wsp:bf16,64,128,128,1,12,3;wsp:bf16,64,128,128,3,12,4;wsp:bf16,128,128,64,1,12,3;wsp:bf16,128,128,64,3,12,3"}
FILTER=${FILTER:-fwd_ws_persistent}
echo "== check fwd_ws_persistent (full lengths)"; timeout 150 $B check --forward-only --filter "$FILTER" --specs "$SPECS" --json $OUT/check.jsonl > $OUT/check.log 2>&1; echo "check rc=$?"; grep -E "passed, |FAIL|error" $OUT/check.log | tail -6
echo "== memcheck fwd_ws_persistent D64"; timeout 120 compute-sanitizer --tool memcheck $B check --quick --forward-only --filter ${SAN_FILTER:-fwd_ws_persistent_bf16_d64} --specs "$SPECS" > /tmp/san.log 2>&1; echo "memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" /tmp/san.log | tail -2
CFG64=${CFG64:-"ws:192,128,16,4;wsp:192,128,16,4;wsp:128,128,12,3;wsp:128,128,12,4;w:128,64,8,2"}
timeout 150 $B bench --d 64 --n ${BENCH_N:-1024,2048,4096,16384} --reps 10 --configs "$CFG64" --json $OUT/bench.jsonl > $OUT/bench.log 2>&1; echo "bench d64 rc=$?"
[ -n "${CFG128-x}" ] && timeout 90 $B bench --d 128 --n 1024,4096 --reps 10 --configs "${CFG128:-ws:128,128,12,3;wsp:128,64,12,3;wsp:128,64,12,4}" --json $OUT/bench128.jsonl > $OUT/bench128.log 2>&1; echo "bench d128 rc=$?"
PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=1024,4096,16384 ANCHOR_D=${ANCHOR_D:-64,128} timeout 200 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json
grep -A60 "=== flashgen" $OUT/bench.log | grep "^fwd"; grep -A30 "=== flashgen" $OUT/bench128.log | grep "^fwd"; grep -A40 "=== table" $OUT/anchors.log | grep "^fwd" | grep -v efficient
