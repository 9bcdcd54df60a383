#!/usr/bin/env bash
# A/B of the forward in one call, on the anchors' timer: A = .carry/flashgen.xz (main), B = .carry/flashgen_b.xz
# (the branch) and, when carried, B's GPU tests (.carry/gpu_test_b.xz). B's correctness first: GPU tests,
# forward quick suite, memcheck over MEMCHECK_FILTER (default fwd_ws); then the forward defaults A B A B
# (BENCH_D, BENCH_N, --timing do-bench), then the anchors' Triton (and IMPLS) forwards on the same timer
# (bench/anchor_timing.py; IMPLS=none skips them). With CFG ("[ws:|wsp:]bm,bn,warps,stages;..."), those configs
# too, at CFG_D / CFG_N, A B A B (with ONLY_CFG=1 only those). Logs in $OUT/logs.tgz; a table of A, B and Triton per row last, then the
# configs' rows.
set -u -o pipefail
source bench/device_common.sh
BB=$BIN/flashgen_b; mkdir -p $OUT/logs; L=$OUT/logs
# ONLY_CFG=1: the CFG configs A B A B and nothing else (no checks, no defaults, no anchors)
if [ "${ONLY_CFG:-0}" != 1 ]; then
if [ -x $BIN/gpu_test_b ]; then
  timeout 120 $BIN/gpu_test_b --ignored > $L/gpu_tests_b.log 2>&1; echo "B gpu tests rc=$?"; grep -E "test result|FAILED|panicked" $L/gpu_tests_b.log | head -5
fi
timeout 120 $BB check --quick --forward-only > $L/check_b.log 2>&1; echo "B check rc=$?"; grep -E "passed, |FAIL" $L/check_b.log | tail -3
timeout 120 compute-sanitizer --tool memcheck $BB check --quick --forward-only --filter ${MEMCHECK_FILTER:-fwd_ws} > $L/memcheck_b.log 2>&1; echo "B memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" $L/memcheck_b.log | tail -2
for r in 1 2; do for v in a b; do bin=$B; [ $v = b ] && bin=$BB
  timeout 100 $bin bench --d ${BENCH_D:-64,128} --n ${BENCH_N:-1024,4096,16384} --timing do-bench --json $OUT/$v$r.jsonl > $L/$v$r.log 2>&1; echo "bench $v$r rc=$?"
done; done
fi
if [ -n "${CFG:-}" ]; then for r in 1 2; do for v in a b; do bin=$B; [ $v = b ] && bin=$BB
  timeout 100 $bin bench --d ${CFG_D:-128} --n ${CFG_N:-1024,4096} --configs "$CFG" --timing do-bench --json $OUT/cfg_$v$r.jsonl > $L/cfg_$v$r.log 2>&1; echo "configs $v$r rc=$?"
done; done; fi
[ "${IMPLS:-}" != none ] && [ "${ONLY_CFG:-0}" != 1 ] && PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_D=${BENCH_D:-64,128} ANCHOR_N=${BENCH_N:-1024,4096,16384} IMPLS=${IMPLS:-triton-seed-fa2} timeout 200 python3 bench/anchor_timing.py > $L/anchor_timing.log 2>&1; echo "anchors rc=$?"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
python3 - "$OUT" <<'PY'
import json, sys, collections
out = sys.argv[1]; t = collections.defaultdict(dict)
for tag in ("a1", "b1", "a2", "b2"):
    try:
        for l in open(f"{out}/{tag}.jsonl"):
            r = json.loads(l)
            if r.get("kind") == "fwd" and r["config"] == "default": t[(r["D"], r["N"], int(r["causal"]))][tag] = r["tflops"]
    except FileNotFoundError: pass
try:
    for l in open(f"{out}/anchor_timing.jsonl"):
        r = json.loads(l)
        if r["timing"] == "do-bench": t[(r["D"], r["N"], int(r["causal"]))][r["impl"][:3]] = r["tflops"]
except FileNotFoundError: pass
print("  D     N c |    a1    b1    a2    b2 |   tri |  B/A | B/tri")
for (d, n, c), x in sorted(t.items()):
    g = lambda k: x.get(k, float("nan"))
    b = (g('b1') + g('b2')) / 2
    print(f"{d:3} {n:5} {c} | {g('a1'):5.1f} {g('b1'):5.1f} {g('a2'):5.1f} {g('b2'):5.1f} | {g('tri'):5.1f} | {b / ((g('a1') + g('a2')) / 2):.3f} | {b / g('tri'):.3f}")
cf = collections.defaultdict(dict)
for tag in ("a1", "b1", "a2", "b2"):
    try:
        for l in open(f"{out}/cfg_{tag}.jsonl"):
            r = json.loads(l); cf[(r["D"], r["N"], int(r["causal"]), r["config"])][tag] = r["tflops"]
    except FileNotFoundError: pass
for (d, n, c, cfg), x in sorted(cf.items()):
    print(f"{d:3} {n:5} {c} {cfg:18} " + " ".join(f"{x.get(k, float('nan')):5.1f}" for k in ("a1", "b1", "a2", "b2")))
PY
