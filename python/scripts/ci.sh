#!/usr/bin/env bash
# The Python package in CI (no GPU, no torch): build the wheel with maturin, install it into a fresh virtual
# environment, run the tests that need neither (python/tests: import, version, every argument and tensor check
# through the real DLPack path; the torch and GPU tests skip, each with its reason). scripts/test.sh calls it.
# Needs only python3 (with venv) and PyPI for maturin and pytest; LLVM comes from scripts/setup.sh as for cargo.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python3}"
TARGET="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
# maturin sets this too; exporting it keeps the workspace build and maturin's on one pyo3 configuration
export PYO3_BUILD_EXTENSION_MODULE=1

build_venv="$TARGET/py-build-venv"
[ -x "$build_venv/bin/maturin" ] || { "$PY" -m venv "$build_venv" && "$build_venv/bin/pip" install -q 'maturin>=1.9,<2'; }
rm -rf "$TARGET/wheels-ci"
"$build_venv/bin/maturin" build --release -m python/Cargo.toml --out "$TARGET/wheels-ci"
wheel="$(ls "$TARGET"/wheels-ci/flashgen-*.whl)"
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1))"

# a fresh environment: nothing but the wheel and pytest
test_venv="$TARGET/py-test-venv"
rm -rf "$test_venv"
"$PY" -m venv "$test_venv"
"$test_venv/bin/pip" install -q "$wheel" pytest
# from outside the source tree, so that `import flashgen` is the installed wheel, not python/flashgen
(cd "$test_venv" && "$test_venv/bin/python" -c 'import flashgen, sys; assert "site-packages" in flashgen.__file__, flashgen.__file__; print("flashgen", flashgen.__version__, "from", flashgen.__file__)')
"$test_venv/bin/python" -m pytest -p no:cacheprovider -q python/tests
