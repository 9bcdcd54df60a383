#!/usr/bin/env bash
# One table row, end to end, on a merged build (.carry/flashgen.xz; .carry/gpu_test.xz when carried): the
# forward checks of CHECK_FILTER's defaults at every length and memcheck over their quick suite, the GPU
# integration tests, then ours / the anchors / ours on ROW_D and ROW_N (do_bench both), and last, when
# NCU_RUNS is set, device_ncu.sh's profile. At most 8 files under $OUT: env.txt, check.jsonl, gpu_tests.log,
# ours1.jsonl, ours2.jsonl, anchors.log, and ncu's two. WARMUP_MS as in device_table.sh (default 0).
set -u -o pipefail
source bench/device_common.sh
timeout 150 $B check --forward-only --filter ${CHECK_FILTER:-fwd_ws} --json $OUT/check.jsonl > /tmp/check.log 2>&1; echo "check rc=$?"; grep -E "passed, |FAIL" /tmp/check.log | tail -2
timeout 120 compute-sanitizer --tool memcheck $B check --quick --forward-only --filter ${CHECK_FILTER:-fwd_ws} > /tmp/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" /tmp/memcheck.log | tail -2
if [ -x $BIN/gpu_test ]; then
  timeout 150 $BIN/gpu_test --ignored > $OUT/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "test result|FAILED|panicked" $OUT/gpu_tests.log | head -5
fi
for p in 1 2; do
  timeout 60 $B bench --d ${ROW_D:-64} --n ${ROW_N:-1024} --timing do-bench --warmup-ms ${WARMUP_MS:-0} --json $OUT/ours$p.jsonl > /tmp/ours$p.log 2>&1; echo "ours pass $p rc=$?"
  [ $p = 1 ] && { PYTHONUNBUFFERED=1 ANCHOR_D=${ROW_D:-64} ANCHOR_N=${ROW_N:-1024} OUT=$OUT timeout 150 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json; }
done
python3 bench/ratios.py "$OUT"
[ -n "${NCU_RUNS:-}" ] && bash bench/device_ncu.sh
exit 0
