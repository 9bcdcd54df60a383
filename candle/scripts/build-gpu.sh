#!/usr/bin/env bash
# Build flashgen-candle with candle's CUDA backend (feature `cuda`) on a machine without a CUDA toolkit:
# the GPU test binary and the training example, for the device run (python/tools/device.sh candle).
# Not part of CI (see candle/README.md for why): candle-kernels compiles its .cu files with nvcc at build time.
#
# What it takes, all from PyPI: nvidia-cuda-nvcc, nvidia-nvvm and nvidia-cuda-crt 13.0 (nvcc, cicc, ptxas, fatbinary, nvlink, pinned together: CUDA 13.0's PTX
# loads on the H200's 580 driver, a newer nvcc's would not), nvidia-cuda-runtime 13.0 (headers, libcudart,
# which candle-kernels' MoE library links), nvidia-cuda-cccl 13.0 (CUB/Thrust headers); gcc/g++ as nvcc's
# host compiler. And one change to candle-core, made on a copy of its published source in target/ (never in
# the repository) and used through `--config patch`: its cudarc `dynamic-linking` becomes `dynamic-loading`.
# candle-core asks cudarc for dynamic-linking, flashgen-runtime for dynamic loading; one cudarc cannot do
# both (its build script stops), and dynamic linking would tie the binary to this machine's cuBLAS, cuRAND
# and NVRTC sonames, which the H200's torch install need not have. Loaded, cudarc finds them by name.
#
#     bash candle/scripts/build-gpu.sh            # then: ls .carry/candle_*.xz (in the main checkout: CARRY=...)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"
TARGET="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
CARRY="${CARRY:-$ROOT/.carry}"
eval "$(bash scripts/setup.sh)"

venv="$TARGET/cuda13-venv"
[ -x "$venv/bin/nvcc-ok" ] || {
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "nvidia-cuda-nvcc==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-crt==13.0.*" "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-cccl==13.0.*"
  touch "$venv/bin/nvcc-ok"
}
cuda="$(echo "$venv"/lib/python3*/site-packages/nvidia/cu13)"
ln -sf libcudart.so.13 "$cuda/lib/libcudart.so"
export PATH="$cuda/bin:$PATH" CUDA_HOME="$cuda" CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
export LIBRARY_PATH="$cuda/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
export NVCC_APPEND_FLAGS="-I$cuda/include/cccl ${NVCC_APPEND_FLAGS:-}"
nvcc --version | tail -2

# candle-core's published source with cudarc loaded dynamically
src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/candle-core-0.11.1 | head -1)"
[ -d "$src" ] || cargo fetch
src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/candle-core-0.11.1 | head -1)"
patched="$TARGET/candle-core-0.11.1-dynamic-loading"
rm -rf "$patched" && cp -r "$src" "$patched" && chmod -R u+w "$patched"
sed -i 's/"dynamic-linking",/"dynamic-loading",/' "$patched/Cargo.toml"
grep -q '"dynamic-loading",' "$patched/Cargo.toml"

# the patch would rewrite Cargo.lock: keep the committed one
cp Cargo.lock "$TARGET/Cargo.lock.keep"
trap 'cp "$TARGET/Cargo.lock.keep" Cargo.lock' EXIT
patch=(--config "patch.crates-io.candle-core.path=\"$patched\"")
cargo build --release -p flashgen-candle --features cuda --example train "${patch[@]}"
cargo test --release -p flashgen-candle --features cuda --test candle_gpu --no-run "${patch[@]}"
mkdir -p "$CARRY"
xz -T2 -c "$TARGET/release/examples/train" > "$CARRY/candle_train.xz"
xz -T2 -c "$(ls -t "$TARGET"/release/deps/candle_gpu-* | grep -v '\.d$' | head -1)" > "$CARRY/candle_gpu_test.xz"
cp "$cuda/lib/libcudart.so.13" "$CARRY/libcudart.so.13"
ls -la "$CARRY"/candle_*.xz "$CARRY/libcudart.so.13"
