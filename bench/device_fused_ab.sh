#!/usr/bin/env bash
# A/B of two builds of the fused backward in one device call (ratios between them and the anchors hold):
# .carry/flashgen.xz (A, e.g. main) and .carry/flashgen_b.xz (B, e.g. a branch), .carry/gpu_test_b.xz (B's GPU
# tests). Correctness first on B: the quick suite with the fused kernels (CHECK_FILTER: only those kernels;
# empty: all), the GPU tests (GPU_TEST_FILTER, default the fused ones, with the bit-for-bit rerun);
# CHECK_A=1 also A's quick suite; SANITIZE_B=1 memcheck and racecheck on B (SANITIZE_RUNS: "tool filter
# [flags];..."; SANITIZE_WITH=flashgen_c: on that carried build instead). Then both timed (bench
# --backward --backward-only --fused; BWD_CONFIGS and DQ_CHAINS as in device_fused.sh, BWD_CONFIGS_B: B's
# configs where they differ; SKIP_A=1: B only; VERSIONS="a b c d": also time .carry/flashgen_c.xz, _d.xz; SKIP_CHECK=1: no correctness
# steps on B, for experiments whose results are wrong on purpose), then the anchors
# (ANCHOR_N, ANCHOR_D; SKIP_ANCHORS=1: none). Writes under $OUT (at most 8 files come back): bench_a.jsonl, bench_b.jsonl, ...
set -u -o pipefail
source bench/device_common.sh
BB=$BIN/flashgen_b
if [ "${SKIP_CHECK:-0}" != 1 ]; then
echo "== B: check --quick${CHECK_FILTER:+, $CHECK_FILTER only}"
timeout ${CHECK_TIMEOUT:-120} $BB check --quick --fused-backward ${CHECK_FILTER:+--filter $CHECK_FILTER} --json "$OUT/check_b.jsonl" > /tmp/check_b.log 2>&1; echo "check rc=$?"
cat /tmp/check_b.log >> "$OUT/extras.log"; grep -E "passed, |FAIL|error" /tmp/check_b.log | tail -6
echo "== B: GPU tests ${GPU_TEST_FILTER-fused_backward}"; timeout ${GPU_TEST_TIMEOUT:-120} $BIN/gpu_test_b --ignored ${GPU_TEST_FILTER-fused_backward} 2>&1 | tee -a "$OUT/extras.log" | grep -E "^test |test result|panicked"
fi
if [ "${CHECK_A:-0}" = 1 ]; then
  echo "== A: check --quick, bwd_fused only"
  timeout ${CHECK_TIMEOUT:-120} $B check --quick --fused-backward --filter bwd_fused --json "$OUT/check_a.jsonl" > /tmp/check_a.log 2>&1; echo "check rc=$?"
  cat /tmp/check_a.log >> "$OUT/extras.log"; grep -E "passed, |FAIL|error" /tmp/check_a.log | tail -6
fi
if [ "${SANITIZE_B:-0}" = 1 ]; then
  # SANITIZE_WITH: another carried build to sanitize instead of B (e.g. flashgen_c, an experiment)
  echo "== ${SANITIZE_WITH:-B}: memcheck / racecheck"; A_BIN=$B; B=$BIN/${SANITIZE_WITH:-flashgen_b}
  IFS=';' read -ra runs <<< "${SANITIZE_RUNS:-memcheck bwd_fused_bf16_d128 --fused-backward;racecheck bwd_fused_bf16_d64_st3 --fused-backward}"
  sanitize "${runs[@]}"; B=$A_BIN
fi
VERSIONS=${VERSIONS:-$([ "${SKIP_A:-0}" = 1 ] && echo b || echo a b)}
for v in $VERSIONS; do
  bin=$B; cfg=${BWD_CONFIGS-fa:64,128,12,3;f:64,128,12,3}; [ $v = b ] && { bin=$BB; cfg=${BWD_CONFIGS_B-$cfg}; }
  case $v in a|b) ;; *) bin=$BIN/flashgen_$v;; esac
  timeout ${BENCH_TIMEOUT:-150} $bin bench --backward --backward-only --fused ${DQ_CHAINS:+--dq-chains "$DQ_CHAINS"} --bwd-configs "$cfg" --d ${BENCH_D:-128} --n ${BENCH_N:-4096,16384} --reps ${REPS:-5} --json "$OUT/bench_$v.jsonl" > "$OUT/bench_$v.log" 2>&1; echo "bench $v rc=$?"
done
[ "${SKIP_ANCHORS:-0}" = 1 ] || { echo "== anchors (N=${ANCHOR_N:=4096,16384})"; PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=$ANCHOR_N ANCHOR_D=${ANCHOR_D:-64,128} timeout ${ANCHOR_TIMEOUT:-150} python3 .carry/anchor_bench.py > "$OUT/anchors.log" 2>&1; echo "anchors rc=$?"; rm -f "$OUT/anchors.json"; }
echo "== tables"; for v in $VERSIONS; do echo "-- $v"; grep -A40 "=== flashgen" "$OUT/bench_$v.log" | grep -E "^bwd"; done; grep -A40 "=== table" "$OUT/anchors.log" | grep -E "^bwd" | grep -v efficient
