#!/usr/bin/env bash
# One call, build 7603c01 (bwd_fused_up takes a causal window on packed sequences) and main 5a826d9:
# 1. (after 2) `flashgen check --quick` over the window-fused cases under memcheck, the packed window's kernels under
#    racecheck (their gradients against the f64 reference, and the tools' verdicts);
# 2. fa4_bench.py's varlen batch (seed 0, H 16) with a 1024-key causal window, backward, D64 and D128: the
#    fused kernel (new) against the pair it replaces (main), one process per variant, two rounds;
# 3. the wgmma pair's dQ kernel at 192/128 and 256 in other tiles (128 query rows on two warpgroups, 64-key
#    blocks, 3 stages) beside the default 64×32×4×2, and 192/128's dK/dV on 3 stages, one process (bench --bwd-configs);
# 4. the D96 non-causal forward on FA3's 128×176 tile (fwd_ws, split ring) beside its default.
# carry: .carry/flashgen.xz .carry/flashgen_main.xz .carry/build.txt
SANITIZE_RUNS="memcheck window-fused;racecheck varlen_emptyrows_window" SANITIZE_TIMEOUT=125 \
VARIANTS="main:bin=flashgen_main;new:" BACKWARD=1 D=64,128 CAUSAL=1 ROUNDS=2 \
BENCH_ARGS="--varlen 0 --window-left 1024" CALL_LIMIT=340 \
  bash bench/device.sh variants sanitizers || true
B=/tmp/fg-bin/flashgen
DQ=/tmp/dq-tiles.log
{
  timeout 90 "$B" bench --d 192 --dv 128 --n 4096,16384 --backward --backward-only --timing do-bench \
    --bwd-configs "w:64,64,8,2|128,32,8,2;w:64,64,8,2|128,64,8,2;w:64,64,8,2|128,32,8,3;w:64,64,8,2|64,32,4,3;w:64,64,8,3|64,32,4,2" \
    --json "$OUT/dq_tiles.jsonl"
  timeout 60 "$B" bench --d 256 --n 4096,16384 --backward --backward-only --timing do-bench \
    --bwd-configs "w:64,64,8,2|128,32,8,2;w:64,64,8,2|128,32,8,3;w:64,64,8,2|64,32,4,3" \
    --json "$OUT/dq_tiles.jsonl"
  timeout 35 "$B" bench --d 96 --n 4096,16384 --causal 0 --timing do-bench --configs "ws:128,176,12,2" \
    --json "$OUT/dq_tiles.jsonl"
} > "$DQ" 2>&1 || true
cp "$DQ" "$OUT/dq_tiles.log"
cat "$OUT/summary.txt" 2>/dev/null | tail -30
grep -E "bwd|fwd|config" "$DQ" | tail -60
