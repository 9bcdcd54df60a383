#!/usr/bin/env bash
# The Python package (and the candle op) on the H200, in one device call each, from the repository root:
#
#     bash python/tools/device.sh tests      # FLASHGEN_REQUIRE_GPU=1 pytest python/tests (CPU + torch + GPU tests)
#     bash python/tools/device.sh timing     # ROUNDS [2] of the Rust bench's rows and the same rows through Python, alternating,
#                                            # compared on their means; then the small-call overhead through Python
#     bash python/tools/device.sh overhead   # the small call's host cost and its pieces (timing.py overhead --parts)
#     bash python/tools/device.sh layer      # the table's rows through Python against the native calls, one process, one timer
#     bash python/tools/device.sh candle     # the candle op's GPU test and its training example
#     bash python/tools/device.sh tests candle   # several in one call, in order
#
# Carry (built here, see python/README.md): .carry/flashgen-*.whl, .carry/pywheels/ (pytest and its
# dependencies, pure-Python wheels, used only where the machine's Python has no pytest), and for `timing`
# .carry/flashgen.xz (the CLI of the same commit), for `candle` .carry/candle_gpu_test.xz,
# .carry/candle_train.xz and .carry/libcudart.so.13 (candle/scripts/build-gpu.sh makes the three). The wheel is unpacked (a wheel is a zip) onto PYTHONPATH, beside the machine's torch;
# nothing is installed. Results go to $OUT (the device tool's folder), or /tmp/flashgen-out.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/flashgen-out}"
mkdir -p "$OUT"
SITE=/tmp/flashgen-site
rm -rf "$SITE" && mkdir -p "$SITE"
# (the candle step alone needs no wheel: the carry limit, 64 MiB, does not hold everything in one call)
wheel="$(ls .carry/flashgen-*.whl 2>/dev/null | head -1)"
if [ -n "$wheel" ]; then
  python3 -m zipfile -e "$wheel" "$SITE"
  if ! python3 -c 'import pytest' 2>/dev/null; then
    for w in .carry/pywheels/*.whl; do python3 -m zipfile -e "$w" "$SITE"; done
  fi
elif [ "$*" != candle ]; then
  echo "no .carry/flashgen-*.whl" >&2; exit 2
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
{ date; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; python3 -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__, torch.version.cuda)'; python3 -c 'import flashgen; print("flashgen", flashgen.__version__, flashgen.device_info(0))'; cat .carry/build.txt .carry/python_build.txt 2>/dev/null; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
status=0
for what in "${@:-tests}"; do
  case "$what" in
    tests)
      FLASHGEN_REQUIRE_GPU=1 timeout 320 python3 -m pytest python/tests -p no:cacheprovider -rs --durations=10 \
        --junitxml="$OUT/pytest.xml" 2>&1 | tee "$OUT/pytest.log" | tail -60
      status=$((status | ${PIPESTATUS[0]})) ;;
    timing)
      xz -dc .carry/flashgen.xz > /tmp/flashgen-cli && chmod +x /tmp/flashgen-cli
      # rounds of the Rust rows (the first compiles the kernels into the shared cache), then the same rows
      # through Python, alternating (ROUNDS, default 2); then each row's means over the rounds compared
      rounds=${ROUNDS:-2}; rust=(); python=()
      for ((r = 1; r <= rounds; r++)); do
        # (in Python's layout, (B, N, H, D): the comparison is of the paths, not of two layouts' kernels)
        timeout 150 /tmp/flashgen-cli bench --backward --bshd --timing do-bench --json "$OUT/rust$r.jsonl" > "$OUT/rust$r.log" 2>&1
        status=$((status | $?)); tail -3 "$OUT/rust$r.log"
        timeout 150 python3 python/tools/timing.py table --rust "$OUT/rust$r.jsonl" --out "$OUT/python$r.jsonl" > "$OUT/python_table$r.log" 2>&1
        status=$((status | $?)); tail -1 "$OUT/python_table$r.log"
        rust+=("$OUT/rust$r.jsonl"); python+=("$OUT/python$r.jsonl")
      done
      python3 python/tools/timing.py compare --rust "${rust[@]}" --python "${python[@]}" --out "$OUT/python.jsonl" 2>&1 | tail -1
      timeout 100 python3 python/tools/timing.py overhead --out "$OUT/python.jsonl" 2>&1 | tee "$OUT/python_overhead.log"
      status=$((status | ${PIPESTATUS[0]})) ;;
    layer)
      # the Python layer against the native calls in one process, one timer (timing.py layer)
      timeout 300 python3 python/tools/timing.py layer --rounds "${ROUNDS:-2}" --out "$OUT/python_layer.jsonl" 2>&1 | tee "$OUT/python_layer.log" | tail -3
      status=$((status | ${PIPESTATUS[0]})) ;;
    overhead)
      # the small call's host cost alone, with its pieces (no CLI, no table)
      timeout 120 python3 python/tools/timing.py overhead --parts --out "$OUT/python.jsonl" 2>&1 | tee "$OUT/python_overhead.log"
      status=$((status | ${PIPESTATUS[0]})) ;;
    candle)
      for bin in candle_gpu_test candle_train; do
        xz -dc ".carry/$bin.xz" > "/tmp/$bin" && chmod +x "/tmp/$bin"
      done
      # candle's cudarc loads cuBLAS, cuBLASLt, cuRAND and NVRTC by name (CUDA 12 names: libcublas.so,
      # libcublas.so.12, ...): link the unversioned names to the machine's copies (torch's nvidia packages, or
      # a toolkit), whatever their major version; libcudart.so.13 (candle-kernels' MoE library) is carried
      libs=/tmp/flashgen-cudalibs
      rm -rf "$libs" && mkdir -p "$libs" && cp .carry/libcudart.so.13 "$libs/"
      python3 - "$libs" <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for lib in ("cublas", "cublasLt", "curand", "nvrtc"):
    found = []
    for r in roots:
        found += glob.glob(os.path.join(r, "nvidia", "*", "lib", f"lib{lib}.so.*"))
    found += glob.glob(f"/usr/local/cuda*/lib64/lib{lib}.so.*") + glob.glob(f"/usr/lib/x86_64-linux-gnu/lib{lib}.so.*")
    print(f"lib{lib}.so ->", found[0] if found else "NOT FOUND")
    if found:
        os.symlink(found[0], os.path.join(sys.argv[1], f"lib{lib}.so"))
PY
      export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      timeout 170 /tmp/candle_gpu_test --ignored --test-threads 1 --nocapture 2>&1 | tee "$OUT/candle_gpu_test.log" | tail -40
      status=$((status | ${PIPESTATUS[0]}))
      # (timing_rows prints candle's rows beside the runtime's own, same process and buffers: the 5% bar)
      grep '^{' "$OUT/candle_gpu_test.log" > "$OUT/candle.jsonl" || true
      timeout 80 /tmp/candle_train 2>&1 | tee "$OUT/candle_train.log" | tail -30
      status=$((status | ${PIPESTATUS[0]})) ;;
    *) echo "unknown step $what (tests, timing, overhead, candle)" >&2; status=2 ;;
  esac
done
echo "device.sh: exit $status"
exit "$status"
