#!/usr/bin/env bash
# Autotune every key of the anchors' rows from a cold cache (fwd, bwd_dkdv, bwd_dq: 36 keys), printing each
# key's seconds and where they went; then compute-sanitizer on the backward defaults. Same .carry/.
set -u -o pipefail
source bench/device_common.sh
echo "== autotune (cold)"; rm -rf /tmp/flashgen-tune-cache
FLASHGEN_CACHE_DIR=/tmp/flashgen-tune-cache $B autotune --kernel ${TUNE_KERNELS:-fwd,bwd_dkdv,bwd_dq} > "$OUT/autotune.log" 2>&1; echo "autotune rc=$?"
grep '"kind": "autotune"' "$OUT/autotune.log" > "$OUT/runtime.jsonl"
python3 -c "
import json,sys
rows=[json.loads(l) for l in open('$OUT/runtime.jsonl')]
for r in rows: print(f\"{r['key']:<50} {r['seconds']:.2f} s (setup {r['setup_s']:.2f}, compile wait {r['compile_wait_s']:.2f}, check {r['verify_s']:.2f}, time {r['time_s']:.2f})\")
print('keys', len(rows), 'max', max(r['seconds'] for r in rows), 'over 2 s:', sum(r['seconds'] > 2 for r in rows))"
echo "== memcheck / racecheck (backward defaults)"
sanitize "memcheck dkdv_wgmma_bf16" "racecheck dkdv_wgmma_bf16_d64" "racecheck dq_wgmma_bf16_d128"
