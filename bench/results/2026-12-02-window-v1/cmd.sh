#!/usr/bin/env bash
# device call: FA4's window mode beside ours (window 1024 causal D128 N16384 fwd+bwd, softcap 30 fwd; A B A),
# the window/softcap checks (forward and backward), sanitizers on the window backward, window tile configs
R=${OUT:-/tmp/out}; mkdir -p $R
xz -dc .carry/flashgen.xz > /tmp/fg && chmod +x /tmp/fg
{ cat .carry/build.txt; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader; date; } > $R/env.txt
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s); timeout $lim "$@" > $R/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - s ))s $(tail -1 $R/$name.log)" | tee -a $R/summary.txt; }
FA4=0
if [ -f /tmp/stash/fa4-site.tar.xz.part1 ] && [ -f .carry/fa4-site.tar.xz.part2 ]; then
  t fa4_unpack 150 bash -c 'set -e; cat /tmp/stash/fa4-site.tar.xz.part1 .carry/fa4-site.tar.xz.part2 > /tmp/fa4.tar.xz; mkdir -p /tmp/site; tar -C /tmp/site -xJf /tmp/fa4.tar.xz; rm /tmp/fa4.tar.xz; ls /tmp/site | head -3'
  [ -d /tmp/site/flash_attn ] && FA4=1
else
  echo "no FA4 (stash missing)" | tee -a $R/summary.txt
fi
W="--heads 16 --batch 1 --d 128 --n 16384 --causal 1 --timing do-bench"
ours() { t ours_window$1 150 /tmp/fg bench $W --window-left 1024 --backward --json $R/ours_window$1.jsonl; t ours_softcap$1 150 /tmp/fg bench $W --softcap 30 --json $R/ours_softcap$1.jsonl; }
ours 1
[ $FA4 = 1 ] && t fa4_window 240 env PYTHONPATH="/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages" PYTHONWARNINGS=ignore FA4_MODES=window OUT=$R python3 .carry/fa4_bench.py
grep -h '^{' $R/fa4_window.log > $R/fa4_window.jsonl 2>/dev/null
ours 2
t cfg_window 200 /tmp/fg bench $W --window-left 1024 --configs "ws:128,64,12,4;ws:128,64,12,6;ws:128,128,12,4" --json $R/cfg_window.jsonl
t check_window 200 /tmp/fg check --skip-decode --filter window --json $R/check_window.jsonl
t check_softcap 150 /tmp/fg check --skip-decode --filter softcap --json $R/check_softcap.jsonl
t memcheck_wbwd 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/fg check --skip-decode --filter "window N_q 700 N_kv 300"
t racecheck_wbwd 200 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fg check --skip-decode --filter "window N1000"
grep -h "FAIL" $R/check_*.log | head -20
grep -h "^fwd\|^bwd" $R/ours_*.log $R/cfg_window.log | sort | uniq -c
cat $R/fa4_window.jsonl 2>/dev/null | cut -c1-200
cat $R/summary.txt
cd $R && tar czf all.tgz *.log *.jsonl env.txt summary.txt && ls
