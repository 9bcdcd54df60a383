#!/usr/bin/env bash
# Is fwd_ws's two-mode speed at HEAD_DIM 64 the clock? (clocks-v1) nvidia-smi samples the SM clock, power,
# temperature and throttle reasons every 50 ms while the D64 forward defaults run 40 reps each, then while
# Triton's seed kernel runs the same rows; a summary per phase at the end. Under $OUT.
set -u -o pipefail
source bench/device_common.sh
sample() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader,nounits -lms 50 > $OUT/smi_$1.csv 2>/dev/null & echo $!; }
P=$(sample flashgen); timeout 200 $B bench --d 64 --n ${N:-4096,16384} --reps 40 --json $OUT/bench.jsonl > $OUT/bench.log 2>&1; echo "bench rc=$?"; kill $P
P=$(sample triton); PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=${N:-4096,16384} ANCHOR_D=64 timeout 200 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; kill $P; rm -f $OUT/anchors.json
python3 - <<'PY'
import os, statistics as st
out = os.environ.get("OUT", "/tmp/out")
for ph in ["flashgen", "triton"]:
    rows = [l.split(", ") for l in open(f"{out}/smi_{ph}.csv") if l.count(",") >= 4]
    busy = [r for r in rows if float(r[2]) > 250]
    if not busy: print(ph, "no busy samples"); continue
    clk = [int(r[1]) for r in busy]; pw = [float(r[2]) for r in busy]; tc = [int(r[3]) for r in busy]
    reasons = {}
    for r in busy: reasons[r[4].strip()] = reasons.get(r[4].strip(), 0) + 1
    print(f"{ph}: {len(busy)} busy samples; SM clock min/median/max {min(clk)}/{st.median(clk)}/{max(clk)} MHz; power median/max {st.median(pw):.0f}/{max(pw):.0f} W; temp max {max(tc)} C; throttle reasons {reasons}")
PY
grep -A20 "=== flashgen" $OUT/bench.log | grep "^fwd"; grep -A20 "=== table" $OUT/anchors.log | grep "^fwd" | grep triton
