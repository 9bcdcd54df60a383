#!/bin/bash
# Session 18, call 2 (short: little device time left): the far-negative GPU test (dQ against the pair);
# main (6cdebff) against 549a0af (before the fused fixes) on the backward rows; the persistent window branch
# (99414c0) against main on the window rows, then its window cases. Results land in $OUT as each step ends.
set -u
R=$OUT; T=/tmp/o; rm -rf $T; mkdir -p $T /tmp/t
xz -dc .carry/gpu_test.xz > /tmp/t/gpu && chmod +x /tmp/t/gpu
xz -dc .carry/flashgen_pw.xz > /tmp/t/fgpw && chmod +x /tmp/t/fgpw
timeout 45 /tmp/t/gpu --ignored --exact far_negative_scores_on_ragged_lengths_stay_finite_in_the_fused_backward > $R/far_negative.log 2>&1; echo "far_negative rc $? at $SECONDS s" | tee $R/head.txt
grep -E "panicked|relative|test result" $R/far_negative.log | tee -a $R/head.txt
OUT=$T/vb CALL_LIMIT=100 BACKWARD=1 VARIANTS="main:;b549:bin=flashgen_b549" bash bench/device.sh variants > /dev/null 2>&1
cp $T/vb/summary.txt $R/vb_summary.txt; cp $T/vb/rows.jsonl $R/vb_rows.jsonl
OUT=$T/vw CALL_LIMIT=80 VARIANTS="main:;pw:bin=flashgen_pw" D=128 N=4096,16384 CAUSAL=1 BENCH_ARGS="--heads 16 --batch 1 --window-left 1024" bash bench/device.sh variants > /dev/null 2>&1
cp $T/vw/summary.txt $R/vw_summary.txt; cp $T/vw/rows.jsonl $R/vw_rows.jsonl
FLASHGEN_CACHE_DIR=/tmp/t/c timeout 60 /tmp/t/fgpw check --quick --skip-decode --forward-only --filter _window > $R/pw_check.log 2>&1; echo "pw check rc $? at $SECONDS s" | tee -a $R/head.txt; tail -2 $R/pw_check.log | tee -a $R/head.txt
for x in vb vw; do echo "== $x"; sed -n '/^---- /,$p' $R/${x}_summary.txt | grep -v "^ *$" | tail -25; done
