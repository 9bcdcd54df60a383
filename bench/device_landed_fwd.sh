#!/usr/bin/env bash
# The landed forward defaults in two device calls (persistent-landed): PART=check runs the GPU tests (the
# persistent kernel bit for bit against fwd_ws), the quick suite over the whole default set, the persistent
# defaults at every check length and memcheck on them; PART=bench times every default, forward and backward,
# with the old short-sequence defaults at HEAD_DIM 64 beside them, then the anchors' whole table. Under $OUT.
set -u -o pipefail
source bench/device_common.sh
if [ "${PART:-check}" = check ]; then
  echo "== GPU tests"; timeout 200 $BIN/gpu_test --ignored > $OUT/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "^test |test result" $OUT/gpu_tests.log
  echo "== check --quick (default set)"; timeout 200 $B check --quick ${CHECK_FLAGS:-} --json $OUT/check.jsonl > $OUT/check.log 2>&1; echo "check rc=$?"; grep -E "passed, |FAIL|error" $OUT/check.log | tail -4
  echo "== check fwd_ws_persistent defaults, every length"; timeout 100 $B check --forward-only --filter fwd_ws_persistent --json $OUT/check_wsp.jsonl > $OUT/check_wsp.log 2>&1; echo "check rc=$?"; grep -E "passed, |FAIL|error" $OUT/check_wsp.log | tail -3
  echo "== memcheck fwd_ws_persistent defaults"; timeout 150 compute-sanitizer --tool memcheck $B check --quick --forward-only --filter fwd_ws_persistent > /tmp/san.log 2>&1; echo "memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" /tmp/san.log | tail -2 | tee $OUT/memcheck.txt
else
  timeout 240 $B bench --d 64,128 --n 1024,4096,16384 --reps 10 --backward --configs "${CONFIGS:-ws:192,128,16,4;w:128,64,8,2}" --json $OUT/bench.jsonl > $OUT/bench.log 2>&1; echo "bench rc=$?"
  PYTHONUNBUFFERED=1 OUT=$OUT timeout 300 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json
  grep -A80 "=== flashgen" $OUT/bench.log | grep -E "^(fwd|bwd)"; grep -A60 "=== table" $OUT/anchors.log | grep -E "^(fwd|bwd)" | grep -v efficient
fi
