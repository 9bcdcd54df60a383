#!/bin/bash
# Session 23, call 4: HEAD_DIM 256's backward with softcap 30 and with a 1024-key window (Gemma's layers) on
# the column warpgroups (the default since colwg, P times softcap's derivative handed over) beside the
# column slices they ran before (32×64×4), one process each.
set -u
R=$OUT; T=/tmp/o5; rm -rf $T; mkdir -p $T
xz -dc .carry/flashgen.xz > /tmp/fg; chmod +x /tmp/fg
C="w:32,64,4,2|64,32,4,2"
timeout 60 /tmp/fg bench --d 256 --n 4096,16384 --causal 1 --softcap 30 --backward --backward-only --timing do-bench --bwd-configs "$C" --json $T/cap.jsonl > $T/cap.txt 2>&1
timeout 60 /tmp/fg bench --d 256 --n 16384 --causal 1 --window-left 1024 --backward --backward-only --timing do-bench --bwd-configs "$C" --json $T/win.jsonl > $T/win.txt 2>&1
cat $T/*.jsonl > $R/rows.jsonl; tar czf $R/logs.tgz -C $T . 2>/dev/null
for f in cap win; do echo "== $f"; grep -E "^bwd " $T/$f.txt; tail -2 $T/$f.txt; done
