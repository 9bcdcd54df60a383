#!/usr/bin/env bash
# Config sweep in one call: the forward default beside the configs of each SWEEPn ("D|N|configs", configs as
# `bench --configs`), twice on the anchors' timer (do-bench), so each config's spread shows. A = .carry/flashgen.xz.
# Logs in $OUT/logs.tgz; a table of every config per row last, with its ratio to the default.
set -u -o pipefail
source bench/device_common.sh
mkdir -p $OUT/logs
for r in 1 2; do i=0; for sw in "${SWEEP1:-}" "${SWEEP2:-}" "${SWEEP3:-}"; do i=$((i+1)); [ -z "$sw" ] && continue
  IFS='|' read -r d n cfg <<< "$sw"
  timeout 150 $B bench --d $d --n $n --configs "$cfg" --timing do-bench --json $OUT/s${i}_p$r.jsonl > $OUT/logs/s${i}_p$r.log 2>&1; echo "sweep $i pass $r rc=$?"
done; done
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
python3 - "$OUT" <<'PY'
import json, sys, glob, collections
out = sys.argv[1]; t = collections.defaultdict(dict)
for f in sorted(glob.glob(f"{out}/s*_p*.jsonl")):
    tag = f[-8:-6]  # p1 / p2
    for l in open(f):
        r = json.loads(l)
        if r.get("kind") == "fwd": t[(r["D"], r["N"], int(r["causal"]))].setdefault(r["config"], {})[tag] = r["tflops"]
print(" D     N c config                  p1     p2  vs default")
for (d, n, c), cfgs in sorted(t.items()):
    base = sum(cfgs.get("default", {}).values()) / max(1, len(cfgs.get("default", {})))
    for cfg, v in cfgs.items():
        mean = sum(v.values()) / len(v)
        print(f"{d:3} {n:5} {c} {cfg:20} {v.get('p1', float('nan')):6.1f} {v.get('p2', float('nan')):6.1f}  {mean / base:.3f}")
PY
