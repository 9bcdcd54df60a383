# Sourced by the device scripts: unpack the carried binaries, record the environment, and the steps both
# scripts run the same way. Expects OUT and COMMIT; defines B (the flashgen binary) and BIN.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BIN=/tmp/flashgen-bin; mkdir -p $BIN
for f in .carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f" "$BIN/$(basename "$f" .xz)"; chmod +x "$BIN/$(basename "$f" .xz)"; done
B=$BIN/flashgen
{ date -u; echo "commit ${COMMIT:-unknown}"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; } | tee "$OUT/env.txt"
export FLASHGEN_CACHE_DIR=/tmp/flashgen-cache-run; rm -rf $FLASHGEN_CACHE_DIR

# The Hopper forward (fwd_wgmma) is checked in its own process (a kernel not yet proven on the GPU may
# fault); WGMMA_BENCH becomes "--wgmma" (the bench then times it, label "wgmma") only when every check passed.
wgmma_check() {
  WGMMA_BENCH=""
  [ "${WGMMA:-1}" = 1 ] || return 0
  echo "== wgmma forward check (own process)"
  timeout 240 $B check --wgmma --quick --json /tmp/check_wgmma.jsonl > /tmp/check_wgmma.log 2>&1; local rc=$?
  cat /tmp/check_wgmma.log >> "$OUT/extras.log"; cat /tmp/check_wgmma.jsonl >> "$OUT/check.jsonl" 2>/dev/null
  grep -E "passed, |FAIL|error" /tmp/check_wgmma.log | tail -12; echo "wgmma check rc=$rc"
  if [ $rc = 0 ]; then WGMMA_BENCH="--wgmma"; fi
}
