#!/usr/bin/env bash
# bench/device.sh: every GPU run of flashgen, one driver with named profiles. It runs on the device machine
# (the H200), in the repository root, from binaries built here and carried in .carry/ (ignored by git):
#
#     bash bench/device.sh PROFILE [PROFILE ...]        several profiles run in one call, in order
#
# Profiles
#   stash       FA4, call 1 of 2: copies .carry/fa4-site.tar.xz.part1 to /tmp/stash (a warm machine keeps /tmp;
#               the FA4 package is too large for one call: ../shared/anchors/README.md)
#   table       every default forward and backward, PASSES (2) passes of ours on the anchors' timer with the
#               anchors between them: anchor_bench.py (Triton's seed FA2, SDPA FA2, cuDNN) and FA4
#               (fa4_bench.py, FA4_MODES=table); a table of ours (min-max over passes) and ratios last
#   modes       fa4_bench.py's gqa, varlen, decode, window and hdim shapes (MODES): ours (flashgen bench) and FA4's
#   checks      the first call (cold, then warm), `flashgen check`, the mma.sync path, Triton parity, the GPU
#               tests (`cargo test` binary with --ignored), the prebuilt path (no LLVM)
#   sanitizers  compute-sanitizer memcheck and racecheck over `flashgen check --quick` on the default kernels
#   autotune    every key from a cold cache (seconds per key), then the tuned configs timed beside the defaults
#   variants    A/B in rotated rounds, each variant a process of its own: carried builds, schedules, configs,
#               environment switches (VARIANTS)
#   ncu         Nsight Compute on one launch of each named kernel; the stall samples per SASS line
#   ring        ring attention on virtual ranks (`flashgen ring-bench --virtual`): checked against one GPU's
#               kernels, then both timed on the anchors' timer (issue 35)
#
# Build here (repository root), then carry. The device tool sends the checkout plus the `carry` paths: at
# most 8 paths and 64 MiB in all, so the binaries travel xz-compressed (~12 MB each) and the FA4 package in
# two calls. ../shared does not travel.
#     eval "$(bash scripts/setup.sh)"
#     cargo build --release -p flashgen-cli
#     mkdir -p .carry && xz -T2 -c target/release/flashgen > .carry/flashgen.xz
#     git describe --always --dirty > .carry/build.txt                         # the build's commit
#     cp ../shared/anchors/anchor_bench.py ../shared/anchors/fa4_bench.py .carry/
#     cp ../shared/anchors/fa4/fa4-site.tar.xz.part1 ../shared/anchors/fa4/fa4-site.tar.xz.part2 .carry/
#   checks also takes the GPU test binary and the prebuilt example (built alone, so it links no LLVM):
#     cargo test --release -p flashgen-tests --test gpu --no-run
#     xz -T2 -c "$(ls -t target/release/deps/gpu-* | grep -v '\.d$' | head -1)" > .carry/gpu_test.xz
#   (and the same for tests/gpu_decode.rs, gpu_geometry.rs: .carry/gpu_decode_test.xz, gpu_geometry_test.xz)
#     cargo build --release -p flashgen-prebuilt-example
#     xz -T2 -c target/release/flashgen-prebuilt-example > .carry/prebuilt.xz
#   variants takes other builds as .carry/flashgen_<name>.xz (e.g. a patched tree's target/release/flashgen).
#
# Device commands (the device tool's `run`; carry exactly these paths)
#   table, call 1:  bash bench/device.sh stash
#                   carry .carry/fa4-site.tar.xz.part1                                      (a few seconds)
#   table, call 2 (at once, while the machine is warm):
#                   bash bench/device.sh table
#                   carry .carry/flashgen.xz .carry/build.txt .carry/anchor_bench.py .carry/fa4_bench.py
#                         .carry/fa4-site.tar.xz.part2
#                   (no /tmp/stash there, i.e. a fresh machine: the table runs without FA4 and says so)
#   checks:         bash bench/device.sh checks
#                   carry .carry/flashgen.xz .carry/build.txt .carry/gpu_test.xz .carry/prebuilt.xz .carry/anchor_bench.py
#   sanitizers:     bash bench/device.sh sanitizers             carry .carry/flashgen.xz .carry/build.txt
#   autotune:       bash bench/device.sh autotune               carry .carry/flashgen.xz .carry/build.txt
#   variants:       VARIANTS="a:;b:bin=flashgen_b" D=64 N=1024,2048 bash bench/device.sh variants
#                   carry .carry/flashgen.xz .carry/flashgen_b.xz .carry/build.txt
#   ncu:            NCU_RUNS="d64c|fa2_fwd_ws_persistent_bf16_d64_st3|--d 64 --n 1024 --causal 1" bash bench/device.sh ncu
#                   carry .carry/flashgen.xz .carry/build.txt
#
# Settings (environment; the defaults in brackets)
#   all         BIN [flashgen]: the carried build the single-build profiles run (.carry/$BIN.xz)
#               D [64,128], N [1024,4096,16384], CAUSAL [0,1]: the rows (bench, anchors, autotune)
#               SCHEDULE: `--schedule` for every `flashgen bench` (e.g. lazy_rescale=off,cross_tile=on)
#               BENCH_CONFIGS: `--configs` for every bench ("wsp:256,64,20,8;ws:128,128,12,3")
#               BENCH_ARGS: more bench flags; WARMUP_MS [0]: bench --warmup-ms (300 read us 8-10% low: warmup-ab)
#               CALL_LIMIT [585]: seconds; a step that would end past it is cut to fit, or skipped
#               SMI_MS: sample the SM clock, power and throttle reasons every SMI_MS ms into logs/smi.csv
#               COMMIT: the build's commit, if .carry/build.txt is not carried
#   table       PASSES [2], BACKWARD [1] (0: forward only; only: backward only), ANCHORS [1], FA4 [1],
#               FA4_MODES [table], BENCH_TIMEOUT [150], ANCHOR_TIMEOUT [280], FA4_TIMEOUT [240]
#   checks      CHECK_ARGS [--quick --fused-backward] (no --quick: every length; --filter NAME; --specs ...),
#               CHECK_TIMEOUT [300], MMA_SYNC [1], PARITY [1], GPU_TEST_ARGS (a test name filter)
#   sanitizers  SANITIZE_RUNS ["tool filter [check flags];..."; default below], SANITIZE_TIMEOUT [150],
#               SANITIZE_TESTS ["tool binary test;...": a carried GPU test binary's test under the tool]
#   autotune    TUNE_KERNELS [fwd,bwd_dkdv,bwd_dq], TUNE_TIMEOUT [400], TUNED_BENCH [1]
#   variants    VARIANTS (required) "tag:words;tag:words": words `bin=NAME` (.carry/NAME.xz), `NAME=value`
#               (an environment variable, upper case) and bench flags (e.g. `--schedule own_blocks=off`,
#               `--configs wsp:256,64,20,8`); the first variant is the reference. ROUNDS [2], order rotated
#               each round; BACKWARD [0] (1: the backward only); DECODE [0] (1: `bench --decode`'s rows, K/V GB/s
#               and the batch-1 step's µs, instead of the attention rows)
#   ring        RING_GPUS [2,4], RING_N [131072], RING_HEADS [16], RING_D [128], RING_CAUSAL [0,1],
#               RING_TIMEOUT [450], RING_VIRTUAL [1] (0: a rank per GPU over NCCL, on nvidia-h200-x2/x4)
#   ncu         NCU_RUNS (required) "name|kernel regex|bench args;..." (at most 2 a call: 8 files come back),
#               NCU_SKIP [2] launches skipped before the one profiled, NCU_TIMEOUT [200]
#
# Under $OUT (8 files at most come back): env.txt (date, commit, GPU, settings), summary.txt (each step's exit
# code, seconds and outcome, then the tables; printed last), rows.jsonl (every JSON row of the call, tagged
# "source": ours1, anchors1, fa4_1, check, v_<tag>_<round>, ...), logs.tgz (every log), and ncu's
# <name>.details.txt, <name>.sass.csv.xz. To keep a run: bench/results/<date>-<id>/ with these files, and a
# line in bench/results/README.md. Exit code: 0 when every step did.
set -euo pipefail
export PYTHONUNBUFFERED=1

