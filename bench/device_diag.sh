#!/usr/bin/env bash
# Profile one launch of two forward kernels with Nsight Compute (clocks left alone): warp stall reasons per
# SASS instruction (SourceCounters), warp states and scheduler statistics, to find where a variant loses
# time. Env: DIAG_CONFIGS ("name=config;..." of `bench --configs` entries), DIAG_D, DIAG_N. Then a bench of
# BENCH_CONFIGS at DIAG_D. Same .carry/ as device_run.sh; writes reports and CSVs under $OUT.
set -u -o pipefail
source bench/device_common.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"; $NCU --version | tail -1
IFS=';' read -ra diag <<< "${DIAG_CONFIGS:-pp=ws:128,128,12,3;plain=ws:128,128,12,2}"
for entry in "${diag[@]}"; do
  name=${entry%%=*}; cfg=${entry#*=}; IFS=, read bm bn w ns <<< "${cfg#*:}"
  re="regex:fa2_fwd_ws_bf16_d${DIAG_D:-128}_st1_bm${bm}_bn${bn}_w${w}_ns${ns}_"
  echo "== ncu $name ($cfg, $re)"
  timeout 240 $NCU --clock-control none -k "$re" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
    --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    -o "$OUT/$name" $B bench --d ${DIAG_D:-128} --n ${DIAG_N:-16384} --configs "$cfg" --reps 1 > "$OUT/$name.run.log" 2>&1
  echo "ncu rc=$?"; tail -3 "$OUT/$name.run.log"
  $NCU -i "$OUT/$name.ncu-rep" --page details > "$OUT/$name.details.txt" 2>&1
  $NCU -i "$OUT/$name.ncu-rep" --page source --print-source sass --csv > "$OUT/$name.sass.csv" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Registers Per|Achieved Occ" "$OUT/$name.details.txt" | head -12
  ls -la "$OUT/$name.sass.csv"; head -c 600 "$OUT/$name.sass.csv"; echo
done
echo "== bench"; $B bench --d ${DIAG_D:-128} --n ${BENCH_N:-4096,16384} --configs "${BENCH_CONFIGS:-ws:128,128,12,3;ws:128,64,12,2;ws:128,64,12,3;ws:128,64,12,4}" --reps ${REPS:-6} --json "$OUT/bench.jsonl" > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
grep -A30 "=== flashgen" "$OUT/bench.log" | cut -c1-160
