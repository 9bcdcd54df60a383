#!/usr/bin/env bash
# The main job: generate the default kernel set into out/kernels, then check it. Without a GPU this compiles
# every default kernel and checks the tiled algorithm on the CPU; with one it runs every kernel against the
# CPU f64 reference on random inputs (ragged lengths, strided layouts, poisoned outputs).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh)"
cargo build --release -p flashgen-cli
./target/release/flashgen emit --defaults --out-dir out/kernels
./target/release/flashgen check "$@"
