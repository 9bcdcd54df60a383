#!/usr/bin/env bash
# A/B in one call, alternated: A = .carry/flashgen.xz, B = .carry/flashgen_b.xz. B's forward quick suite
# first; then the forward defaults A B A B (BENCH_D, BENCH_N); then CFG (configs, on A and B, at CFG_D /
# CFG_N); then the anchors at ANCHOR_D. Logs in $OUT/logs.tgz; a table of A and B per row last.
set -u -o pipefail
source bench/device_common.sh
BB=$BIN/flashgen_b; mkdir -p $OUT/logs
timeout 90 $BB check --quick --forward-only > $OUT/logs/check_b.log 2>&1; echo "B check rc=$?"; grep -E "passed, |FAIL" $OUT/logs/check_b.log | tail -2
for r in 1 2; do for v in a b; do bin=$B; [ $v = b ] && bin=$BB
  timeout 100 $bin bench --d ${BENCH_D:-64,128} --n ${BENCH_N:-1024,4096,16384} --json $OUT/$v$r.jsonl > $OUT/logs/$v$r.log 2>&1; echo "bench $v$r rc=$?"
done; done
if [ -n "${CFG:-}" ]; then for v in a b; do bin=$B; [ $v = b ] && bin=$BB
  timeout 100 $bin bench --d ${CFG_D:-64} --n ${CFG_N:-2048,4096} --configs "$CFG" --json $OUT/cfg_$v.jsonl > $OUT/logs/cfg_$v.log 2>&1; echo "configs $v rc=$?"
done; fi
PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_N=${BENCH_N:-1024,4096,16384} ANCHOR_D=${ANCHOR_D:-64} timeout 150 python3 .carry/anchor_bench.py > $OUT/anchors.log 2>&1; echo "anchors rc=$?"; rm -f $OUT/anchors.json
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
python3 - "$OUT" <<'PY'
import json, sys, glob, os, collections
out = sys.argv[1]; t = collections.defaultdict(dict)
for f in sorted(glob.glob(f"{out}/*.jsonl")):
    tag = os.path.basename(f)[:-6]
    for l in open(f):
        r = json.loads(l)
        if r.get("kind") == "fwd": t[(r["D"], r["N"], int(r["causal"]), r["config"])][tag] = r["tflops"]
for l in open(f"{out}/anchors.log"):
    if l.startswith("{"):
        r = json.loads(l)
        if r.get("kind") == "fwd" and r["impl"].startswith("triton"): t[(r["D"], r["N"], int(r["causal"]), "default")]["tri"] = r["tflops"]
tags = sorted({k for v in t.values() for k in v})
print(" D     N c config               " + " ".join(f"{k:>7}" for k in tags))
for (d, n, c, cfg), v in sorted(t.items()):
    print(f"{d:2} {n:5} {c} {cfg:20} " + " ".join(f"{v.get(k, float('nan')):7.1f}" for k in tags))
PY
