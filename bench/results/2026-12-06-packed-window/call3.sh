#!/usr/bin/env bash
# Third call: racecheck's 20 hazards in bwd_dkdv_wgmma's column warpgroups at 192 (call2): the same cases under
# racecheck with the P/dS exchange's two bar.arrive made bar.sync (flashgen_sync: d36d5ca with that edit, not
# committed): 0 hazards there would make them the tool's reading of arrive (a release in PTX), as
# finalize-ab2 found for the fused writer's staging. Then the default build on 192 non-causal and 256.
# carry: .carry/flashgen.xz .carry/flashgen_sync.xz .carry/build.txt
SANITIZE_RUNS="racecheck dkdv_wgmma_bf16_d192_st3" BIN=flashgen_sync SANITIZE_TIMEOUT=60 CALL_LIMIT=70 \
  bash bench/device.sh sanitizers || true
cp "$OUT/summary.txt" "$OUT/summary_sync.txt"
SANITIZE_RUNS="racecheck dkdv_wgmma_bf16_d192_st3;racecheck dkdv_wgmma_bf16_d256_st1" SANITIZE_TIMEOUT=60 CALL_LIMIT=130 \
  bash bench/device.sh sanitizers || true
grep -h -A3 "^---- sanitizers" "$OUT/summary_sync.txt" "$OUT/summary.txt"
