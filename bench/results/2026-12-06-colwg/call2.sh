#!/bin/bash
# Session 23, call 2: racecheck's hazards in the column warpgroups (80, all in bwd_dkdv_wgmma D256 64×64×8,
# between the exchange's stores and loads): the same build with both hand-overs as bar.sync rendezvous
# (flashgen_sync: `bar.arrive` → `bar.sync`, nothing else changed), under racecheck; then both builds'
# D256 backward rows, one process each, alternating.
set -u
R=$OUT; T=/tmp/o3; rm -rf $T; mkdir -p $T
OUT=$T/s BIN=flashgen_sync CALL_LIMIT=200 SANITIZE_TIMEOUT=120 SANITIZE_RUNS="racecheck _d256_ --skip-geometry" bash bench/device.sh sanitizers > /dev/null 2>&1
cp $T/s/summary.txt $R/s_summary.txt
for b in flashgen flashgen_sync; do xz -dc .carry/$b.xz > /tmp/$b; chmod +x /tmp/$b; done
for r in 1 2; do for b in flashgen flashgen_sync; do
  timeout 60 /tmp/$b bench --d 256 --n 4096,16384 --causal 0,1 --backward --backward-only --timing do-bench --json $T/${b}_$r.jsonl > $T/${b}_$r.txt 2>&1
done; done
cat $T/*.jsonl > $R/rows.jsonl; tar czf $R/logs.tgz -C $T . 2>/dev/null
sed -n '/^---- /,$p' $R/s_summary.txt | grep -v "^ *$" | tail -4
for f in $T/*_[12].txt; do echo "== $(basename $f)"; grep -E "^bwd " $f; done
