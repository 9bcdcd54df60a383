#!/usr/bin/env bash
# A focused device session for a change to the Hopper kernels (the sm_90a defaults): the quick check
# (forward at 2 and 3 stages, backward) in its own process; on a failure, the bf16 forwards' inputs and
# outputs (N = 1024) go through bench/wgmma_diag.py, which says where the error lives; when everything
# passes, the bench times wgmma vs mma.sync (forward and backward) and compute-sanitizer memchecks the
# wgmma kernels. About 2-4 minutes. (First written for the first run of the wgmma kernels.)
set -u -o pipefail
source bench/device_common.sh
echo "== check --quick"
timeout 300 $B check --quick --json "$OUT/check_wgmma.jsonl" > "$OUT/check_wgmma.log" 2>&1; rc=$?
grep -vE '^FAIL' "$OUT/check_wgmma.log" | tail -30; grep -c '^FAIL' "$OUT/check_wgmma.log"; grep '^FAIL' "$OUT/check_wgmma.log" | head -20
echo "wgmma check rc=$rc"
if [ $rc != 0 ]; then
  echo "== diagnosis (bf16 wgmma forwards, N=1024; bench/wgmma_diag.py)"
  timeout 120 $B check --quick --forward-only --filter "${DUMP_FILTER:-bf16}" --parity-dir /tmp/dump > /tmp/dump.log 2>&1; echo "dump rc=$?"
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/wgmma_diag.py /tmp/dump 2>&1 | tee "$OUT/diag.txt"
else
  echo "== bench default (wgmma) vs mma.sync"
  $B bench --mma-sync --backward --reps ${REPS:-6} --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  timeout 150 compute-sanitizer --tool memcheck $B check --quick --filter bf16_d128 > /tmp/mcw.log 2>&1; echo "wgmma memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" /tmp/mcw.log | tail -2
  grep -A40 "=== flashgen" "$OUT/bench.log"
fi
