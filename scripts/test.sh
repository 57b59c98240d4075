#!/usr/bin/env bash
# Runs every test of cb3 on a fresh machine: installs what is missing, then
#   1. rustlib: cargo test, and the header drift check (pinned cbindgen)
#   2. CPython 3.11 (primary), cpython ABI: pip install . into a fresh venv,
#      pytest, mypy --strict, asv smoke run, bench
#   3. CPython 3.11, hybrid ABI under HPy's debug mode (handle leaks, use after close)
#   4. bounded fuzzing (scripts/fuzz.sh; DURATION seconds per target, default 20)
#   5. ASan + UBSan and valgrind runs (scripts/sanitize.sh)
#   6. the sdist: contents, install in a fresh venv, tests from the unpacked tree
#      and examples/downstream (scripts/sdist-check.sh)
#   7. CPython 3.12 and 3.13 (pyenv), cpython ABI: build, pytest; an
#      unsupported CPython (3.10, when pyenv has it) must get setup.py's error
#   8. CPython 3.13, hybrid ABI under HPy's debug mode, with an hpy.universal
#      built from hpy 0.9.0's sdist plus the vendored ctx_type.c patch
#   9. CPython 3.14 (Debian forky chroot) and PyPy 3.11 (Debian trixie chroot):
#      scripts/chroot-test.sh; root only, skipped with a message otherwise
#  10. wheels: scripts/wheels.sh builds the sdist and manylinux_2_17 wheels
#      (x86_64, aarch64; CPython 3.11-3.14) and tests each in a fresh
#      environment without Rust (aarch64 under qemu, x86 SIMD paths under
#      qemu-x86_64 -cpu); root only, skipped with a message otherwise
# Each step prints its time; each pytest run records a row of the README's
# interpreter table in .test/matrix (python3 scripts/matrix.py readme copies
# the table into README.md).
# Usage: bash scripts/test.sh     (CB3_SKIP_PYPY=1, CB3_SKIP_PY314=1,
#        CB3_SKIP_PYENV=1, CB3_SKIP_WHEELS=1 skip steps 9, 7-8 and 10)
# Disk: about 2.5 GB outside the tracked files (README, "Running the tests").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${CB3_TEST_DIR:-$ROOT/.test}"
TOOLS="${CB3_TOOLS_DIR:-$HOME/.cache/cb3-tools}"
CBINDGEN_VERSION=0.29.4
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
PYENV_VERSIONS="${PYENV_ROOT:-$HOME/.pyenv}/versions"
MATRIX="$WORK/matrix"
mkdir -p "$WORK"
rm -rf "$MATRIX"

STEP_NAME="" STEP_START=$SECONDS TIMINGS=()
end_step() {
    [[ -n "$STEP_NAME" ]] || return 0
    local took=$((SECONDS - STEP_START))
    printf -- '--- %d s: %s\n' "$took" "$STEP_NAME"
    TIMINGS+=("$(printf '%5d s  %s' "$took" "$STEP_NAME")")
    STEP_NAME=""
}
step() {
    end_step
    STEP_NAME="$*" STEP_START=$SECONDS
    printf '\n==> %s\n' "$*"
}

