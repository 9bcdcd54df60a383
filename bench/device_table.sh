#!/usr/bin/env bash
# The whole table on the anchors' own timer (next session's final call): every default, forward and
# backward, timed like triton.testing.do_bench (`bench --timing do-bench`), then the anchors' whole table
# (anchor_bench.py, do_bench), then ours again, so each ratio is bracketed by two passes of ours in one call.
# WARMUP_MS > 0 launches each of our rows back to back, untimed, for that long first. Default 0 (do_bench's own
# steps only, table-v3's method): 300 ms of back-to-back launches hold the chip at its 700 W cap (1830 MHz)
# and the causal rows timed after read 8-10% low with a wide spread (warmup-ab), while each Triton row's
# autotuner warms up the do_bench way, with a memset between launches.
# Expects .carry/flashgen.xz and .carry/anchor_bench.py; CHECK_FILTER adds checks first (below; CHECK_TIMEOUT
# seconds each, CHECK_ONLY=1 stops after them). Under $OUT; a table last (ours min-max / anchor).
set -u -o pipefail
source bench/device_common.sh
# with CHECK_FILTER (e.g. fwd_ws_persistent): first the forward checks of those defaults at every length and
# memcheck over their quick suite
if [ -n "${CHECK_FILTER:-}" ]; then
  timeout ${CHECK_TIMEOUT:-90} $B check --forward-only --filter $CHECK_FILTER --json $OUT/check.jsonl > $OUT/check.log 2>&1; echo "check $CHECK_FILTER rc=$?"; grep -E "passed, |FAIL" $OUT/check.log | tail -2
  timeout ${CHECK_TIMEOUT:-90} compute-sanitizer --tool memcheck $B check --quick --forward-only --filter $CHECK_FILTER > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" $OUT/memcheck.log | tail -2
  # with CHECK_ONLY=1 the call ends here (the checks of many defaults and the table do not fit one call)
  [ "${CHECK_ONLY:-0}" = 1 ] && exit 0
fi
for p in 1 2; do
  # the second pass only if it can finish inside the call's 600 s (a pass of ours takes ~1-2 min)
  [ $p = 2 ] && [ $SECONDS -gt ${PASS2_BEFORE:-420} ] && { echo "ours pass 2 skipped: ${SECONDS} s used"; break; }
  timeout 200 $B bench --d 64,128 --n 1024,4096,16384 --backward --timing do-bench --warmup-ms ${WARMUP_MS:-0} --json $OUT/ours$p.jsonl > $OUT/ours$p.log 2>&1; echo "ours pass $p rc=$?"
  [ $p = 1 ] && { PYTHONUNBUFFERED=1 OUT=$OUT timeout 250 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json; }
done
python3 bench/ratios.py "$OUT"
