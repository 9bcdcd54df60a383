#!/usr/bin/env bash
# Two configs of one build, timed in alternating order (X then Y, Y then X, ...: bench runs its configs in the
# order given, after the default), on the anchors' timer, so neither always runs after the other. X, Y:
# "[ws:|wsp:]bm,bn,warps,stages"; at ORDER_D / ORDER_N; PASSES (default 4). A = .carry/flashgen_b.xz if
# carried, else flashgen.xz. A table of X and Y per pass last.
set -u -o pipefail
source bench/device_common.sh
[ -x $BIN/flashgen_b ] && B=$BIN/flashgen_b
for p in $(seq 1 ${PASSES:-4}); do
  if [ $((p % 2)) = 1 ]; then cfg="$X;$Y"; else cfg="$Y;$X"; fi
  timeout 60 $B bench --d ${ORDER_D:-128} --n ${ORDER_N:-1024} --configs "$cfg" --timing do-bench --json $OUT/o$p.jsonl > $OUT/o$p.log 2>&1; echo "pass $p rc=$?"
done
python3 - "$OUT" "$X" "$Y" <<'PY'
import json, sys, glob, collections
out, x, y = sys.argv[1:4]; t = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(f"{out}/o*.jsonl")):
    for l in open(f):
        r = json.loads(l); t[(r["D"], r["N"], int(r["causal"]))][r["config"]].append(r["tflops"])
for (d, n, c), v in sorted(t.items()):
    mx, my = sum(v[x]) / len(v[x]), sum(v[y]) / len(v[y])
    print(f"D{d} N{n} c{c}: {x} " + " ".join(f"{a:.1f}" for a in v[x]) + f" | {y} " + " ".join(f"{a:.1f}" for a in v[y]) + f" | Y/X {my / mx:.3f}")
PY