OUT=${OUT:-/tmp/out}
WORK=/tmp/fg-work
LOGS=$WORK/logs
BINDIR=/tmp/fg-bin
CALL_LIMIT=${CALL_LIMIT:-585}
D=${D:-64,128}
N=${N:-1024,4096,16384}
CAUSAL=${CAUSAL:-0,1}
FAILED=0
FA4_OK=0
SMI_PID=""
B=""
EXTRA=()

die() {
  echo "bench/device.sh: $*" >&2
  if [ -f "$WORK/summary.txt" ]; then
    echo "stopped: $*" >> "$WORK/summary.txt"
  fi
  exit 2
}

# A line for summary.txt and the console.
note() {
  echo "$*" | tee -a "$WORK/summary.txt"
}

# The line of a step's log that says how it went.
outcome() {
  local log=$1 rc=$2 line
  line=$(grep -E 'passed, [0-9]+ failed|test result:|ERROR SUMMARY|RACECHECK SUMMARY|flashgen: error|^Traceback' "$log" | tail -1 || true)
  if [ -z "$line" ] && [ "$rc" != 0 ]; then
    line=$(tail -1 "$log" || true)
  fi
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    line="timed out${line:+; $line}"
  fi
  echo "${line:0:110}"
}

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in $LOGS/NAME.log, cut to what is left of
# CALL_LIMIT; one status line. A failed step is noted and the driver goes on.
step() {
  local name=$1 limit=$2 left t0 rc=0
  shift 2
  left=$((CALL_LIMIT - SECONDS))
  if ((left < 15)); then
    note "$(printf '%-24s skipped: %d s used of CALL_LIMIT=%d' "$name" "$SECONDS" "$CALL_LIMIT")"
    FAILED=1
    return 0
  fi
  if ((limit > left)); then
    limit=$left
  fi
  t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    FAILED=1
  fi
  note "$(printf '%-24s rc=%-3s %4d s  %s' "$name" "$rc" $((SECONDS - t0)) "$(outcome "$LOGS/$name.log" "$rc")")"
}

