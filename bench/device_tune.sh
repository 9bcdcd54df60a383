#!/usr/bin/env bash
# Autotune every key of the anchors' rows from a cold cache (fwd, bwd_dkdv, bwd_dq: 36 keys), printing each
# key's seconds and where they went; then compute-sanitizer on the backward defaults. Same .carry/.
set -u -o pipefail
source bench/device_common.sh
autotune_cold
echo "== memcheck / racecheck (backward defaults)"
sanitize "memcheck dkdv_wgmma_bf16" "racecheck dkdv_wgmma_bf16_d64" "racecheck dq_wgmma_bf16_d128"
