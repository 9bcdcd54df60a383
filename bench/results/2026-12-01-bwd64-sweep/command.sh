source bench/device_common.sh
timeout 400 $B bench --d 64 --n 1024,4096,16384 --backward --backward-only --fused --timing do-bench --bwd-configs "w:64,64,4,3|64,64,4,3;w:64,128,8,2|64,64,4,2;w:64,128,8,2|128,64,8,3;w:64,64,4,2|128,64,8,3;w:32,64,4,2|64,64,4,2;w:64,64,4,4|64,64,4,2;w:64,128,8,3|128,64,8,2;f:64,64,8,3" --json $OUT/bwd64.jsonl > $OUT/bwd64.log 2>&1; echo "rc=$?"
python3 - $OUT/bwd64.jsonl <<'PY'
import json,sys,collections
t=collections.defaultdict(dict)
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r.get('kind')=='bwd': t[(r['N'],int(r['causal']))][r['config']]=r['tflops']
for k,v in sorted(t.items()):
    d=v.get('default')
    print(k, ' '.join(f"{c}={x:.1f}({x/d:.3f})" for c,x in sorted(v.items(), key=lambda a:-a[1])))
PY
