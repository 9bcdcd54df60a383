#!/usr/bin/env bash
# Timer A/B (timing-v1): does the timer decide the ratio? Our forward defaults timed batched and do-bench
# (the anchors' timer), batched again for drift; the anchors' forwards timed both ways (bench/anchor_timing.py);
# first, the correctness of .carry/flashgen_b.xz (wip/dynamic-tiles: GPU tests, forward quick suite,
# memcheck) when it is carried. Logs under $OUT/logs.tgz; a table last.
set -u -o pipefail
source bench/device_common.sh
mkdir -p $OUT/logs
if [ -x $BIN/flashgen_b ]; then
  BB=$BIN/flashgen_b
  [ -x $BIN/gpu_test_b ] && { timeout 150 $BIN/gpu_test_b --ignored > $OUT/logs/gpu_tests_b.log 2>&1; echo "B gpu tests rc=$?"; grep -E "test result|FAILED|panicked" $OUT/logs/gpu_tests_b.log | head -5; }
  timeout 90 $BB check --quick --forward-only > $OUT/logs/check_b.log 2>&1; echo "B check rc=$?"; grep -E "passed, |FAIL" $OUT/logs/check_b.log | tail -2
  timeout 120 compute-sanitizer --tool memcheck $BB check --quick --forward-only --filter fwd_ws_persistent > $OUT/logs/san_b.log 2>&1; echo "B memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" $OUT/logs/san_b.log | tail -2
fi
for t in batched do-bench batched2; do
  timeout 150 $B bench --d ${BENCH_D:-64,128} --timing ${t%2} --json $OUT/ours_$t.jsonl > $OUT/logs/ours_$t.log 2>&1; echo "ours $t rc=$?"
done
PYTHONUNBUFFERED=1 OUT=$OUT ANCHOR_D=${BENCH_D:-64,128} timeout 300 python3 bench/anchor_timing.py > $OUT/logs/anchor_timing.log 2>&1; echo "anchor timing rc=$?"
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
python3 - "$OUT" <<'PY'
import json, sys, collections
out = sys.argv[1]; rows = collections.OrderedDict()
def load(f, tag):
    try:
        for l in open(f"{out}/{f}"):
            r = json.loads(l)
            if r.get("kind") == "fwd" and r.get("config", "default") == "default":
                rows.setdefault((r["D"], r["N"], r["causal"]), {})[tag] = r["tflops"]
    except FileNotFoundError: pass
load("ours_batched.jsonl", "ours-b"); load("ours_do-bench.jsonl", "ours-d"); load("ours_batched2.jsonl", "ours-b2")
for l in open(f"{out}/anchor_timing.jsonl"):
    r = json.loads(l); tag = ("tri" if r["impl"].startswith("triton") else "cud") + ("-d" if r["timing"] == "do-bench" else "-b")
    rows.setdefault((r["D"], r["N"], r["causal"]), {})[tag] = r["tflops"]
print(f"{'D':>3} {'N':>5} c | ours-b ours-d ours-b2 | tri-b tri-d | cud-b cud-d | vsTri b/d | vsCud b/d")
g = lambda x, k: x.get(k, float('nan'))
for (d, n, c), x in rows.items():
    print(f"{d:3} {n:5} {int(c)} | {g(x,'ours-b'):6.1f} {g(x,'ours-d'):6.1f} {g(x,'ours-b2'):7.1f} | {g(x,'tri-b'):5.1f} {g(x,'tri-d'):5.1f} | {g(x,'cud-b'):5.1f} {g(x,'cud-d'):5.1f} | "
          f"{g(x,'ours-b')/g(x,'tri-b'):.3f}/{g(x,'ours-d')/g(x,'tri-d'):.3f} | {g(x,'ours-b')/g(x,'cud-b'):.3f}/{g(x,'ours-d')/g(x,'cud-d'):.3f}")
PY
