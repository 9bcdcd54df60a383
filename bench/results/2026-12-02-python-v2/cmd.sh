# python-v2: the Python package's GPU tests, the small call's host cost (twice), the candle op's test and training
R=/tmp/res; rm -rf $R; mkdir -p $R
OUT=$R bash python/tools/device.sh tests overhead candle > $R/device.txt 2>&1
PYTHONPATH=/tmp/flashgen-site python3 python/tools/timing.py overhead --parts --out $R/overhead2.jsonl > $R/overhead2.log 2>&1
grep -E "passed|failed|error" $R/pytest.log | tail -3
grep "test result" $R/candle_gpu_test.log; tail -4 $R/candle_train.log
python3 - $R <<'PY'
import json, sys, glob
for f in [sys.argv[1] + "/python.jsonl", sys.argv[1] + "/overhead2.jsonl"]:
    for l in open(f):
        r = json.loads(l)
        print(f"{f.split('/')[-1]:16} {r['impl'][:42]:42} gpu {r['gpu_us']:6.2f} host {r['host_us']:6.2f} loop {r['loop_us']:6.2f} above {r['above_kernel_us']:6.2f}")
PY
cp $R/env.txt $R/pytest.log $R/candle_gpu_test.log $R/candle_train.log ${OUT:-/tmp}/ 2>/dev/null
cat $R/python.jsonl $R/overhead2.jsonl > ${OUT:-/tmp}/overhead.jsonl; cp $R/candle.jsonl ${OUT:-/tmp}/ 2>/dev/null
tar czf ${OUT:-/tmp}/all.tgz -C $R .
