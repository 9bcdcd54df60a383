# A/B of the D64 wgmma backward's programs per SM (FLASHGEN_BWD_MINCTAS="dkdv,dq" in the B build), one call
source bench/device_common.sh
BB=$BIN/flashgen_b
FLASHGEN_BWD_MINCTAS=3,4 timeout 90 $BB check --filter dkdv_wgmma --json $OUT/check_b.jsonl > $OUT/check_b.log 2>&1; echo "B check (3,4) rc=$?"; grep -E "passed, |FAIL" $OUT/check_b.log | tail -3
FLASHGEN_BWD_MINCTAS=3,4 timeout 60 compute-sanitizer --tool memcheck $BB check --quick --filter dkdv_wgmma_bf16_d64 > $OUT/memcheck_b.log 2>&1; echo "B memcheck rc=$?"; grep -E "passed, |ERROR SUMMARY" $OUT/memcheck_b.log | tail -2
VS=("a:" "b:3,1" "c:3,4" "d:1,4")
for r in 1 2; do for i in 0 1 2 3; do
  v=${VS[$(( (i + r - 1) % 4 ))]}; tag=${v%%:*}; m=${v#*:}; bin=$BB; [ $tag = a ] && bin=$B
  [ $SECONDS -gt 230 ] && { echo "stop at ${SECONDS} s"; break 2; }
  FLASHGEN_CACHE_DIR=/tmp/fgc-$tag FLASHGEN_BWD_MINCTAS=$m timeout 40 $bin bench --d 64 --n 1024,4096,16384 --backward --backward-only --timing do-bench --json $OUT/${tag}_$r.jsonl > /dev/null 2>&1; echo "$tag round $r rc=$? ($SECONDS s)"
done; done
python3 - $OUT <<'PY'
import json,sys,glob,collections
t=collections.defaultdict(lambda: collections.defaultdict(list))
with open(sys.argv[1]+"/ab.jsonl","w") as out:
  for f in sorted(glob.glob(sys.argv[1]+"/?_?.jsonl")):
    tag,r=f.rsplit("/",1)[1][:-6].split("_")
    for l in open(f):
      x=json.loads(l); x["variant"]=tag; x["round"]=int(r); out.write(json.dumps(x)+"\n")
      if x.get("kind")=="bwd": t[(x["N"],int(x["causal"]))][tag].append(x["tflops"])
for k,v in sorted(t.items()):
  a=sum(v["a"])/len(v["a"])
  print(k," ".join(f"{g}={min(xs):.1f}-{max(xs):.1f}({sum(xs)/len(xs)/a:.3f})" for g,xs in sorted(v.items())))
PY
rm -f $OUT/?_?.jsonl
