O=${OUT:-/tmp/o}; mkdir -p $O
bash python/tools/device.sh overhead > $O/py.txt 2>&1; tail -22 $O/py.txt | cut -c1-400
xz -dc .carry/flashgen.xz > /tmp/fg && chmod +x /tmp/fg
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > $O/smi.csv 2>&1 & S=$!
for r in 1 2; do
 for m in fb b; do
  f=""; [ $m = b ] && f="--backward-only"
  date +%T.%N >> $O/marks.txt; echo "$m$r start" >> $O/marks.txt
  timeout 100 /tmp/fg bench --d 128 --n 4096,16384 --causal 1 --backward $f --timing do-bench --json $O/$m$r.jsonl > $O/$m$r.log 2>&1
  date +%T.%N >> $O/marks.txt
 done
done
kill $S
for f in $O/fb*.jsonl $O/b*.jsonl; do python3 -c "
import json,sys
for l in open('$f'):
  r=json.loads(l); print('$f'.split('/')[-1], r['kind'], r['N'], round(r['tflops']), r['ms'], r['p20_ms'], r['p80_ms'])"; done
