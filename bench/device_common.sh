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
  done
}