step "toolchain"
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup)" >&2; exit 1; }
APT_NEEDED=()
command -v cc >/dev/null || APT_NEEDED+=(gcc)
command -v g++ >/dev/null || APT_NEEDED+=(g++)
command -v b3sum >/dev/null || APT_NEEDED+=(b3sum)   # tests/test_b3sum.py compares with it
if ((${#APT_NEEDED[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_NEEDED[@]}"
fi
# The primary run is CPython 3.11: its HPy debug-mode step needs PyPI's
# hpy 0.9.0 (hpy.universal), whose wheels stop at 3.11. Steps 6-8 cover the
# other interpreters.
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"PYTHON must be CPython 3.11, not {sys.version}"'
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

step "rustlib: static library for the other interpreters' builds"
# One archive for every interpreter after the primary one: it does not depend
# on Python (setup.py links it when CB3_STATICLIB is set, without cargo).
(cd rustlib && cargo build --quiet --release --locked --lib)
STATICLIB="$ROOT/rustlib/target/release/libcb3.a"

make_venv() {  # make_venv DIR [PYTHON]: a fresh venv with the pinned test requirements
    rm -rf "$1"
    "${2:-$PYTHON}" -m venv "$1"
    "$1/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
}

# where_of PYTHON: the "where" of its rows in the interpreter table
where_of() {
    case "$(readlink -f "$(command -v "$1")")" in */.pyenv/*) echo "host (pyenv)" ;; *) echo "host" ;; esac
}

# run_pytest VENV WHERE BUILT [MODE] -- PYTEST_ARGS...: pytest with VENV's
# interpreter, recorded as a row of the interpreter table.
run_pytest() {
    local venv=$1 where=$2 built=$3 mode=${4:-} info junit
    shift 4
    [[ "${1:-}" == -- ]] && shift
    info=$(cd "$WORK" && "$venv/bin/python" -P "$ROOT/scripts/matrix.py" describe)
    echo "$info"
    junit="$WORK/junit-$(basename "$venv").xml"
    local start=$SECONDS status=0
    "$venv/bin/pytest" tests -q -p no:cacheprovider --junitxml="$junit" "$@" || status=$?
    "$PYTHON" scripts/matrix.py record --dir "$MATRIX" --info "$info" --where "$where" --built "$built" \
        --mode "$mode" --junit "$junit" --seconds "tests=$((SECONDS - start))"
    return $status
}

step "CPython, cpython ABI: build and install"
make_venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --no-build-isolation .
(cd "$WORK" && "$WORK/venv/bin/python" -P -m cb3)

step "CPython, cpython ABI: pytest"
run_pytest "$WORK/venv" "$(where_of "$PYTHON")" "pip install ." "" --

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
DEBUG_MODE="HPy debug mode, not slow/threads tests"
HPY=debug run_pytest "$WORK/venv-debug" "$(where_of "$PYTHON")" "pip install ." "$DEBUG_MODE" \
    -- -m "not slow and not threads"

step "fuzzing: atheris + cargo-fuzz, ${DURATION:-20} s per target (scripts/fuzz.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_FUZZ_DIR="$WORK/fuzz" CB3_TOOLS_DIR="$TOOLS" bash scripts/fuzz.sh

step "sanitizers: ASan + UBSan, valgrind memcheck (scripts/sanitize.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" PYTHON="$PYTHON" bash scripts/sanitize.sh

step "sdist: contents, fresh-venv install, tests from the unpacked tree (scripts/sdist-check.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" PYTHON="$PYTHON" bash scripts/sdist-check.sh

# find_python X.Y: pyenv's newest X.Y, else pythonX.Y on PATH
find_python() {
    local found
    found=$(ls -d "$PYENV_VERSIONS/$1".*/bin/"python$1" 2>/dev/null | sort -V | tail -n 1)
    [[ -n "$found" ]] || found=$(command -v "python$1" || true)
    echo "$found"
}

if [[ -z "${CB3_SKIP_PYENV:-}" ]]; then
    for minor in 3.12 3.13; do
        step "CPython $minor (pyenv), cpython ABI: build and pytest"
        py=$(find_python $minor)
        [[ -n "$py" ]] || { echo "CPython $minor not found (pyenv install $minor, or CB3_SKIP_PYENV=1)" >&2; exit 1; }
        make_venv "$WORK/venv$minor" "$py"
        CB3_STATICLIB="$STATICLIB" "$WORK/venv$minor/bin/pip" install --quiet --no-build-isolation .
        run_pytest "$WORK/venv$minor" "$(where_of "$py")" "pip install ." "" --
    done

    step "CPython 3.13, hybrid ABI under HPy debug mode (hpy.universal with the ctx_type.c patch)"
    # PyPI's hpy 0.9.0 has no 3.13 wheel, and its sdist has the tp_flags bug
    # that third_party/hpy/PATCHES.md fixes: build hpy.universal from the
    # sdist (hash-pinned) with the vendored, patched ctx_type.c, once per cache.
    py=$(find_python 3.13)
    HPY_WHEELS="$TOOLS/hpy-0.9.0-cb3-$(sha256sum third_party/hpy/devel/src/runtime/ctx_type.c | cut -c1-12)"
    if ! compgen -G "$HPY_WHEELS/hpy-0.9.0-cp313-*.whl" >/dev/null; then
        rm -rf "$WORK/hpy-sdist" && mkdir -p "$WORK/hpy-sdist"
        echo "hpy==0.9.0 --hash=sha256:4545310f3a7f9ac249c0f19a80a9b05f46565afb62b7e9225b79493b7b6c70cc" >"$WORK/hpy-sdist/req.txt"
        "$py" -m pip download --quiet --no-deps --no-binary :all: --require-hashes -r "$WORK/hpy-sdist/req.txt" -d "$WORK/hpy-sdist"
        tar -C "$WORK/hpy-sdist" -xzf "$WORK/hpy-sdist/hpy-0.9.0.tar.gz"
        cp third_party/hpy/devel/src/runtime/ctx_type.c "$WORK/hpy-sdist/hpy-0.9.0/hpy/devel/src/runtime/ctx_type.c"
        "$py" -m pip wheel --quiet --no-deps -w "$HPY_WHEELS" "$WORK/hpy-sdist/hpy-0.9.0"
    fi
    make_venv "$WORK/venv3.13-debug" "$py"
    "$WORK/venv3.13-debug/bin/pip" install --quiet "$HPY_WHEELS"/hpy-0.9.0-cp313-*.whl
    CB3_HPY_ABI=hybrid CB3_STATICLIB="$STATICLIB" "$WORK/venv3.13-debug/bin/pip" install --quiet --no-build-isolation .
    HPY=debug run_pytest "$WORK/venv3.13-debug" "$(where_of "$py")" "pip install ." "$DEBUG_MODE" \
        -- -m "not slow and not threads"

    step "unsupported interpreter: setup.py refuses CPython 3.10 with a clear error"
    py=$(find_python 3.10)
    if [[ -z "$py" ]]; then
        echo "skipped: no CPython 3.10 here (pyenv install 3.10 to run this check)"
    else
        status=0
        out=$("$py" setup.py --version 2>&1) || status=$?
        echo "$out" | tail -n 1
        [[ $status -ne 0 && "$out" == *"error: cb3 supports CPython 3.11 to 3.14 and PyPy 3.11; this is CPython 3.10"* ]] || {
            echo "expected setup.py to refuse $py with a clear error (exit status $status)" >&2
            exit 1
        }
    fi
fi

# run_chroot PROFILE NAME SKIP_VAR: scripts/chroot-test.sh as root, else a message
run_chroot() {
    step "$2 (scripts/chroot-test.sh $1)"
    if [[ -n "${!3:-}" ]]; then
        echo "skipped ($3 is set)"
    elif [[ "$(id -u)" != 0 ]]; then
        echo "skipped: needs root (mmdebstrap, chroot, unshare); run: sudo bash scripts/chroot-test.sh $1"
    else
        CB3_MATRIX_DIR="$MATRIX" bash scripts/chroot-test.sh "$1"
    fi
}
run_chroot cpython3.14 "CPython 3.14 (Debian forky chroot)" CB3_SKIP_PY314
run_chroot pypy3.11 "PyPy 3.11 (Debian trixie chroot)" CB3_SKIP_PYPY

step "wheels: build manylinux_2_17 wheels (x86_64, aarch64) and the sdist, test them without Rust (scripts/wheels.sh)"
if [[ -n "${CB3_SKIP_WHEELS:-}" ]]; then
    echo "skipped (CB3_SKIP_WHEELS is set)"
elif [[ "$(id -u)" != 0 ]]; then
    echo "skipped: needs root (Debian chroots, qemu-user binfmt_misc); run: sudo bash scripts/wheels.sh"
else
    CB3_MATRIX_DIR="$MATRIX" CB3_WHEEL_DIR="$WORK/wheels" bash scripts/wheels.sh
fi

step "interpreter table (.test/matrix.md; python3 scripts/matrix.py readme puts it into README.md)"
"$PYTHON" scripts/matrix.py table --dir "$MATRIX" | tee "$WORK/matrix.md"
"$PYTHON" scripts/matrix.py readme --dir "$MATRIX" --check || true
end_step

printf '\n==> step times\n'
printf '%s\n' "${TIMINGS[@]}"
printf '%5d s  total\n' "$SECONDS"
printf '\n==> all tests passed\n'
