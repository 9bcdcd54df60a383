#!/bin/bash
# Session 27, call 1: fold_heavy_down (the folded grid's heavy halves down, each block's dQ order by arrival;
# with it the grid folds at any number of waves) against the default in one process: the table's causal
# rows (D128, D64), GQA 64/8 causal; its checks, memcheck and racecheck; then racecheck of the D192 dK/dV
# column warpgroups with the P/dS exchange on bar.sync (flashgen_sync), to confirm session 26's hazards.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; cp $T/$1/rows.jsonl $R/$1_rows.jsonl 2>/dev/null; }
v() { local name=$1 d=$2 n=$3 lim=$4 cfg=$5; shift 5; N=$n OUT=$T/$name CALL_LIMIT=$lim BACKWARD=1 ROUNDS=2 VARIANTS="a:" D=$d CAUSAL=1 BENCH_ARGS="--bwd-configs $cfg $*" bash bench/device.sh variants > /dev/null 2>&1; keep $name; }
v t128 128 1024,4096,16384 90 "fu:64,128,12,2@fold_heavy_down=on"
v t64 64 1024,4096,16384 90 "fu:128,128,12,2@fold_heavy_down=on"
v g 128 4096,16384 60 "fu:64,128,12,2@fold_heavy_down=on" --heads 64 --kv-heads 8 --batch 1
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $T/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $T/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $T/$name.log | cut -c1-300 | tee -a $R/head.txt; }
c hd 100 $F check --quick --skip-decode --fused-backward --backward-schedule fold_heavy_down=on --filter bwd_fused_up
grep -c hdown1 $T/hd.log >> $R/head.txt
left=$((540-SECONDS)); echo "sanitizers get $left s" >> $R/head.txt
OUT=$T/s CALL_LIMIT=$left SANITIZE_TIMEOUT=110 SANITIZE_RUNS="memcheck bwd_fused_up --skip-decode --fused-backward --backward-schedule fold_heavy_down=on;racecheck bwd_fused_up_bf16 --skip-decode --skip-geometry --fused-backward --backward-schedule fold_heavy_down=on" bash bench/device.sh sanitizers > /dev/null 2>&1; keep s
left=$((585-SECONDS)); echo "sync racecheck gets $left s" >> $R/head.txt
[ $left -gt 40 ] && { OUT=$T/y CALL_LIMIT=$left BIN=flashgen_sync SANITIZE_TIMEOUT=$((left-10)) SANITIZE_RUNS="racecheck dkdv_wgmma_bf16_d192_st3" bash bench/device.sh sanitizers > /dev/null 2>&1; keep y; }
tar czf $R/logs.tgz -C $T . 2>/dev/null
cat $R/head.txt; for x in t128 t64 g s y; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt 2>/dev/null | grep -v "^ *$" | grep -v "rc=0" | tail -24; done
