#!/usr/bin/env bash
# Dynamic tiles A/B (next session's first call): A = .carry/flashgen.xz (main), B = .carry/flashgen_b.xz
# (wip/dynamic-tiles: the persistent forward's tiles from a global counter, published through shared memory).
# B's GPU tests (.carry/gpu_test_b.xz) and forward quick suite, memcheck on the persistent defaults, then the
# D64 forward defaults and the persistent configs the counter admits, A B A B, then Triton's D64 rows.
set -u -o pipefail
source bench/device_common.sh
BB=$BIN/flashgen_b
[ -x $BIN/gpu_test_b ] && { echo "== B: GPU tests"; timeout 150 $BIN/gpu_test_b --ignored > $OUT/gpu_tests_b.log 2>&1; echo "rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_tests_b.log | head -5; }
echo "== B: check --quick --forward-only"; timeout 90 $BB check --quick --forward-only --json $OUT/check_b.jsonl > $OUT/check_b.log 2>&1; echo "check rc=$?"; grep -E "passed, |FAIL" $OUT/check_b.log | tail -2
echo "== B: memcheck persistent"; timeout 120 compute-sanitizer --tool memcheck $BB check --quick --forward-only --filter fwd_ws_persistent > /tmp/san.log 2>&1; echo "rc=$?"; grep -E "passed, |ERROR SUMMARY" /tmp/san.log | tail -2
CFG=${CFG:-"ws:192,128,16,4;wsp:192,128,16,4;wsp:256,64,20,4"}
for r in 1 2; do for v in a b; do bin=$B; [ $v = b ] && bin=$BB; timeout 120 $bin bench --d 64 --n 1024,2048,4096,16384 --reps 10 --configs "$CFG" --json $OUT/bench_${v}$r.jsonl > $OUT/bench_${v}$r.log 2>&1; echo "bench $v$r rc=$?"; done; done
PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=1024,4096,16384 ANCHOR_D=64 timeout 150 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json
for f in a1 b1 a2 b2; do echo "-- $f"; grep -A40 "=== flashgen" $OUT/bench_$f.log | grep "^fwd"; done; grep -A40 "=== table" $OUT/anchors.log | grep "^fwd triton"
