#!/usr/bin/env bash
# Forward A/B of two builds in one device call (ghost-ab): .carry/flashgen.xz (A) and .carry/flashgen_b.xz (B).
# Correctness of B first (fwd_ws at every check length, memcheck on fwd_ws D64, whose ragged lengths leave
# consumers idle), then both builds timed at HEAD_DIM 64, then the D64 anchors; writes under $OUT.
set -u -o pipefail
source bench/device_common.sh
BB=$BIN/flashgen_b
echo "== B: check (full lengths), fwd_ws only"; timeout 90 $BB check --forward-only --filter fwd_ws --json $OUT/check_b.jsonl > $OUT/check_b.log 2>&1; echo "check rc=$?"; grep -E "passed, |FAIL|error" $OUT/check_b.log | tail -4
echo "== B: memcheck fwd_ws D64 (ghosts at N = 1, 77, 128, 1000)"; timeout 90 compute-sanitizer --tool memcheck $BB check --quick --forward-only --filter fwd_ws_bf16_d64 > /tmp/san.log 2>&1; echo "memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" /tmp/san.log | tail -2
for v in a b; do bin=$B; [ $v = b ] && bin=$BB; timeout 90 $bin bench --d 64 --n 1024,4096,16384 --reps 10 --json $OUT/bench_$v.jsonl > $OUT/bench_$v.log 2>&1; echo "bench $v rc=$?"; done
PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=1024,4096,16384 ANCHOR_D=64 timeout 120 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json
for v in a b; do echo "-- $v"; grep -A20 "=== flashgen" $OUT/bench_$v.log | grep "^fwd"; done; grep -A40 "=== table" $OUT/anchors.log | grep "^fwd" | grep -v efficient
