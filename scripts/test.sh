#!/usr/bin/env bash
# The test suite: installs what it needs (scripts/setup.sh), builds the CLI, runs every test in release mode
# (the 100 ms generation bound is for optimized code). GPU tests are #[ignore]d here; see README.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/setup.sh)"
cargo build --release --workspace
cargo test --release --workspace --no-fail-fast
