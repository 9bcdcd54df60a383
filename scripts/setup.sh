#!/usr/bin/env bash
# Installs what building and testing flashgen needs on a fresh Debian machine, and nothing it already has:
# LLVM 19 (static libraries, linked into the binary) from Debian, ptxas from the PyPI package
# nvidia-cuda-nvcc-cu12 and nvdisasm from nvidia-cuda-nvdisasm (no CUDA toolkit). Prints the
# FLASHGEN_PTXAS and FLASHGEN_NVDISASM lines the tests read.
# Usage: eval "$(bash scripts/setup.sh)"
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
PACKAGES="llvm-19-dev libpolly-19-dev libzstd-dev libz3-dev libffi-dev libxml2-dev zlib1g-dev unzip"
missing=""
for p in $PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: installing$missing" >&2
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >&2
fi
command -v llvm-config-19 >/dev/null || { echo "setup: llvm-config-19 missing after install" >&2; exit 1; }

PTXAS_VERSION=12.9.86
TOOLS=${FLASHGEN_TOOLS:-$HOME/.cache/flashgen/tools/cuda-nvcc-$PTXAS_VERSION}
if [ ! -x "$TOOLS/ptxas" ]; then
  echo "setup: fetching ptxas from nvidia-cuda-nvcc-cu12==$PTXAS_VERSION" >&2
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --dest "$tmp" "nvidia-cuda-nvcc-cu12==$PTXAS_VERSION" >&2
  mkdir -p "$TOOLS"
  unzip -o -q -j "$tmp"/nvidia_cuda_nvcc_cu12-*.whl 'nvidia/cuda_nvcc/bin/ptxas' -d "$TOOLS" >&2
  chmod +x "$TOOLS/ptxas"
  rm -rf "$tmp"
fi
"$TOOLS/ptxas" --version >/dev/null
echo "export FLASHGEN_PTXAS=$TOOLS/ptxas"

# nvdisasm, to check the SASS of the Hopper kernels (HGMMA present, no local memory); CUDA 13's reads
# ptxas 12.9's sm_90a cubins
NVDISASM_VERSION=13.5.37
DIS=${FLASHGEN_TOOLS_DIS:-$HOME/.cache/flashgen/tools/nvdisasm-$NVDISASM_VERSION}
if [ ! -x "$DIS/nvdisasm" ]; then
  echo "setup: fetching nvdisasm from nvidia-cuda-nvdisasm==$NVDISASM_VERSION" >&2
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --dest "$tmp" "nvidia-cuda-nvdisasm==$NVDISASM_VERSION" >&2
  mkdir -p "$DIS"
  unzip -o -q -j "$tmp"/nvidia_cuda_nvdisasm-*.whl 'nvidia/cu13/bin/nvdisasm' -d "$DIS" >&2
  chmod +x "$DIS/nvdisasm"
  rm -rf "$tmp"
fi
"$DIS/nvdisasm" --version >/dev/null
echo "export FLASHGEN_NVDISASM=$DIS/nvdisasm"
