#!/usr/bin/env bash
# Installs what building and testing flashgen needs on a fresh Debian machine, and nothing it already has:
# LLVM 19 (static libraries, linked into the binary) from Debian, and ptxas from the PyPI package
# nvidia-cuda-nvcc-cu12 (no CUDA toolkit). Prints the FLASHGEN_PTXAS line the tests read.
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