# The carried builds, .carry/<name>.xz, unpacked into $BINDIR/<name> (fresh each call: carried files change).
unpack() {
  local f b
  rm -rf "$BINDIR"
  mkdir -p "$BINDIR"
  for f in .carry/*.xz; do
    [ -e "$f" ] || continue
    b=$BINDIR/$(basename "$f" .xz)
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$f" "$b"
    chmod +x "$b"
  done
}

need_bin() {
  B=$BINDIR/${BIN:-flashgen}
  [ -x "$B" ] || die "no build: carry .carry/${BIN:-flashgen}.xz (the header says how to make it)"
}

build_commit() {
  if [ -n "${COMMIT:-}" ]; then
    echo "$COMMIT"
  elif [ -f .carry/build.txt ]; then
    head -1 .carry/build.txt
  else
    echo "unknown (carry .carry/build.txt; the checkout here is $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
  fi
}

record_env() {
  local v
  {
    echo "date     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit   $(build_commit)"
    echo "gpu      $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null || echo unknown)"
    echo "profiles $*"
    for v in BIN D N CAUSAL PASSES BACKWARD SCHEDULE BENCH_CONFIGS BENCH_ARGS WARMUP_MS CHECK_ARGS SANITIZE_RUNS SANITIZE_TESTS \
      TUNE_KERNELS VARIANTS ROUNDS NCU_RUNS ANCHORS FA4 MODES FA4_MODES SMI_MS; do
      if [ -n "${!v:-}" ]; then
        echo "$v=${!v}"
      fi
    done
  } > "$WORK/env.txt"
  cat "$WORK/env.txt"
}

# EXTRA: the flags every `flashgen bench` takes from SCHEDULE, BENCH_CONFIGS and BENCH_ARGS; a variant's own
# --schedule or --configs (its flags, the arguments) replaces SCHEDULE's or BENCH_CONFIGS'.
bench_extra() {
  local more=() own=" $* "
  EXTRA=(--warmup-ms "${WARMUP_MS:-0}")
  if [ -n "${SCHEDULE:-}" ] && [[ $own != *" --schedule "* ]]; then
    EXTRA+=(--schedule "$SCHEDULE")
  fi
  if [ -n "${BENCH_CONFIGS:-}" ] && [[ $own != *" --configs "* ]]; then
    EXTRA+=(--configs "$BENCH_CONFIGS")
  fi
  if [ -n "${BENCH_ARGS:-}" ]; then
    read -ra more <<< "$BENCH_ARGS"
    EXTRA+=("${more[@]}")
  fi
}

# The rows of the call: fwd and bwd (BACKWARD=1), fwd only (0) or bwd only (only).
scope_flags() {
  case ${BACKWARD:-1} in
    0) ;;
    only) echo "--backward --backward-only" ;;
    *) echo "--backward" ;;
  esac
}

# ---- stash: FA4, call 1 ----
profile_stash() {
  [ -f .carry/fa4-site.tar.xz.part1 ] || die "stash: carry .carry/fa4-site.tar.xz.part1"
  mkdir -p /tmp/stash
  cp .carry/fa4-site.tar.xz.part1 /tmp/stash/
  note "stash: FA4 part 1 in /tmp/stash ($(du -h /tmp/stash/fa4-site.tar.xz.part1 | cut -f1)); make the table call now"
}

# FA4's package in /tmp/site (from /tmp/stash's part 1 and the carried part 2, or left by an earlier call):
# FA4_OK=1, or a line that says why FA4 is left out.
fa4_prepare() {
  local p1=/tmp/stash/fa4-site.tar.xz.part1
  FA4_OK=0
  if [ "${FA4:-1}" = 0 ]; then
    note "fa4: off (FA4=0)"
    return 0
  fi
  if [ ! -f .carry/fa4_bench.py ]; then
    note "fa4: left out: .carry/fa4_bench.py not carried"
    return 0
  fi
  if [ ! -d /tmp/site/flash_attn ]; then
    if [ ! -f "$p1" ] && [ -f .carry/fa4-site.tar.xz.part1 ]; then
      p1=.carry/fa4-site.tar.xz.part1
    fi
    if [ ! -f "$p1" ]; then
      note "fa4: left out: no /tmp/stash/fa4-site.tar.xz.part1 (a fresh machine): run the stash call, then this one at once"
      return 0
    fi
    if [ ! -f .carry/fa4-site.tar.xz.part2 ]; then
      note "fa4: left out: .carry/fa4-site.tar.xz.part2 not carried"
      return 0
    fi
    # shellcheck disable=SC2016 # $1 is the inner shell's
    step fa4_unpack 120 bash -c 'set -e; cat "$1" .carry/fa4-site.tar.xz.part2 > /tmp/fa4.tar.xz; sha256sum /tmp/fa4.tar.xz; mkdir -p /tmp/site; tar -C /tmp/site -xJf /tmp/fa4.tar.xz; rm /tmp/fa4.tar.xz' _ "$p1"
    [ -d /tmp/site/flash_attn ] || return 0
  fi
  FA4_OK=1
}

# The anchors between two passes of ours (gap $1): anchor_bench.py, then FA4.
anchors_between() {
  local i=$1
  if [ "${ANCHORS:-1}" != 0 ]; then
    if [ -f .carry/anchor_bench.py ]; then
      step "anchors$i" "${ANCHOR_TIMEOUT:-280}" env OUT="$WORK" ANCHOR_D="$D" ANCHOR_N="$N" python3 .carry/anchor_bench.py
      rm -f "$WORK/anchors.json"
    else
      note "anchors: left out: .carry/anchor_bench.py not carried"
    fi
  fi
  if [ "$FA4_OK" = 1 ]; then
    step "fa4_$i" "${FA4_TIMEOUT:-240}" env PYTHONPATH="/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}" \
      PYTHONWARNINGS=ignore FA4_MODES="${FA4_MODES:-table}" python3 .carry/fa4_bench.py
  fi
}

# ---- table: ours, anchors, ours ----
# modes: fa4_bench.py's other shapes, ours and FA4's in one call: gqa (B 1, 64 query heads on 8 K/V heads, D 128,
# N 4096/16384), varlen (its seed-0 batch, H 16, D 128) forward and backward, decode (flashgen bench --decode),
# window (window 1024 causal, D 128, N 16384, H 16: forward, the backward on its default and the pair;
# softcap 30 forward), then FA4 in the same modes (and cuDNN's GQA rows, which fa4_bench.py times beside FA4's).
# MODES [gqa,varlen,decode] picks them; FA4_MODES [MODES] FA4's alone.
profile_modes() {
  need_bin
  bench_extra
  fa4_prepare
  local modes=",${MODES:-gqa,varlen,decode},"
  if [[ $modes == *,gqa,* ]]; then
    step ours_gqa "${BENCH_TIMEOUT:-150}" "$B" bench --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096,16384 --backward \
      --timing do-bench --json "$WORK/ours_gqa.jsonl" "${EXTRA[@]}"
  fi
  if [[ $modes == *,varlen,* ]]; then
    step ours_varlen "${BENCH_TIMEOUT:-150}" "$B" bench --varlen 0 --heads 16 --d 128 --backward \
      --timing do-bench --json "$WORK/ours_varlen.jsonl" "${EXTRA[@]}"
  fi
  if [[ $modes == *,decode,* ]]; then
    step ours_decode "${BENCH_TIMEOUT:-150}" "$B" bench --decode --timing do-bench --json "$WORK/ours_decode.jsonl"
  fi
  if [[ $modes == *,window,* ]]; then
    # fa4_bench.py's window mode: window 1024 causal (the backward also on the pair: --fused's split), softcap 30
    step ours_window "${BENCH_TIMEOUT:-150}" "$B" bench --heads 16 --batch 1 --d 128 --n 16384 --causal 1 --window-left 1024 \
      --backward --fused --timing do-bench --json "$WORK/ours_window.jsonl" "${EXTRA[@]}"
    step ours_softcap "${BENCH_TIMEOUT:-150}" "$B" bench --heads 16 --batch 1 --d 128 --n 16384 --causal 1 --softcap 30 \
      --timing do-bench --json "$WORK/ours_softcap.jsonl" "${EXTRA[@]}"
  fi
  if [[ $modes == *,hdim,* ]]; then
    # fa4_bench.py's hdim mode: the table's shapes (B = 16384 / N, H = 2048 / D) at D 32, 96, 256, and 192 with DV 128
    step ours_hdim "${BENCH_TIMEOUT:-150}" "$B" bench --d 32,96,256 --n 4096,16384 --backward \
      --timing do-bench --json "$WORK/ours_hdim.jsonl" "${EXTRA[@]}"
    step ours_hdim192 "${BENCH_TIMEOUT:-150}" "$B" bench --d 192 --dv 128 --n 4096,16384 --backward \
      --timing do-bench --json "$WORK/ours_hdim192.jsonl" "${EXTRA[@]}"
  fi
  if [ "$FA4_OK" = 1 ]; then
    step fa4_modes "${FA4_TIMEOUT:-240}" env PYTHONPATH="/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}" \
      PYTHONWARNINGS=ignore FA4_MODES="${FA4_MODES:-${MODES:-gqa,varlen,decode}}" python3 .carry/fa4_bench.py
  fi
  python3 bench/report.py modes "$WORK" >> "$WORK/summary.txt"
}

profile_table() {
  local p passes=${PASSES:-2} scope
  need_bin
  bench_extra
  read -ra scope <<< "$(scope_flags)"
  fa4_prepare
  for ((p = 1; p <= passes; p++)); do
    if ((p > 1)); then
      anchors_between $((p - 1))
    fi
    step "ours$p" "${BENCH_TIMEOUT:-150}" "$B" bench --d "$D" --n "$N" --causal "$CAUSAL" ${scope[@]+"${scope[@]}"} \
      --timing do-bench --json "$WORK/ours$p.jsonl" "${EXTRA[@]}"
  done
  if ((passes < 2)); then
    anchors_between 1
  fi
  python3 bench/report.py table "$WORK" >> "$WORK/summary.txt"
}

# ---- checks ----
profile_checks() {
  local args parity=()
  need_bin
  # a cold first call: neither our kernel cache nor the driver's compute cache holds anything yet
  rm -rf "$WORK/first-cache" "$WORK/first-cuda-cache"
  step first_call_cold 120 env FLASHGEN_CACHE_DIR="$WORK/first-cache" CUDA_CACHE_PATH="$WORK/first-cuda-cache" "$B" first-call
  step first_call_warm 60 env FLASHGEN_CACHE_DIR="$WORK/first-cache" CUDA_CACHE_PATH="$WORK/first-cuda-cache" "$B" first-call
  if [ -x "$BINDIR/prebuilt" ]; then
    step prebuilt 120 env FLASHGEN_CACHE_DIR=off "$BINDIR/prebuilt"
  fi
  if [ "${PARITY:-1}" != 0 ] && [ -f .carry/anchor_bench.py ]; then
    parity=(--parity-dir "$WORK/parity")
  fi
  read -ra args <<< "${CHECK_ARGS:---quick --fused-backward}"
  # (278 s in 2026-12-04-final-checks; the quick fused-mods cases add ~30, about 100 s more)
  step check "${CHECK_TIMEOUT:-380}" "$B" check ${args[@]+"${args[@]}"} --json "$WORK/check.jsonl" ${parity[@]+"${parity[@]}"}
  if [ "${MMA_SYNC:-1}" != 0 ]; then
    step check_mma_sync 200 "$B" check --quick --mma-sync --json "$WORK/check_mma_sync.jsonl"
  fi
  if [ ${#parity[@]} -gt 0 ] && [ -f "$WORK/parity/index.json" ]; then
    step triton_parity 200 python3 bench/triton_parity.py "$WORK/parity" .carry/anchor_bench.py
  fi
  # every carried GPU test binary: gpu_test (tests/gpu.rs), gpu_decode_test, gpu_geometry_test, ...
  local t found=0
  for t in "$BINDIR"/gpu_test "$BINDIR"/gpu_*_test; do
    [ -x "$t" ] || continue
    found=1
    read -ra args <<< "${GPU_TEST_ARGS:-}"
    step "$(basename "$t" _test)_tests" 300 "$t" --ignored --test-threads 1 ${args[@]+"${args[@]}"}
  done
  if [ "$found" = 0 ]; then
    note "gpu_tests: left out: no .carry/gpu_test.xz (or gpu_<name>_test.xz) carried"
  fi
}

# ---- sanitizers ----
# Each run: compute-sanitizer --tool TOOL flashgen check --quick --filter FILTER [FLAGS]. The default: memcheck
# over the warp-specialized forwards, the wgmma kernels (fwd_wgmma fallbacks, the three-kernel backward) and
# the fused backwards; racecheck on a ping-pong forward of each consumer count and schedule, the three-kernel
# backward at HEAD_DIM 64 and the fused backward (its staging path: racecheck reads barrier.arrive as
# unordered, bench/results/2026-11-30-finalize-ab2).
SANITIZE_DEFAULT="memcheck fwd_ws --forward-only;memcheck wgmma;memcheck bwd_fused --fused-backward;\
racecheck fwd_ws_bf16_d128_st1 --forward-only;racecheck fwd_ws_persistent_bf16_d64_st3 --forward-only;\
racecheck fwd_ws_bf16_d64_st1 --forward-only;racecheck dkdv_wgmma_bf16_d64;racecheck bwd_fused_bf16_d64 --fused-backward"
profile_sanitizers() {
  local runs run words tool filter flags i=0
  need_bin
  IFS=';' read -ra runs <<< "${SANITIZE_RUNS:-$SANITIZE_DEFAULT}"
  for run in "${runs[@]}"; do
    read -ra words <<< "$run"
    [ ${#words[@]} -ge 2 ] || die "SANITIZE_RUNS: '$run' is not 'tool filter [check flags]'"
    tool=${words[0]}
    filter=${words[1]}
    flags=("${words[@]:2}")
    i=$((i + 1))
    step "${tool}_$i" "${SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool "$tool" "$B" check --quick --filter "$filter" ${flags[@]+"${flags[@]}"}
    note "$(printf '%-24s   (%s)' "" "$run")"
  done
  # SANITIZE_TESTS ["tool binary test;..."]: a carried GPU test binary's test under a tool (lying inputs)
  IFS=';' read -ra runs <<< "${SANITIZE_TESTS:-}"
  for run in ${runs[@]+"${runs[@]}"}; do
    read -ra words <<< "$run"
    [ ${#words[@]} -eq 3 ] || die "SANITIZE_TESTS: '$run' is not 'tool binary test'"
    [ -x "$BINDIR/${words[1]}" ] || { note "${words[0]} ${words[1]}: left out: .carry/${words[1]}.xz not carried"; continue; }
    i=$((i + 1))
    step "${words[0]}_$i" "${SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool "${words[0]}" "$BINDIR/${words[1]}" --ignored --exact "${words[2]}"
    note "$(printf '%-24s   (%s)' "" "$run")"
  done
}

# ---- ring ----
profile_ring() {
  local mode=(--virtual)
  need_bin
  if [ "${RING_VIRTUAL:-1}" = 0 ]; then
    mode=()
  fi
  step ring "${RING_TIMEOUT:-450}" "$B" ring-bench ${mode[@]+"${mode[@]}"} --gpus "${RING_GPUS:-2,4}" --n "${RING_N:-131072}" \
    --heads "${RING_HEADS:-16}" --head-dim "${RING_D:-128}" --causal "${RING_CAUSAL:-0,1}" --json "$WORK/ring.jsonl"
  # the driver's own table (its last lines)
  sed -n '/^ring attention, /,$p' "$LOGS/ring.log" >> "$WORK/summary.txt" || true
}

# ---- autotune ----
profile_autotune() {
  local scope
  need_bin
  bench_extra
  rm -rf "$WORK/tune-cache"
  step autotune "${TUNE_TIMEOUT:-400}" env FLASHGEN_CACHE_DIR="$WORK/tune-cache" FLASHGEN_PRINT_AUTOTUNING=1 \
    "$B" autotune --kernel "${TUNE_KERNELS:-fwd,bwd_dkdv,bwd_dq}" --d "$D" --n "$N" --causal "$CAUSAL" --out "$LOGS/tuning.json"
  grep '"kind": "autotune"' "$LOGS/autotune.log" > "$WORK/autotune.jsonl" || true
  if [ "${TUNED_BENCH:-1}" != 0 ]; then
    read -ra scope <<< "$(scope_flags)"
    step tuned "${BENCH_TIMEOUT:-150}" env FLASHGEN_CACHE_DIR="$WORK/tune-cache" "$B" bench --tuned --d "$D" --n "$N" \
      --causal "$CAUSAL" ${scope[@]+"${scope[@]}"} --timing do-bench --json "$WORK/tuned.jsonl" "${EXTRA[@]}"
  fi
  python3 bench/report.py autotune "$WORK" >> "$WORK/summary.txt"
}

# ---- variants ----
profile_variants() {
  local vs v r i n tag words w bin envs flags scope kind
  [ -n "${VARIANTS:-}" ] || die "variants: set VARIANTS=\"tag:words;tag:words\" (the header and bench/README.md say how)"
  IFS=';' read -ra vs <<< "$VARIANTS"
  n=${#vs[@]}
  if [ "${DECODE:-0}" = 1 ]; then
    scope=(--decode)
    kind=decode
  elif [ "${BACKWARD:-0}" = 1 ]; then
    scope=(--backward --backward-only)
    kind=bwd
  else
    scope=()
    kind=fwd
  fi
  for v in "${vs[@]}"; do
    [[ $v == *:* ]] || die "VARIANTS: '$v' has no 'tag:'"
    read -ra words <<< "${v#*:}"
    for w in ${words[@]+"${words[@]}"}; do
      if [[ $w == bin=* ]] && [ ! -x "$BINDIR/${w#bin=}" ]; then
        die "variant ${v%%:*}: no build $BINDIR/${w#bin=} (carry .carry/${w#bin=}.xz)"
      fi
    done
  done
  for ((r = 1; r <= ${ROUNDS:-2}; r++)); do
    for ((i = 0; i < n; i++)); do
      v=${vs[$(((i + r - 1) % n))]}
      tag=${v%%:*}
      read -ra words <<< "${v#*:}"
      bin=${BIN:-flashgen}
      envs=()
      flags=()
      for w in ${words[@]+"${words[@]}"}; do
        if [[ $w == bin=* ]]; then
          bin=${w#bin=}
        elif [[ $w =~ ^[[:upper:]][[:upper:][:digit:]_]*= ]]; then
          envs+=("$w")
        else
          flags+=("$w")
        fi
      done
      [ -x "$BINDIR/$bin" ] || die "variant $tag: no build $BINDIR/$bin (carry .carry/$bin.xz)"
      bench_extra ${flags[@]+"${flags[@]}"}
      if [ "$kind" = decode ]; then
        # fa4_bench.py's decode shapes and the step's latency row (bench --decode's own)
        step "v_${tag}_$r" "${BENCH_TIMEOUT:-150}" env FLASHGEN_CACHE_DIR="$WORK/cache-$tag" ${envs[@]+"${envs[@]}"} \
          "$BINDIR/$bin" bench --decode --timing do-bench --json "$WORK/v_${tag}_$r.jsonl" ${flags[@]+"${flags[@]}"}
        continue
      fi
      step "v_${tag}_$r" "${BENCH_TIMEOUT:-150}" env FLASHGEN_CACHE_DIR="$WORK/cache-$tag" ${envs[@]+"${envs[@]}"} \
        "$BINDIR/$bin" bench --d "$D" --n "$N" --causal "$CAUSAL" ${scope[@]+"${scope[@]}"} --timing do-bench \
        --json "$WORK/v_${tag}_$r.jsonl" "${EXTRA[@]}" ${flags[@]+"${flags[@]}"}
    done
  done
  python3 bench/report.py variants "$WORK" "$VARIANTS" "$kind" >> "$WORK/summary.txt"
}

# ---- ncu ----
profile_ncu() {
  local ncu runs entry name re args words
  need_bin
  [ -n "${NCU_RUNS:-}" ] || die "ncu: set NCU_RUNS=\"name|kernel regex|bench args;...\""
  # shellcheck disable=SC2012 # a fixed install path
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1 || true)
  [ -n "$ncu" ] || die "ncu: Nsight Compute not found"
  IFS=';' read -ra runs <<< "$NCU_RUNS"
  for entry in "${runs[@]}"; do
    IFS='|' read -r name re args <<< "$entry"
    read -ra words <<< "$args"
    # clocks left alone (the forward is power-bound: locked clocks would profile another chip)
    step "ncu_$name" "${NCU_TIMEOUT:-200}" "$ncu" --clock-control none -k "regex:$re" --launch-skip "${NCU_SKIP:-2}" --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
      --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
      -o "$WORK/$name" "$B" bench ${words[@]+"${words[@]}"} --reps 1
    if [ -f "$WORK/$name.ncu-rep" ]; then
      "$ncu" -i "$WORK/$name.ncu-rep" --page details > "$OUT/$name.details.txt" 2>&1 || true
      "$ncu" -i "$WORK/$name.ncu-rep" --page source --print-source sass --csv > "$WORK/$name.sass.csv" 2>&1 || true
      xz -T0 -c "$WORK/$name.sass.csv" > "$OUT/$name.sass.csv.xz" 2> /dev/null ||
        python3 -c 'import lzma, sys; lzma.open(sys.argv[2], "wb").write(open(sys.argv[1], "rb").read())' "$WORK/$name.sass.csv" "$OUT/$name.sass.csv.xz"
      {
        echo "== ncu $name ($re; bench $args)"
        grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Registers Per|Achieved Occ" "$OUT/$name.details.txt" | head -12 || true
        python3 bench/ncu_stalls.py "$WORK/$name.sass.csv" 15 || true
      } | tee -a "$WORK/summary.txt"
    fi
  done
}

# $OUT: env.txt, summary.txt (printed last), rows.jsonl, logs.tgz; runs however the profiles ended.
finish() {
  local rc=$?
  trap - EXIT
  if [ -n "$SMI_PID" ]; then
    kill "$SMI_PID" 2> /dev/null || true
  fi
  if [ -d "$WORK" ]; then
    python3 bench/report.py merge "$WORK" "$OUT/rows.jsonl" || true
    cp "$WORK/env.txt" "$OUT/env.txt" 2> /dev/null || true
    tar czf "$OUT/logs.tgz" -C "$WORK" logs 2> /dev/null || true
    {
      cat "$WORK/env.txt" 2> /dev/null || true
      echo
      cat "$WORK/summary.txt" 2> /dev/null || true
    } > "$OUT/summary.txt"
    echo
    echo "======== summary ($SECONDS s) ========"
    cat "$OUT/summary.txt"
  fi
  if [ "$rc" = 0 ] && [ "$FAILED" != 0 ]; then
    rc=1
  fi
  exit "$rc"
}

main() {
  local p
  [ $# -gt 0 ] || die "usage: bash bench/device.sh PROFILE [PROFILE ...] (stash table modes checks sanitizers autotune variants ncu ring)"
  for p in "$@"; do
    case $p in
      stash | table | modes | checks | sanitizers | autotune | variants | ncu | ring) ;;
      *) die "unknown profile '$p': use stash, table, modes, checks, sanitizers, autotune, variants, ncu or ring" ;;
    esac
  done
  [ -f bench/device.sh ] || die "run from the repository root"
  rm -rf "$WORK"
  mkdir -p "$LOGS" "$OUT"
  : > "$WORK/summary.txt"
  trap finish EXIT
  record_env "$@"
  if [ -n "${SMI_MS:-}" ]; then
    # the SM clock, power, temperature and throttle reasons through the call (the forward is power-bound)
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
      --format=csv,noheader,nounits -lms "$SMI_MS" > "$LOGS/smi.csv" 2> /dev/null &
    SMI_PID=$!
  fi
  if [ "$*" != stash ]; then
    unpack
    export FLASHGEN_CACHE_DIR=$WORK/cache
  fi
  for p in "$@"; do
    note "---- $p (at $SECONDS s)"
    "profile_$p"
  done
}

main "$@"
