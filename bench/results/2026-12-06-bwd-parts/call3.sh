#!/bin/bash
# Session 27, call 3 (after `bash bench/device.sh stash`): FA4's backward kernels at D64/D128 N 1024 timed by
# ncu, one launch each of the last iterations (our three kernels' durations: bwd-parts).
set -u; mkdir -p /tmp/o
R=$OUT
cat /tmp/stash/fa4-site.tar.xz.part1 .carry/fa4-site.tar.xz.part2 > /tmp/fa4.tar.xz && mkdir -p /tmp/site && tar -C /tmp/site -xJf /tmp/fa4.tar.xz && rm /tmp/fa4.tar.xz
export PYTHONPATH="/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
for d in 64; do
  D=$d timeout 100 python3 .carry/fa4_parts.py > $R/warm_$d.log 2>&1   # JIT compile outside ncu
  D=$d timeout 120 $ncu --clock-control none --launch-skip 0 --launch-count 120 --section SpeedOfLight python3 .carry/fa4_parts.py > $R/ncu_$d.log 2>&1
  echo "== D$d"; grep -E "^  [A-Za-z_].*Context|Duration" $R/ncu_$d.log | paste - - | awk '{print substr($1,1,60), $(NF)}' | tail -14
done
# ncu of bwd_fused_up at GQA 64/8 and MHA (H 16, Z 4) causal N 4096, D128: where a GQA step's extra time goes
left=$((425-SECONDS)); echo "ncu gets $left s"
[ $left -gt 80 ] && { OUT=/tmp/o/n CALL_LIMIT=$left NCU_TIMEOUT=$(( (left-10)/2 )) NCU_RUNS="gqac|fa2_bwd_fused_up_bf16_d128_st3|--d 128 --n 4096 --causal 1 --heads 64 --kv-heads 8 --batch 1 --backward --backward-only;mhac|fa2_bwd_fused_up_bf16_d128_st3|--d 128 --n 4096 --causal 1 --backward --backward-only" bash bench/device.sh ncu > /dev/null 2>&1; cp /tmp/o/n/summary.txt $R/ncu_summary.txt; cp /tmp/o/n/*.details.txt $R/ 2>/dev/null; cp /tmp/o/n/*.sass.csv.xz $R/ 2>/dev/null; sed -n '/^---- /,$p' $R/ncu_summary.txt | grep -v "^ *$" | tail -50; }
