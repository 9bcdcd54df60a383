#!/usr/bin/env bash
# Device session for the warp-specialized forward (fwd_ws): correctness of its tile shapes against the f64
# reference (quick suite, both dtypes, HEAD_DIM 64/128, causal or not), compute-sanitizer, then the bench of
# fwd_ws configs beside the default (fwd_wgmma) and the anchors in the same call.
# Env: WS_CONFIGS (bench), WS_EXTRA (checked bf16 tiles), ANCHOR_N, REPS. Same .carry/ as device_run.sh.
set -u -o pipefail
source bench/device_common.sh
WS_EXTRA=${WS_EXTRA:-"128,64,12,3 192,64,16,2 192,64,16,3 128,128,12,3"}
specs=""
for dt in bf16 fp16; do for d in 64 128; do for st in 1 3; do specs+="ws:$dt,$d,128,128,$st,12,2;"; done; done; done
for c in $WS_EXTRA; do IFS=, read bm bn w ns <<< "$c"; for d in 64 128; do for st in 1 3; do specs+="ws:bf16,$d,$bm,$bn,$st,$w,$ns;"; done; done; done
echo "== check fwd_ws"; timeout 300 $B check --quick --forward-only --filter fwd_ws --specs "$specs" --json "$OUT/check.jsonl" > "$OUT/check.log" 2>&1; echo "check rc=$?"
grep -E "passed, |FAIL|error" "$OUT/check.log" | tail -12
echo "== memcheck / racecheck (fwd_ws)"
timeout 150 compute-sanitizer --tool memcheck $B check --quick --forward-only --filter fwd_ws_bf16_d128_st3_bm128_bn128_w12_ns3 --specs "ws:bf16,128,128,128,3,12,3" > /tmp/mc.log 2>&1; echo "memcheck rc=$?" | tee -a "$OUT/extras.log"; grep -E "passed, |ERROR SUMMARY" /tmp/mc.log | tail -2 | tee -a "$OUT/extras.log"
timeout 150 compute-sanitizer --tool racecheck $B check --quick --forward-only --filter fwd_ws_bf16_d64_st1_bm128_bn128_w12_ns3 --specs "ws:bf16,64,128,128,1,12,3" > /tmp/rc.log 2>&1; echo "racecheck rc=$?" | tee -a "$OUT/extras.log"; grep -E "passed, |RACECHECK SUMMARY" /tmp/rc.log | tail -2 | tee -a "$OUT/extras.log"
echo "== bench"; $B bench --configs "${WS_CONFIGS:-ws:128,128,12,2;ws:128,128,12,3;ws:128,64,12,3;ws:192,64,16,2;ws:192,64,16,3;ws:128,128,12,4}" --reps ${REPS:-6} --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
echo "== anchors (N=${ANCHOR_N:=16384})"; PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=$ANCHOR_N timeout ${ANCHOR_TIMEOUT:-200} python3 .carry/anchor_bench.py > "$OUT/anchors.log" 2>&1; echo "anchors rc=$?"; rm -f "$OUT/anchors.json"
echo "== tables"; grep -A80 "=== flashgen" "$OUT/bench.log" | cut -c1-160; grep -A40 "=== table" "$OUT/anchors.log" | grep -v efficient
