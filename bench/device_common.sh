# Sourced by the device scripts: unpack the carried binaries, record the environment, and the steps both
# scripts run the same way. Expects OUT and COMMIT; defines B (the flashgen binary) and BIN.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BIN=/tmp/flashgen-bin; mkdir -p $BIN
for f in .carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f" "$BIN/$(basename "$f" .xz)"; chmod +x "$BIN/$(basename "$f" .xz)"; done
B=$BIN/flashgen
{ date -u; echo "commit ${COMMIT:-unknown}"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; } | tee "$OUT/env.txt"
export FLASHGEN_CACHE_DIR=/tmp/flashgen-cache-run; rm -rf $FLASHGEN_CACHE_DIR; mkdir -p $FLASHGEN_CACHE_DIR

# The mma.sync kernels (what FLASHGEN_WGMMA=0 selects on sm_90a; the defaults on other targets): the
# quick suite, forward and backward.
mma_sync_check() {
  echo "== check --quick --mma-sync (the kernels FLASHGEN_WGMMA=0 selects)"
  timeout 240 $B check --quick --mma-sync --json /tmp/check_mma.jsonl > /tmp/check_mma.log 2>&1; local rc=$?
  cat /tmp/check_mma.log >> "$OUT/extras.log"; cat /tmp/check_mma.jsonl >> "$OUT/check.jsonl" 2>/dev/null
  grep -E "passed, |FAIL|error" /tmp/check_mma.log | tail -6; echo "mma.sync check rc=$rc"
}

# compute-sanitizer over `check --quick`, one "tool filter [check flags]" per argument; a line each to
# $OUT/extras.log with the exit code and the summaries.
sanitize() {
  local t
  for t in "$@"; do
    set -- $t; timeout ${SANITIZE_TIMEOUT:-120} compute-sanitizer --tool $1 $B check --quick --filter $2 ${3:-} > /tmp/san.log 2>&1
    echo "$1 $2 rc=$?" | tee -a "$OUT/extras.log"; grep -E "passed, |ERROR SUMMARY|RACECHECK SUMMARY" /tmp/san.log | tail -2 | tee -a "$OUT/extras.log"
    # the first reports in full (which accesses, which barrier), to the log only
    grep -v -E "^(fa2_|backward|GPU:|generated|tiled)" /tmp/san.log | grep -m1 -B2 -A24 -E "^========= (Error|Warning|Invalid|Race)" >> "$OUT/extras.log"
  done
}

# The first call of a fresh process, with a cold cache then a warm one (the second must not run LLVM), rows to
# $OUT/runtime.jsonl; then the prebuilt path (kernels embedded by build.rs, runtime without LLVM).
first_calls() {
  echo "== first call, cold cache then warm"; $B first-call | tee -a "$OUT/runtime.jsonl"; $B first-call | tee -a "$OUT/runtime.jsonl"
  if [ -x $BIN/prebuilt ]; then
    echo "== prebuilt path"; FLASHGEN_CACHE_DIR=off $BIN/prebuilt > /tmp/prebuilt.log 2>&1; echo "prebuilt rc=$?"
    tail -3 /tmp/prebuilt.log; cat /tmp/prebuilt.log >> "$OUT/extras.log"
  fi
}

# Autotune every key of TUNE_KERNELS from a cold cache ("$@": more autotune flags), so every config is compiled
# inside the measured time: rows to $OUT/runtime.jsonl, the log to $OUT/extras.log, a line per key with its
# seconds and where they went; the winners then join the run's cache (for `bench --tuned`).
autotune_cold() {
  echo "== autotune (cold)"; rm -rf /tmp/flashgen-tune-cache
  FLASHGEN_CACHE_DIR=/tmp/flashgen-tune-cache $B autotune --kernel ${TUNE_KERNELS:-fwd,bwd_dkdv,bwd_dq} "$@" > /tmp/autotune.log 2>&1; echo "autotune rc=$?"
  grep '"kind": "autotune"' /tmp/autotune.log > /tmp/autotune.jsonl; cat /tmp/autotune.jsonl >> "$OUT/runtime.jsonl"; cat /tmp/autotune.log >> "$OUT/extras.log"
  cp -r /tmp/flashgen-tune-cache/autotune "$FLASHGEN_CACHE_DIR/" 2>/dev/null
  python3 -c "
import json
rows = [json.loads(l) for l in open('/tmp/autotune.jsonl')]
for r in rows: print(f\"{r['key']:<50} {r['seconds']:.2f} s (setup {r['setup_s']:.2f}, compile wait {r['compile_wait_s']:.2f}, check {r['verify_s']:.2f}, time {r['time_s']:.2f})  {r.get('best')}\")
print('keys', len(rows), 'max', max((r['seconds'] for r in rows), default=0), 'over 2 s:', sum(r['seconds'] > 2 for r in rows))"
}
