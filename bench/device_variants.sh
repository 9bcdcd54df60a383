#!/usr/bin/env bash
# Render-time variants of one build, A/B against main's, in one call (an experiment's script: the variants
# are environment switches of the B build that a merged build does not have). A = .carry/flashgen.xz,
# B = .carry/flashgen_b.xz. VARIANTS: "tag:ENV=v,ENV=v;..." (tag a = A with no switches). B's correctness first:
# the forward checks (CHECK_ARGS, default: fwd_ws*) at every length under CHECK_ENV (the switches under test),
# memcheck over the quick suite. Then VARIANTS in ROUNDS rounds (order rotated each round), BENCH_D / BENCH_N,
# forward defaults on the anchors' timer, each variant with its own kernel cache. Every timed row goes to
# $OUT/variants.jsonl (tagged "variant" and "round": one file, so the call's few returned files hold them all); a table last.
# WARMUP_MS as in device_table.sh (default 0). BENCH_CAUSAL: bench --causal (default 0,1). BENCH_CONFIGS: bench
# --configs (e.g. "wsp:256,64,20,4"); every config's rows are tabled, the default's as "default".
# BACKWARD=1: a backward change instead. B's checks then include the backward sets that CHECK_ARGS's filter
# names (e.g. "--filter dkdv_wgmma"), memcheck runs at MEMCHECK_FILTER, and bench times the backward only
# (`--backward --backward-only`; the backward rows are tabled).
set -u -o pipefail
source bench/device_common.sh
BB=$BIN/flashgen_b; L=$OUT/logs; mkdir -p $L
if [ "${BACKWARD:-0}" = 1 ]; then CHECK_SCOPE=""; BENCH_SCOPE="--backward --backward-only"; KIND=bwd; else CHECK_SCOPE="--forward-only"; BENCH_SCOPE=""; KIND=fwd; fi
env ${CHECK_ENV:-} timeout ${CHECK_TIMEOUT:-150} $BB check $CHECK_SCOPE ${CHECK_ARGS:---filter fwd_ws} --json $OUT/check_b.jsonl > $L/check_b.log 2>&1; echo "B check (${CHECK_ENV:-}) rc=$?"; grep -E "passed, |FAIL" $L/check_b.log | tail -3
env ${CHECK_ENV:-} timeout 150 compute-sanitizer --tool memcheck $BB check --quick $CHECK_SCOPE --filter ${MEMCHECK_FILTER:-fwd_ws} > $L/memcheck_b.log 2>&1; echo "B memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" $L/memcheck_b.log | tail -2
IFS=';' read -ra VS <<< "$VARIANTS"
for r in $(seq 1 ${ROUNDS:-2}); do
  n=${#VS[@]}
  for i in $(seq 0 $((n - 1))); do
    v=${VS[$(( (i + r - 1) % n ))]}; tag=${v%%:*}; envs=${v#*:}; bin=$BB; [ $tag = a ] && bin=$B
    [ $SECONDS -gt ${STOP_AFTER:-540} ] && { echo "stop: ${SECONDS} s"; break 2; }
    env FLASHGEN_CACHE_DIR=/tmp/fg-cache-$tag ${envs//,/ } timeout ${BENCH_TIMEOUT:-100} $bin bench --d ${BENCH_D:-64} --n ${BENCH_N:-1024,2048,4096,16384} $BENCH_SCOPE --timing do-bench --warmup-ms ${WARMUP_MS:-0} --causal ${BENCH_CAUSAL:-0,1} ${BENCH_CONFIGS:+--configs "$BENCH_CONFIGS"} --json $OUT/${tag}_$r.jsonl > $L/${tag}_$r.log 2>&1; echo "bench $tag round $r rc=$? (${SECONDS} s)"
  done
done
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
python3 - "$OUT" "$VARIANTS" "$KIND" <<'PY'
import json, sys, glob, collections, os
out, variants, kind = sys.argv[1], sys.argv[2], sys.argv[3]; tags = [v.split(":")[0] for v in variants.split(";")]
t = collections.defaultdict(lambda: collections.defaultdict(list))
with open(f"{out}/variants.jsonl", "w") as merged:
    for f in sorted(glob.glob(f"{out}/*_[0-9]*.jsonl")):
        tag, rnd = f.rsplit("/", 1)[1][:-len(".jsonl")].rsplit("_", 1)
        for l in open(f):
            r = json.loads(l); r["variant"], r["round"] = tag, int(rnd)
            merged.write(json.dumps(r) + "\n")
            if r.get("kind") == kind: t[(r["D"], r["N"], int(r["causal"]), r["config"])][tag].append(r["tflops"])
        os.remove(f)
print("  D     N c config           | " + " | ".join(f"{x:>13}" for x in tags) + " | (min-max TFLOP/s; ratio of means to a)")
for k, x in sorted(t.items()):
    a = sum(x["a"]) / len(x["a"]) if x.get("a") else float("nan")
    cells = []
    for tag in tags:
        v = x.get(tag, [])
        cells.append(f"{min(v):5.1f}-{max(v):5.1f} {sum(v)/len(v)/a:.3f}" if v else " " * 17)
    print(f"{k[0]:3} {k[1]:5} {k[2]} {str(k[3])[:16]:<16} | " + " | ".join(cells))
PY
