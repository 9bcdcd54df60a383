#!/usr/bin/env bash
# A backward change against main's, in one call: A = .carry/flashgen.xz (main's build), B = .carry/flashgen_b.xz
# (the change). B's backward checks first (`check --filter CHECK_FILTER`, default dkdv_wgmma: every default
# backward set holding that kernel, ragged lengths, both row statistics) and memcheck over their quick suite at
# MEMCHECK_FILTER (default dkdv_wgmma_bf16_d64). Then A and B in ROUNDS rounds (default 2, order rotated),
# `bench --backward --backward-only` at BENCH_D / BENCH_N (default 64 / 1024,4096,16384), causal and not, on
# the anchors' timer, each with its own kernel cache (BENCH_TIMEOUT seconds each, default 120: before bench drew
# its inputs on every core, a process paid ~15-20 s a length before timing anything). Every row goes to $OUT/ab.jsonl (tagged
# "variant" and "round"); a table last: min-max TFLOP/s per variant, and the ratio of B's mean to A's.
set -u -o pipefail
source bench/device_common.sh
BB=$BIN/flashgen_b
timeout ${CHECK_TIMEOUT:-120} $BB check --filter ${CHECK_FILTER:-dkdv_wgmma} --json $OUT/check_b.jsonl > $OUT/check_b.log 2>&1; echo "B check rc=$?"; grep -E "passed, |FAIL" $OUT/check_b.log | tail -3
timeout 90 compute-sanitizer --tool memcheck $BB check --quick --filter ${MEMCHECK_FILTER:-dkdv_wgmma_bf16_d64} > $OUT/memcheck_b.log 2>&1; echo "B memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" $OUT/memcheck_b.log | tail -2
for r in $(seq 1 ${ROUNDS:-2}); do
  for tag in $( [ $((r % 2)) = 1 ] && echo "a b" || echo "b a" ); do
    [ $SECONDS -gt ${STOP_AFTER:-460} ] && { echo "stop: ${SECONDS} s"; break 2; }
    bin=$BB; [ $tag = a ] && bin=$B
    FLASHGEN_CACHE_DIR=/tmp/fg-cache-$tag timeout ${BENCH_TIMEOUT:-120} $bin bench --d ${BENCH_D:-64} --n ${BENCH_N:-1024,4096,16384} --backward --backward-only --timing do-bench --json $OUT/${tag}_$r.jsonl > /dev/null 2>&1; echo "bench $tag round $r rc=$? (${SECONDS} s)"
  done
done
python3 - "$OUT" <<'PY'
import json, sys, glob, collections
out = sys.argv[1]; t = collections.defaultdict(lambda: collections.defaultdict(list))
with open(f"{out}/ab.jsonl", "w") as merged:
    for f in sorted(glob.glob(f"{out}/[ab]_[0-9]*.jsonl")):
        tag, rnd = f.rsplit("/", 1)[1][:-len(".jsonl")].split("_")
        for l in open(f):
            x = json.loads(l); x["variant"], x["round"] = tag, int(rnd); merged.write(json.dumps(x) + "\n")
            if x.get("kind") == "bwd": t[(x["D"], x["N"], int(x["causal"]))][tag].append(x["tflops"])
print("  D     N c |            a |            b | b/a")
for (d, n, c), v in sorted(t.items()):
    cell = lambda g: f"{min(v[g]):6.1f}-{max(v[g]):6.1f}" if v.get(g) else " " * 13
    ratio = sum(v["b"]) / len(v["b"]) / (sum(v["a"]) / len(v["a"])) if v.get("a") and v.get("b") else float("nan")
    print(f"{d:3} {n:5} {c} | {cell('a')} | {cell('b')} | {ratio:.3f}")
PY
rm -f $OUT/[ab]_[0-9]*.jsonl
