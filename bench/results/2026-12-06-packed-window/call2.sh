#!/usr/bin/env bash
# Second call, build d36d5ca (the pair's dQ kernel on 128 query rows at 192 and 256 by default):
# `flashgen check --quick` over the 192 and 256 cases (the new dQ tiles' gradients against f64), memcheck
# and racecheck on them, and racecheck over the window-fused cases (the packed window's included).
# carry: .carry/flashgen.xz .carry/build.txt
mkdir -p /tmp/fg-bin && xz -dc .carry/flashgen.xz > /tmp/fg-bin/flashgen && chmod +x /tmp/fg-bin/flashgen
B=/tmp/fg-bin/flashgen
timeout 150 "$B" check --quick --filter bm128_bn64_w8_ns2_sm90a,bm128_bn32_w8_ns2_sm90a > "$OUT/check_dq.log" 2>&1; echo "check rc=$?" | tee "$OUT/steps.txt"
tail -4 "$OUT/check_dq.log"
SANITIZE_RUNS="memcheck dq_wgmma_bf16_d256_st1_bm128;racecheck dq_wgmma_bf16_d192_st3_bm128;racecheck window-fused" SANITIZE_TIMEOUT=110 \
CALL_LIMIT=330 bash bench/device.sh sanitizers || true
cat "$OUT/summary.txt" | tail -12
