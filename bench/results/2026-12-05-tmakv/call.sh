#!/bin/bash
# Session 21, one call (two builds carried: flashgen = 6019c36, the decode kernel's K/V by TMA boxes;
# flashgen_alibi = b45d298, the same plus ALiBi's slope distributed over kv_idx − q_idx). Most wanted first:
# 1. the TMA decode kernel (Schedule::tma_kv) timed beside the default in one process per round (bench
#    --decode: K/V GB/s, the batch-1 step under do_bench, the step in a graph of 8 layers' caches);
# 2. its checks on the H200 (check --decode-only under the switch);
# 3. the --mods alibi forward rows of both builds in rotated rounds;
# 4. sanitizers: memcheck and racecheck of the TMA decode cases (lying lengths and tables included), racecheck
#    of fwd_ws_persistent (left from session 20);
# 5. the ALiBi build's modifier checks (wgmma and mma.sync).
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
# (a call returns at most 8 files: the summaries, and the rows and logs in one archive at the end)
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; }
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
OUT=$T/v CALL_LIMIT=150 DECODE=1 ROUNDS=3 VARIANTS="ab:--decode-schedule tma_kv=on" bash bench/device.sh variants > /dev/null 2>&1; keep v
F=/tmp/fg-bin/flashgen; A=/tmp/fg-bin/flashgen_alibi; export FLASHGEN_CACHE_DIR=/tmp/t/c
c tma_check 150 $F check --decode-only --decode-schedule tma_kv=on
OUT=$T/a CALL_LIMIT=120 ROUNDS=2 D=64,128 N=4096,16384 VARIANTS="main:;alibi:bin=flashgen_alibi" BENCH_ARGS="--mods alibi" bash bench/device.sh variants > /dev/null 2>&1; keep a
left=$((440-SECONDS)); [ $left -lt 60 ] && left=60
OUT=$T/s CALL_LIMIT=$left SANITIZE_TIMEOUT=100 SANITIZE_RUNS="memcheck decode --decode-only --decode-schedule tma_kv=on;racecheck decode --decode-only --decode-schedule tma_kv=on;racecheck fwd_ws_persistent --skip-decode --forward-only" bash bench/device.sh sanitizers > /dev/null 2>&1; keep s
left=$((570-SECONDS)); [ $left -gt 10 ] && c alibi_mods $left $A check --quick --skip-decode --filter "mods "
tar czf $R/rows_logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in v a s; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | tail -40; done
grep -h 'us_layers' $T/v/rows.jsonl 2>/dev/null | head -8
