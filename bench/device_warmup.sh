#!/usr/bin/env bash
# Warm-up A/B (warmup-v1): every forward default, 500 ms of warm-up per row against the usual 5 launches,
# then Triton's forwards (bench/anchor_timing.py, both timers). Does a row's number depend on the row before it?
set -u -o pipefail
source bench/device_common.sh
timeout 80 $B bench --d 64,128 --warmup-ms 500 --json $OUT/w500.jsonl > $OUT/w500.log 2>&1; echo "w500 rc=$?"
timeout 60 $B bench --d 64,128 --json $OUT/w5.jsonl > $OUT/w5.log 2>&1; echo "w5 rc=$?"
PYTHONUNBUFFERED=1 OUT=$OUT IMPLS=triton-seed-fa2 timeout 120 python3 bench/anchor_timing.py > $OUT/anchor_timing.log 2>&1; echo "anchors rc=$?"
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]; t = {}
for tag in ("w500", "w5"):
    for l in open(f"{out}/{tag}.jsonl"):
        r = json.loads(l); t.setdefault((r["D"], r["N"], r["causal"]), {})[tag] = r["tflops"]
for l in open(f"{out}/anchor_timing.jsonl"):
    r = json.loads(l); t.setdefault((r["D"], r["N"], r["causal"]), {})["tri-" + r["timing"][0]] = r["tflops"]
print("  D     N c |  w500    w5 | tri-b tri-d | w500/tri-d w5/tri-d")
for (d, n, c), x in sorted(t.items()):
    g = lambda k: x.get(k, float("nan"))
    print(f"{d:3} {n:5} {int(c)} | {g('w500'):5.1f} {g('w5'):5.1f} | {g('tri-b'):5.1f} {g('tri-d'):5.1f} | {g('w500')/g('tri-d'):.3f} {g('w5')/g('tri-d'):.3f}")
PY
