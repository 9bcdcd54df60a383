#!/usr/bin/env bash
# Profile one launch of any kernel with Nsight Compute (clocks left alone): speed of light, memory tables
# (L2 reductions included), warp states and stall reasons per SASS instruction. NCU_RUNS:
# "name|kernel regex|flashgen bench args;..." (the launch after NCU_SKIP matching ones is profiled).
# Same .carry/ as device_run.sh; writes the details and the SASS CSVs (xz) under $OUT.
set -u -o pipefail
source bench/device_common.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
IFS=';' read -ra runs <<< "$NCU_RUNS"
for entry in "${runs[@]}"; do
  IFS='|' read name re args <<< "$entry"
  echo "== ncu $name ($re: bench $args)"
  timeout ${NCU_TIMEOUT:-200} $NCU --clock-control none -k "regex:$re" --launch-skip ${NCU_SKIP:-2} --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
    --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    -o "$OUT/$name" $B bench $args --reps 1 > "$OUT/$name.run.log" 2>&1
  echo "ncu rc=$?"; tail -2 "$OUT/$name.run.log"
  $NCU -i "$OUT/$name.ncu-rep" --page details > "$OUT/$name.details.txt" 2>&1
  $NCU -i "$OUT/$name.ncu-rep" --page source --print-source sass --csv > "$OUT/$name.sass.csv" 2>&1
  # at most 8 files come back from a device call: keep the details and the per-instruction table (xz)
  tail -3 "$OUT/$name.run.log" >> "$OUT/$name.details.txt"; rm -f "$OUT/$name.run.log" "$OUT/$name.ncu-rep"
  python3 -c "import lzma,sys; lzma.open(sys.argv[1] + '.xz', 'wb').write(open(sys.argv[1], 'rb').read())" "$OUT/$name.sass.csv" && rm "$OUT/$name.sass.csv"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Registers Per|Achieved Occ" "$OUT/$name.details.txt" | head -12
done
