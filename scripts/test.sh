#!/usr/bin/env bash
# The test suite: installs what it needs (scripts/setup.sh), builds the CLI, runs every test in release mode
# (the 100 ms generation bound is for optimized code). GPU tests are #[ignore]d here; see README.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh)"
# python/ is a PyO3 extension: built as one (no libpython linked), as maturin builds it
export PYO3_BUILD_EXTENSION_MODULE=1
cargo build --release --workspace
# The prebuilt path links no LLVM: the runtime without `jit` must not depend on inkwell.
if cargo tree -p flashgen-runtime --no-default-features -e normal | grep -q inkwell; then
  echo "FAIL: flashgen-runtime without the jit feature depends on LLVM (inkwell)" >&2; exit 1
fi
cargo build --release -p flashgen-runtime --no-default-features
echo "flashgen-runtime builds without LLVM (no jit feature)"
# the ring's NCCL link (feature nccl, loaded at run time) has no machine to run on here: it must still build
cargo build --release -p flashgen-runtime --features nccl
cargo test --release --workspace --no-fail-fast
# the Python package: wheel built by maturin, installed into a fresh venv, its CPU tests (python/scripts/ci.sh)
bash python/scripts/ci.sh
