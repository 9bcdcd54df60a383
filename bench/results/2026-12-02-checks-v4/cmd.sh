#!/usr/bin/env bash
# device call: the Python package's GPU tests (windows and softcap through flash_attn_func), the quick check
# suite on the new ABI (every default kernel), window backward tile variants
R=${OUT:-/tmp/out}; mkdir -p $R
xz -dc .carry/flashgen.xz > /tmp/fg && chmod +x /tmp/fg
{ cat .carry/build.txt; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader; date; } > $R/env.txt
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s); timeout $lim "$@" > $R/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( $(date +%s) - s ))s $(tail -1 $R/$name.log)" | tee -a $R/summary.txt; }
t pytest 200 env OUT=$R/py bash python/tools/device.sh tests
tail -4 $R/py/pytest.log | tee -a $R/summary.txt
t check_quick 330 /tmp/fg check --quick --json $R/check_quick.jsonl
grep -h "FAIL" $R/check_quick.log | head -20
t bwd_window_cfgs 150 /tmp/fg bench --heads 16 --batch 1 --d 128 --n 16384 --causal 1 --window-left 1024 --backward --backward-only --timing do-bench --bwd-configs "w:64,64,4,2|64,64,4,2;w:32,128,8,2|64,64,4,2;w:32,64,4,3|128,64,8,2;w:32,64,4,2|128,128,8,2" --json $R/bwd_window_cfgs.jsonl
grep -h "^bwd\|^skip" $R/bwd_window_cfgs.log | tee -a $R/summary.txt
cd $R && tar czf all.tgz *.log *.jsonl env.txt summary.txt py && ls
