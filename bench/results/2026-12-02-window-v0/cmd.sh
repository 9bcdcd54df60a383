#!/usr/bin/env bash
# device call 2: window/softcap forward checks, D64 quick checks (programs_per_sm derived), sanitizers, our window rows
R=${OUT:-/tmp/out}; mkdir -p $R
xz -dc .carry/flashgen.xz > /tmp/fg && chmod +x /tmp/fg
cat .carry/build.txt > $R/env.txt; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader >> $R/env.txt; date >> $R/env.txt
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s); timeout $lim "$@" > $R/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - s ))s $(tail -1 $R/$name.log)" | tee -a $R/summary.txt; }
t check_window 150 /tmp/fg check --skip-decode --filter window --json $R/check_window.jsonl
t check_softcap 100 /tmp/fg check --skip-decode --filter softcap --json $R/check_softcap.jsonl
t check_d64 150 /tmp/fg check --quick --skip-decode --skip-geometry --filter d64 --json $R/check_d64.jsonl
t memcheck_window 150 compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/fg check --skip-decode --filter "window N_q 700 N_kv 300"
t racecheck_window 150 compute-sanitizer --tool racecheck --error-exitcode 9 /tmp/fg check --skip-decode --filter "window N1000"
for i in 1 2; do
t bench_window$i 120 /tmp/fg bench --heads 16 --batch 1 --d 128 --n 16384 --causal 1 --window-left 1024 --timing do-bench --json $R/bench_window$i.jsonl
t bench_softcap$i 120 /tmp/fg bench --heads 16 --batch 1 --d 128 --n 16384 --causal 1 --softcap 30 --timing do-bench --json $R/bench_softcap$i.jsonl
t bench_causal$i 120 /tmp/fg bench --heads 16 --batch 1 --d 128 --n 16384 --causal 1 --timing do-bench --json $R/bench_causal$i.jsonl
done
grep -h "^fwd\|^bwd" $R/bench_*.log | tee -a $R/summary.txt
grep -h "FAIL" $R/check_*.log | head -20
cat $R/summary.txt
