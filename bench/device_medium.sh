#!/usr/bin/env bash
# The persistent forward to 4096 tokens (medium-v1), one call: GPU tests, the forward quick suite over the
# default set (the new medium-length defaults included), every default forward and backward beside the
# anchors' whole table, then memcheck and every check length on the persistent defaults, then fwd_ws (the
# old default) beside the new one at HEAD_DIM 64, N 2048 / 4096. Logs in $OUT/logs.tgz; tables last.
set -u -o pipefail
source bench/device_common.sh
mkdir -p $OUT/logs; L=$OUT/logs
timeout 60 $BIN/gpu_test --ignored > $L/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "test result" $L/gpu_tests.log
timeout 70 $B check --quick --forward-only --json $OUT/check.jsonl > $L/check.log 2>&1; echo "check rc=$?"; grep -E "passed, |FAIL" $L/check.log | tail -2
timeout 130 $B bench --d 64,128 --n 1024,4096,16384 --reps 10 ${BACKWARD---backward} --json $OUT/bench.jsonl > $L/bench.log 2>&1; echo "bench rc=$?"
PYTHONUNBUFFERED=1 OUT=$OUT timeout 200 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json
timeout 70 compute-sanitizer --tool memcheck $B check --quick --forward-only --filter fwd_ws_persistent > $L/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" $L/memcheck.log | tail -2
timeout 50 $B check --forward-only --filter fwd_ws_persistent --json $OUT/check_wsp.jsonl > $L/check_wsp.log 2>&1; echo "check wsp rc=$?"; grep -E "passed, |FAIL" $L/check_wsp.log | tail -2
timeout 40 $B bench --d 64 --n 2048,4096 --reps 10 --configs "ws:192,128,16,4" --json $OUT/cfg.jsonl > $L/cfg.log 2>&1; echo "configs rc=$?"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
grep -h -A80 "=== flashgen" <(tar xzOf $OUT/logs.tgz logs/bench.log) <(tar xzOf $OUT/logs.tgz logs/cfg.log 2>/dev/null) | grep -E "^(fwd|bwd)"
grep -A60 "=== table" $OUT/anchors.log | grep -E "^(fwd|bwd)" | grep -v efficient
