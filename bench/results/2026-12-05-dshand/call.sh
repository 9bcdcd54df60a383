#!/bin/bash
# Session 20, call 2 (after `bash bench/device.sh stash`), most wanted first: the fused backward's dSᵀ
# hand-over (Schedule::ds_handover) timed beside the barrier in one process per round on the table's rows; its
# gradients on the GPU (check --backward-schedule); the mma.sync kernels' windows, softcap, 192/128 and
# score/mask modifiers (FLASHGEN_WGMMA=0); HEAD_DIM 256 with softcap; fa4_bench.py's window mode beside ours;
# the hand-over on the GQA rows; sanitizers with what is left. Results land as each step ends.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T
keep() { cp $T/$1/summary.txt $R/$1_summary.txt; cp $T/$1/rows.jsonl $R/$1_rows.jsonl 2>/dev/null; cp $T/$1/logs.tgz $R/$1_logs.tgz 2>/dev/null; }
DS="f:64,128,12,2@ds_handover=on;f:128,128,12,2@ds_handover=on;fu:64,128,12,2@fold_key_blocks=off;fu:128,128,12,2@fold_key_blocks=off;fu:64,128,12,2@ds_handover=on,fold_key_blocks=off;fu:128,128,12,2@ds_handover=on,fold_key_blocks=off"
OUT=$T/v CALL_LIMIT=130 BACKWARD=1 ROUNDS=3 VARIANTS="a:" BENCH_ARGS="--bwd-configs $DS" bash bench/device.sh variants > /dev/null 2>&1; keep v
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
c() { local name=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" > $R/$name.log 2>&1; echo "$name rc $? $((SECONDS-t0)) s: $(grep -E 'passed|failed' $R/$name.log | tail -1)" | tee -a $R/head.txt; grep -m5 FAIL $R/$name.log | cut -c1-300 | tee -a $R/head.txt; }
c dshand_check 60 $F check --quick --skip-decode --skip-geometry --fused-backward --backward-schedule ds_handover=on --filter dshand1
c mma_window 90 env FLASHGEN_WGMMA=0 $F check --quick --skip-decode --mma-sync --filter window,softcap
c mma_dv 45 env FLASHGEN_WGMMA=0 $F check --quick --skip-decode --mma-sync --filter "dv 192/128"
c mma_mods 90 env FLASHGEN_WGMMA=0 $F check --quick --skip-decode --mma-sync --filter "mods "
c d256 45 $F check --quick --skip-decode --filter D256
OUT=$T/m CALL_LIMIT=80 MODES=window bash bench/device.sh modes > /dev/null 2>&1; keep m
left=$((570-SECONDS)); echo "gqa + sanitizers get $left s" >> $R/head.txt
OUT=$T/g CALL_LIMIT=$((left < 60 ? left : 60)) BACKWARD=1 ROUNDS=2 VARIANTS="a:" D=128 N=4096,16384 BENCH_ARGS="--heads 64 --kv-heads 8 --batch 1 --bwd-configs $DS" bash bench/device.sh variants > /dev/null 2>&1; keep g
left=$((575-SECONDS))
OUT=$T/s CALL_LIMIT=$left SANITIZE_TIMEOUT=100 SANITIZE_RUNS="racecheck bwd_fused_bf16_d64 --skip-decode --skip-geometry --fused-backward --backward-schedule ds_handover=on;memcheck fwd_ws_persistent --skip-decode --forward-only;racecheck bwd_fused_bf16_d128 --skip-decode --skip-geometry --fused-backward --backward-schedule ds_handover=on" bash bench/device.sh sanitizers > /dev/null 2>&1; keep s
cat $R/head.txt; for x in v m g s; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | tail -40; done
