#!/usr/bin/env bash
# The full correctness suite on the warp-specialized forward (every length of `check`, long N, BSHD, extra
# tile shapes), the cold and warm first call, Triton parity of the defaults (fwd_ws at HEAD_DIM 128) and the
# prebuilt path (default set embedded, no LLVM). Same .carry/ as device_run.sh (with prebuilt.xz).
set -u -o pipefail
source bench/device_common.sh
first_calls
WS_SPECS=${WS_SPECS:-"ws:bf16,128,192,64,1,16,2;ws:fp16,128,192,32,3,16,2;ws:bf16,64,128,64,3,12,2;ws:fp16,64,192,64,1,16,3;ws:bf16,128,128,64,3,12,3"}
echo "== check (full) fwd_ws"; timeout ${CHECK_TIMEOUT:-220} $B check --forward-only --filter fwd_ws --specs "$WS_SPECS" --json "$OUT/check.jsonl" --parity-dir /tmp/parity > "$OUT/check.log" 2>&1; echo "check rc=$?"
grep -E "passed, |FAIL|error" "$OUT/check.log" | tail -8
echo "== Triton parity (seed kernel, same inputs)"; PYTHONUNBUFFERED=1 timeout ${PARITY_TIMEOUT:-120} python3 bench/triton_parity.py /tmp/parity .carry/anchor_bench.py 2>&1 | tee "$OUT/parity.jsonl" | tail -9
