#!/bin/bash
# Session 32, on an H200: the GPU tests whose names hold "fused" (early_next_tile's bit-for-bit test is not
# one of them: it ran in a call of its own, then all of tests/gpu.rs), then the geometry cases of `check --quick`
# (GQA, N_q != N_kv, packed, vacant tiles, the fused modifiers) on main with the staged epilogue, their
# rows streamed to geometry.jsonl as they finish.
set -u
LIMIT=${LIMIT:-570}
R=$OUT; mkdir -p /tmp/fg-bin
xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen; chmod +x /tmp/fg-bin/flashgen
xz -dc .carry/gpu_test.xz > /tmp/fg-bin/gpu_test; chmod +x /tmp/fg-bin/gpu_test
F=/tmp/fg-bin/flashgen; export FLASHGEN_CACHE_DIR=/tmp/t/c
S=$R/summary.txt
{ date -u; cat .carry/build.txt; nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader; } > $S
left() { echo $((LIMIT-SECONDS)); }
timeout 150 /tmp/fg-bin/gpu_test --ignored fused > $R/gpu_test.log 2>&1
echo "gpu tests (fused) rc=$? $(grep -E 'test result' $R/gpu_test.log)" >> $S
grep -E "^test " $R/gpu_test.log >> $S
timeout $(( $(left) - 10 )) $F check --quick --skip-decode --filter "gqa,N_q,varlen,vacant,fused-mods" --json $R/geometry.jsonl > $R/geometry.log 2>&1
echo "geometry rc=$? $(grep -c '"pass":true' $R/geometry.jsonl) pass $(grep -c '"pass":false' $R/geometry.jsonl) fail; $(tail -2 $R/geometry.log | tr '\n' ' ')" >> $S
cat $S
