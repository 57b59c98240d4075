#!/usr/bin/env bash
# Runs every test of cb3 on a fresh machine: installs what is missing, then
#   1. rustlib: cargo test, and the header drift check (pinned cbindgen)
#   2. CPython 3.11, cpython ABI: pip install . into a fresh venv, pytest, mypy --strict
#   3. CPython 3.11, hybrid ABI under HPy's debug mode (handle leaks, use after close)
#   4. bounded fuzzing (scripts/fuzz.sh; DURATION seconds per target, default 20)
#   5. ASan + UBSan and valgrind runs (scripts/sanitize.sh)
#   6. the sdist: contents, install in a fresh venv, tests from the unpacked tree
#      and examples/downstream (scripts/sdist-check.sh)
#   7. PyPy 3.11 (scripts/pypy.sh), when present
# Usage: bash scripts/test.sh     (CB3_SKIP_PYPY=1 to skip step 7)
# Disk: about 2.5 GB outside the tracked files (README, "Running the tests").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${CB3_TEST_DIR:-$ROOT/.test}"
TOOLS="${CB3_TOOLS_DIR:-$HOME/.cache/cb3-tools}"
CBINDGEN_VERSION=0.29.4
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
mkdir -p "$WORK"

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup)" >&2; exit 1; }
APT_NEEDED=()
command -v cc >/dev/null || APT_NEEDED+=(gcc)
command -v g++ >/dev/null || APT_NEEDED+=(g++)
command -v b3sum >/dev/null || APT_NEEDED+=(b3sum)   # tests/test_b3sum.py compares with it
if ((${#APT_NEEDED[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_NEEDED[@]}"
fi
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' 
if [[ "$("$TOOLS/bin/cbindgen" --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]]; then
    cargo install cbindgen --version "$CBINDGEN_VERSION" --locked --root "$TOOLS"
fi

step "rustlib: cargo test"
(cd rustlib && cargo test --release --locked)

step "rustlib: header drift check (cbindgen $CBINDGEN_VERSION --verify)"
(cd rustlib && "$TOOLS/bin/cbindgen" --config cbindgen.toml --crate cb3 --output include/cb3.h --verify .) || {
    echo "rustlib/include/cb3.h is out of date: regenerate it (see rustlib/cbindgen.toml)" >&2
    exit 1
}

make_venv() {  # make_venv DIR: a fresh venv with the pinned test requirements
    rm -rf "$1"
    "$PYTHON" -m venv "$1"
    "$1/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
}

step "CPython, cpython ABI: build and install"
make_venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --no-build-isolation .
(cd "$WORK" && "$WORK/venv/bin/python" -P -m cb3)

step "CPython, cpython ABI: pytest"
"$WORK/venv/bin/pytest" tests -q -p no:cacheprovider

step "mypy --strict (stubs and typed examples)"
"$WORK/venv/bin/mypy" --strict --no-incremental cb3/_cb3.pyi tests/typing_examples.py

step "asv: check, smoke + quick run, offline publish, headless Chromium (scripts/asv-check.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" bash scripts/asv-check.sh

step "python -m cb3 bench --quick"
(cd "$WORK" && "$WORK/venv/bin/python" -P -m cb3 bench --quick --sizes 64,65536 --json "$WORK/bench.json")

step "CPython, hybrid ABI under HPy debug mode: pytest"
make_venv "$WORK/venv-debug"
CB3_HPY_ABI=hybrid "$WORK/venv-debug/bin/pip" install --quiet --no-build-isolation .
# Multi-threaded tests are deselected here only: HPy 0.9's debug context
# aborts when a thread reenters after releasing the GIL (pyproject.toml).
HPY=debug "$WORK/venv-debug/bin/pytest" tests -q -p no:cacheprovider -m "not slow and not threads"

step "fuzzing: atheris + cargo-fuzz, ${DURATION:-20} s per target (scripts/fuzz.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_FUZZ_DIR="$WORK/fuzz" CB3_TOOLS_DIR="$TOOLS" bash scripts/fuzz.sh

step "sanitizers: ASan + UBSan, valgrind memcheck (scripts/sanitize.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" PYTHON="$PYTHON" bash scripts/sanitize.sh

step "sdist: contents, fresh-venv install, tests from the unpacked tree (scripts/sdist-check.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" PYTHON="$PYTHON" bash scripts/sdist-check.sh

if [[ -x scripts/pypy.sh && -z "${CB3_SKIP_PYPY:-}" ]]; then
    step "PyPy 3.11"
    bash scripts/pypy.sh
fi

step "all tests passed"
