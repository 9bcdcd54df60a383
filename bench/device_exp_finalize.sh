set -u
source bench/device_common.sh
for v in flashgen flashgen_c flashgen_d flashgen; do
  echo "== $v"; timeout 120 $BIN/$v bench --backward --backward-only --fused --dq-chains 1 --bwd-configs ";" --d 128 --n 4096,16384 --reps 5 --json "$OUT/bench_$v.jsonl" > /tmp/b.log 2>&1; echo "rc=$?"; cat /tmp/b.log >> $OUT/bench_all.log
  grep -A40 "=== flashgen" /tmp/b.log | grep -E "^bwd" | grep -E "fused|default"
done
