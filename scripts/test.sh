#!/usr/bin/env bash
# Runs every test of cb3 on a fresh machine: installs what is missing, then
#   0. as root: starts making the Debian chroots and fetching the wheel tools
#      in the background (used by steps 9 and 10)
#   1. rustlib: cargo test, and the header drift check (pinned cbindgen)
#   2. the primary CPython (PYTHON: any of 3.11-3.14, default python3.11),
#      cpython ABI: pip install . into a fresh venv (cargo reuses
#      rustlib/target), pytest, mypy --strict, asv smoke run, bench
#   3. the primary CPython, hybrid ABI under HPy's debug mode (handle leaks,
#      use after close), with an hpy.universal built from hpy 0.9.0's sdist plus
#      the vendored ctx_type.c patch (hpy_universal_wheel, cached per interpreter)
#   4. bounded fuzzing (scripts/fuzz.sh; DURATION seconds per target, default 20)
#   5. ASan + UBSan and valgrind runs (scripts/sanitize.sh)
#   6. the sdist: contents, install in a fresh venv, tests from the unpacked tree
#      and examples/downstream (scripts/sdist-check.sh)
#   7. the other CPythons of 3.11-3.13 (pyenv), cpython ABI: build, pytest; an
#      unsupported CPython (3.10, when pyenv has it) must get setup.py's error
#   8. CPython 3.13, hybrid ABI under HPy's debug mode (unless it is the primary)
#   9. CPython 3.14 (Debian forky chroot), PyPy 7.3.19 (Debian trixie chroot),
#      CPython 3.15 (Debian sid chroot; also under HPy's debug mode) and, with
#      CB3_PYPY80=1, PyPy 8.0 (the same sid chroot): scripts/chroot-test.sh;
#      root only, skipped with a message otherwise
#  10. wheels: scripts/wheels.sh builds the sdist and manylinux_2_17 wheels
#      (x86_64, aarch64; CPython 3.11-3.14; PyPy 3.11 x86_64) and tests each in a fresh
#      environment without Rust (x86_64: the full suite less
#      scripts/source-only-tests.txt; aarch64 under qemu, x86 SIMD paths under
#      qemu-x86_64 -cpu); root only, skipped with a message otherwise
#  11. PyPy against CPython per call (scripts/bench-pypy.sh, issue #15): the
#      bench on both interpreters in interleaved rounds; the table is written
#      to .test/pypy-speed.md and printed (docs/pypy-speed.md is the same
#      command's output on a quiet machine); root only, like step 9
# When step 10 runs, the source builds of steps 7 and 9 run
# only scripts/source-only-tests.txt: the rest of their suite runs on their
# wheels. Otherwise (not root, CB3_SKIP_WHEELS) they run the whole suite.
# Each step prints its time; each pytest run records a row of the README's
# interpreter table in .test/matrix (python3 scripts/matrix.py readme copies
# the table into README.md).
# Usage: bash scripts/test.sh     (CB3_SKIP_PYPY=1, CB3_SKIP_PY314=1,
#        CB3_SKIP_PY315=1, CB3_SKIP_PYENV=1, CB3_SKIP_WHEELS=1 skip steps 9,
#        7-8 and 10; CB3_PYPY80=1 adds PyPy 8.0 to steps 9 and 10;
#        CB3_SKIP_PYPY also leaves out PyPy's wheel and step 11;
#        PYTHON=python3.12 bash scripts/test.sh: another primary interpreter)
# Disk: about 8 GB outside the tracked files (README, "Running the tests").
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
WORK="${CB3_TEST_DIR:-$ROOT/.test}"
TOOLS="${CB3_TOOLS_DIR:-$HOME/.cache/cb3-tools}"
CBINDGEN_VERSION=0.29.4
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
PYENV_VERSIONS="${PYENV_ROOT:-$HOME/.pyenv}/versions"
MATRIX="$WORK/matrix"
mkdir -p "$WORK"
rm -rf "$MATRIX"

# children_cpu: sets CPU to the CPU seconds (user + system) of this script's
# finished child processes so far. A step's CPU time says what it costs on an
# idle machine when the wall time is inflated by other load. (Not a $( )
# function: a subshell has no children of its own.)
children_cpu() {
    local t
    times >"$WORK/.times"
    t=$(tail -n 1 "$WORK/.times")   # "XmY.YYYs XmY.YYYs": the children's user and system time
    CPU=0
    [[ $t =~ ^([0-9]+)m([0-9]+)[.,][0-9]+s\ ([0-9]+)m([0-9]+)[.,][0-9]+s$ ]] || return 0
    CPU=$(((BASH_REMATCH[1] + BASH_REMATCH[3]) * 60 + BASH_REMATCH[2] + BASH_REMATCH[4]))
}
STEP_NAME="" STEP_START=$SECONDS STEP_CPU=0 TIMINGS=()
end_step() {
    [[ -n "$STEP_NAME" ]] || return 0
    children_cpu
    local took=$((SECONDS - STEP_START)) cpu=$((CPU - STEP_CPU))
    printf -- '--- %d s: %s [CPU %d s]\n' "$took" "$STEP_NAME" "$cpu"
    TIMINGS+=("$(printf '%5d s  %5d s  %s' "$took" "$cpu" "$STEP_NAME")")
    STEP_NAME=""
}
step() {
    end_step
    children_cpu
    STEP_NAME="$*" STEP_START=$SECONDS STEP_CPU=$CPU
    printf '\n==> %s\n' "$*"
}

# The root-only steps (chroots, binfmt_misc) run when root and not skipped.
AS_ROOT=""
[[ "$(id -u)" != 0 ]] || AS_ROOT=1
wants_root_step() {  # wants_root_step SKIP_VAR: that root-only step will run
    [[ -n "$AS_ROOT" && -z "${!1:-}" ]]
}

step "toolchain"
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup)" >&2; exit 1; }
APT_NEEDED=()
command -v cc >/dev/null || APT_NEEDED+=(gcc)
command -v g++ >/dev/null || APT_NEEDED+=(g++)
command -v b3sum >/dev/null || APT_NEEDED+=(b3sum)   # tests/test_b3sum.py compares with it
command -v valgrind >/dev/null || APT_NEEDED+=(valgrind)   # scripts/sanitize.sh
# The root-only steps' host tools, now: apt must not run while the background
# preparation below does.
if wants_root_step CB3_SKIP_PY314 || wants_root_step CB3_SKIP_PY315 || wants_root_step CB3_SKIP_PYPY ||
    wants_root_step CB3_SKIP_WHEELS; then
    command -v mmdebstrap >/dev/null || APT_NEEDED+=(mmdebstrap)
fi
if wants_root_step CB3_SKIP_WHEELS; then
    command -v qemu-aarch64-static >/dev/null || APT_NEEDED+=(qemu-user-static)
    command -v update-binfmts >/dev/null || APT_NEEDED+=(binfmt-support)
    command -v aarch64-linux-gnu-strip >/dev/null || APT_NEEDED+=(binutils-aarch64-linux-gnu)
fi
if ((${#APT_NEEDED[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_NEEDED[@]}"
fi
# The primary interpreter: any supported CPython (3.11-3.13 on the host; 3.14
# runs in a chroot, step 9). setup.py refuses the others with a clear error.
"$PYTHON" -c 'import sys; assert sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] <= (3, 14), f"PYTHON must be CPython 3.11 to 3.14, not {sys.version}"'
PRIMARY_MINOR=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# Before the background lanes: one cargo install into $TOOLS at a time.
if [[ "$("$TOOLS/bin/cbindgen" --version 2>/dev/null)" != "cbindgen $CBINDGEN_VERSION" ]]; then
    cargo install cbindgen --version "$CBINDGEN_VERSION" --locked --root "$TOOLS"
fi

# find_python X.Y: pyenv's newest X.Y, else pythonX.Y on PATH
find_python() {
    local found
    found=$(ls -d "$PYENV_VERSIONS/$1".*/bin/"python$1" 2>/dev/null | sort -V | tail -n 1)
    [[ -n "$found" ]] || found=$(command -v "python$1" || true)
    echo "$found"
}

# The tests that the wheel step's full-suite runs leave out (they need a Rust
# toolchain, or are the memory scans): when the wheel step runs, the other
# interpreters' source builds run these, and the rest of the suite runs on
# their x86_64 wheels (scripts/wheels.sh); otherwise they run the whole suite.
mapfile -t SOURCE_ONLY_TESTS < <(grep -v '^#' scripts/source-only-tests.txt)
# CB3_SKIP_PYPY: no PyPy at all, neither its source build nor its wheel.
# PyPy 8.0 (source build and pp80 wheel) runs only with CB3_PYPY80=1: its test
# venv builds numpy, cryptography, psutil and blake3-py from source (PyPI has
# no pp80 wheels yet), over 25 minutes on a fresh 2-core machine, which CI's
# budget does not have (docs/interpreters.md). CB3_SKIP_PY315: no CPython 3.15.
CB3_SKIP_PYPY80=1
[[ -z "${CB3_PYPY80:-}" || -n "${CB3_SKIP_PYPY:-}" ]] || CB3_SKIP_PYPY80=""
if [[ -z "${CB3_WHEEL_PYTHONS:-}" ]]; then
    wheel_pythons="3.11 3.12 3.13 3.14"
    [[ -n "${CB3_SKIP_PY315:-}" ]] || wheel_pythons+=" 3.15"
    [[ -n "${CB3_SKIP_PYPY:-}" ]] || wheel_pythons+=" pypy3.11"
    [[ -n "$CB3_SKIP_PYPY80" ]] || wheel_pythons+=" pypy8.0"
    export CB3_WHEEL_PYTHONS="$wheel_pythons"
fi
SOURCE_ONLY_MODE=""
if wants_root_step CB3_SKIP_WHEELS; then
    SOURCE_ONLY_MODE="scripts/source-only-tests.txt; the rest runs on its wheel"
fi

# hpy_universal_wheel PY: prints an hpy 0.9.0 wheel for interpreter PY whose
# hpy.universal (the runtime of the hybrid ABI and of HPy's debug mode) has the
# vendored, patched ctx_type.c (third_party/hpy/PATCHES.md). PyPI's hpy 0.9.0
# has wheels for CPython <= 3.11 only, and its sdist has the 3.13 tp_flags bug:
# every interpreter gets one built from that sdist (hash-pinned), once per
# patch and interpreter, cached in $TOOLS/hpy-0.9.0-cb3-<ctx_type.c hash>/.
HPY_SDIST="hpy==0.9.0 --hash=sha256:4545310f3a7f9ac249c0f19a80a9b05f46565afb62b7e9225b79493b7b6c70cc"
# hpy_sdist: prints the path of hpy 0.9.0's sdist (HPY_SDIST's hash), downloaded
# once into $TOOLS: the upstream that third_party/hpy/ is checked against
# (scripts/hpy_vendor.py) and that the chroots build hpy.universal from.
hpy_sdist() {
    local sdist="$TOOLS/hpy-0.9.0-sdist/hpy-0.9.0.tar.gz" lock
    if [[ ! -f "$sdist" ]]; then
        mkdir -p "$TOOLS/hpy-0.9.0-sdist"
        exec {lock}>"$TOOLS/.hpy-sdist.lock"
        flock "$lock"
        if [[ ! -f "$sdist" ]]; then
            echo "$HPY_SDIST" >"$TOOLS/hpy-0.9.0-sdist/req.txt"
            "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
                --require-hashes -r "$TOOLS/hpy-0.9.0-sdist/req.txt" -d "$TOOLS/hpy-0.9.0-sdist.partial" >&2
            mv "$TOOLS/hpy-0.9.0-sdist.partial/hpy-0.9.0.tar.gz" "$sdist"
            rm -rf "$TOOLS/hpy-0.9.0-sdist.partial"
        fi
        exec {lock}>&-
    fi
    echo "$sdist"
}
hpy_universal_wheel() {
    local py=$1 tag dir wheel build lock=""
    tag=$("$py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
    dir="$TOOLS/hpy-0.9.0-cb3-$(sha256sum third_party/hpy/devel/src/runtime/ctx_type.c | cut -c1-12)"
    wheel=$(compgen -G "$dir/hpy-0.9.0-$tag-*.whl" | head -n 1 || true)
    if [[ -z "$wheel" ]]; then
        # One build at a time (the background lane below may be at it).
        mkdir -p "$TOOLS"
        exec {lock}>"$TOOLS/.hpy-wheel.lock"
        flock "$lock"
        wheel=$(compgen -G "$dir/hpy-0.9.0-$tag-*.whl" | head -n 1 || true)
    fi
    if [[ -z "$wheel" ]]; then
        build="$WORK/hpy-build-$tag"
        rm -rf "$build" && mkdir -p "$build"
        "$py" -m venv "$build/venv"
        tar -C "$build" -xzf "$(hpy_sdist)"
        cp third_party/hpy/devel/src/runtime/ctx_type.c "$build/hpy-0.9.0/hpy/devel/src/runtime/ctx_type.c"
        # hpy's setup.py adds -Werror; GCC >= 15 with glibc >= 2.43 (C23
        # strchr/strstr return const) then stops on hpymodule.c.
        CFLAGS="${CFLAGS:+$CFLAGS }-Wno-error=discarded-qualifiers" "$build/venv/bin/pip" wheel --quiet \
            --disable-pip-version-check --no-deps -w "$build/wheel" "$build/hpy-0.9.0" >&2
        wheel=$(compgen -G "$build/wheel/hpy-0.9.0-$tag-*.whl" | head -n 1)
        mkdir -p "$dir"
        mv "$wheel" "$dir/"
        wheel="$dir/$(basename "$wheel")"
        rm -rf "$build"
    fi
    [[ -z "${lock:-}" ]] || exec {lock}>&-
    echo "$wheel"
}

# Two background lanes start now, each in its own process group (set -m) so
# that an early exit of this script ends them too; their logs are shown when
# a step waits for them. Each later step makes sure of its own part again (a
# no-op when a lane did it), so a failed lane costs time, not correctness.
#   tools: the patched hpy wheels of the HPy debug-mode runs, then cargo-fuzz
#          (one job: the other core runs the steps below)
#   root:  as root, the Debian chroots with their venvs and the wheel step's
#          pinned tools and Rust targets -- mostly downloads, which a fresh
#          machine has none of -- then the wheels (scripts/build-wheels.sh)
#          and the aarch64 ones' test runs under qemu
declare -A LANE_PID=()
lane_tools() {
    hpy_universal_wheel "$PYTHON" >/dev/null
    if [[ -z "${CB3_SKIP_PYENV:-}" && $PRIMARY_MINOR != 3.13 && -n "$(find_python 3.13)" ]]; then
        hpy_universal_wheel "$(find_python 3.13)" >/dev/null
    fi
    CARGO_BUILD_JOBS=1 CB3_FUZZ_TOOLS_ONLY=1 CB3_TOOLS_DIR="$TOOLS" CB3_FUZZ_DIR="$WORK/fuzz" bash scripts/fuzz.sh
}
lane_root() {
    local status=0
    if wants_root_step CB3_SKIP_WHEELS; then
        CB3_WHEEL_PREPARE_ONLY=1 CB3_WHEEL_DIR="$WORK/wheels" bash scripts/wheels.sh || status=1
    fi
    if wants_root_step CB3_SKIP_PY314; then
        CB3_CHROOT_PREPARE_ONLY=1 bash scripts/chroot-test.sh cpython3.14 || status=1
    fi
    if wants_root_step CB3_SKIP_PYPY; then
        CB3_CHROOT_PREPARE_ONLY=1 bash scripts/chroot-test.sh pypy3.11 || status=1
    fi
    # CPython 3.15 and PyPy 8.0: one Debian sid chroot (its steps run in this order).
    if wants_root_step CB3_SKIP_PY315; then
        CB3_CHROOT_PREPARE_ONLY=1 bash scripts/chroot-test.sh cpython3.15 || status=1
        CB3_CHROOT_PREPARE_ONLY=1 CB3_HPY_SDIST="$(hpy_sdist)" CB3_CHROOT_HPY_DEBUG=1 \
            bash scripts/chroot-test.sh cpython3.15 || status=1
    fi
    if wants_root_step CB3_SKIP_PYPY80; then
        CB3_CHROOT_PREPARE_ONLY=1 bash scripts/chroot-test.sh pypy8.0 || status=1
    fi
    # The wheels themselves (from a copy of the checkout): the wheel step then
    # only tests them. Marked as built only when every wheel was.
    # Then the aarch64 wheels' runs under qemu (one emulated process, 10+
    # minutes): they do not wait for the wheel step. Both only once the
    # primary interpreter's full-suite run is over (its memory scans and race
    # tests run without this load beside them).
    if wants_root_step CB3_SKIP_WHEELS; then
        while [[ ! -f "$WORK/.primary-tested" ]]; do sleep 5; done
        rm -f "$WORK/wheels.built" "$WORK/wheels-arm64.status"
        if CB3_WHEEL_DIR="$WORK/wheels" bash scripts/build-wheels.sh; then
            touch "$WORK/wheels.built"
            local arm64=0
            CB3_WHEEL_SKIP_BUILD=1 CB3_WHEEL_PARTS=arm64 CB3_MATRIX_DIR="$MATRIX" CB3_WHEEL_DIR="$WORK/wheels" \
                bash scripts/wheels.sh || arm64=$?
            echo "$arm64" >"$WORK/wheels-arm64.status"
        else
            status=1
        fi
    fi
    return $status
}
start_lane() {  # start_lane NAME: runs lane_NAME in the background, log $WORK/lane-NAME.log
    set -m
    ( set +e; "lane_$1" >"$WORK/lane-$1.log" 2>&1; st=$?; echo "$st" >"$WORK/lane-$1.status"
      echo "exit status $st, done $SECONDS s into the run" >>"$WORK/lane-$1.log" ) &
    LANE_PID[$1]=$!
    set +m
    echo "background lane '$1' started (log: $WORK/lane-$1.log)"
}
wait_lane() {  # wait_lane NAME: the lane's end, and its log; returns the lane's exit status
    local pid=${LANE_PID[$1]:-} cpu
    [[ -n "$pid" ]] || return 0
    children_cpu
    cpu=$CPU
    wait "$pid" || true
    unset "LANE_PID[$1]"
    sed "s/^/    lane $1: /" "$WORK/lane-$1.log"
    # Its CPU time is counted in the step that waits for it.
    children_cpu
    echo "    lane $1: CPU $((CPU - cpu)) s"
    return "$(cat "$WORK/lane-$1.status" 2>/dev/null || echo 1)"
}
trap 'for pid in "${LANE_PID[@]}"; do kill -- "-$pid" 2>/dev/null || true; done' EXIT
rm -f "$WORK"/lane-*.status "$WORK/.primary-tested"
start_lane tools
if wants_root_step CB3_SKIP_PY314 || wants_root_step CB3_SKIP_PY315 || wants_root_step CB3_SKIP_PYPY ||
    wants_root_step CB3_SKIP_WHEELS; then
    start_lane root
fi

step "third_party/hpy: upstream hpy 0.9.0 plus exactly the listed patches (scripts/hpy_vendor.py)"
"$PYTHON" scripts/hpy_vendor.py check "$(hpy_sdist)"

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
# A copy: the primary build and the sdist check below build into the same
# target directory (CARGO_TARGET_DIR), the sdist's copy of the crate included.
STATICLIB="$WORK/libcb3.a"
cp rustlib/target/release/libcb3.a "$STATICLIB"

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
# interpreter (on tests/, or on the test files/node ids among PYTEST_ARGS),
# recorded as a row of the interpreter table.
run_pytest() {
    local venv=$1 where=$2 built=$3 mode=${4:-} info junit
    shift 4
    [[ "${1:-}" == -- ]] && shift
    info=$(cd "$WORK" && "$venv/bin/python" -P "$ROOT/scripts/matrix.py" describe)
    echo "$info"
    junit="$WORK/junit-$(basename "$venv").xml"
    local start=$SECONDS status=0
    local paths=(tests) arg
    for arg in "$@"; do [[ $arg != tests/* ]] || paths=(); done   # test files given: only those
    "$venv/bin/pytest" "${paths[@]}" -q -p no:cacheprovider --junitxml="$junit" "$@" || status=$?
    "$PYTHON" scripts/matrix.py record --dir "$MATRIX" --info "$info" --where "$where" --built "$built" \
        --mode "$mode" --junit "$junit" --seconds "tests=$((SECONDS - start))"
    return $status
}

step "CPython $PRIMARY_MINOR, cpython ABI: build and install"
make_venv "$WORK/venv"
# setup.py runs cargo, in the target directory that cargo test filled.
CARGO_TARGET_DIR="$ROOT/rustlib/target" "$WORK/venv/bin/pip" install --quiet --no-build-isolation .
(cd "$WORK" && "$WORK/venv/bin/python" -P -m cb3)

step "CPython $PRIMARY_MINOR, cpython ABI: pytest"
status=0
CB3_HPY_SDIST="$(hpy_sdist)" run_pytest "$WORK/venv" "$(where_of "$PYTHON")" "pip install ." "" -- || status=$?
touch "$WORK/.primary-tested"   # lane root goes on (the wheels)
((status == 0)) || exit "$status"

step "mypy --strict (stubs and typed examples)"
"$WORK/venv/bin/mypy" --strict --no-incremental cb3/_cb3.pyi tests/typing_examples.py

step "asv: check, smoke + quick run, offline publish, headless Chromium (scripts/asv-check.sh)"
CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" bash scripts/asv-check.sh

step "python -m cb3 bench --quick"
(cd "$WORK" && "$WORK/venv/bin/python" -P -m cb3 bench --quick --sizes 64,65536 --json "$WORK/bench.json")

# valgrind memcheck over this build (scripts/sanitize.sh's third part: one
# core for about 8 minutes) runs in a third background lane from here (after
# asv's pip install into this venv), beside the steps up to the sanitizer
# step, which waits for it.
lane_valgrind() {
    CB3_SANITIZE_STEPS=valgrind CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" PYTHON="$PYTHON" \
        bash scripts/sanitize.sh
}
start_lane valgrind

# debug_run PY VENV: PY's hybrid-ABI build (the Rust archive above) under HPy's
# debug mode (handle leaks, use after close), with hpy_universal_wheel's runtime.
# Multi-threaded tests are deselected here only: HPy 0.9's debug context
# aborts when a thread reenters after releasing the GIL (pyproject.toml).
DEBUG_MODE="HPy debug mode, not slow/threads tests"
debug_run() {
    local py=$1 venv=$2 wheel
    wheel=$(hpy_universal_wheel "$py")
    make_venv "$venv" "$py"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
    CB3_HPY_ABI=hybrid CB3_STATICLIB="$STATICLIB" "$venv/bin/pip" install --quiet --no-build-isolation .
    HPY=debug run_pytest "$venv" "$(where_of "$py")" "pip install ." "$DEBUG_MODE" -- -m "not slow and not threads"
}

step "CPython $PRIMARY_MINOR, hybrid ABI under HPy debug mode: pytest"
debug_run "$PYTHON" "$WORK/venv-debug"

step "fuzzing: atheris + cargo-fuzz, ${DURATION:-20} s per target (scripts/fuzz.sh)"
wait_lane tools || true   # cargo-fuzz: fuzz.sh installs it if the lane did not
CB3_PYTHON="$WORK/venv/bin/python" CB3_FUZZ_DIR="$WORK/fuzz" CB3_TOOLS_DIR="$TOOLS" bash scripts/fuzz.sh

step "sanitizers: ASan + UBSan, valgrind memcheck (scripts/sanitize.sh)"
# CB3_STATICLIB: the instrumented build links the archive above (ASan
# instruments the C code; the Rust archive is the same either way).
CB3_SANITIZE_STEPS="c asan" CB3_STATICLIB="$STATICLIB" CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" \
    PYTHON="$PYTHON" bash scripts/sanitize.sh
wait_lane valgrind || { echo "valgrind memcheck failed (lane valgrind, log above)" >&2; exit 1; }

step "sdist: contents, fresh-venv install, tests from the unpacked tree (scripts/sdist-check.sh)"
# CARGO_TARGET_DIR: the sdist's build runs cargo (as pip install of the sdist
# does) with the dependencies already built.
CARGO_TARGET_DIR="$ROOT/rustlib/target" CB3_PYTHON="$WORK/venv/bin/python" CB3_TEST_DIR="$WORK" PYTHON="$PYTHON" \
    bash scripts/sdist-check.sh

if [[ -z "${CB3_SKIP_PYENV:-}" ]]; then
    for minor in 3.11 3.12 3.13; do
        [[ $minor != "$PRIMARY_MINOR" ]] || continue   # the primary run above
        step "CPython $minor (pyenv), cpython ABI: build and pytest${SOURCE_ONLY_MODE:+ (scripts/source-only-tests.txt)}"
        py=$(find_python $minor)
        [[ -n "$py" ]] || { echo "CPython $minor not found (pyenv install $minor, or CB3_SKIP_PYENV=1)" >&2; exit 1; }
        make_venv "$WORK/venv$minor" "$py"
        CB3_STATICLIB="$STATICLIB" "$WORK/venv$minor/bin/pip" install --quiet --no-build-isolation .
        if [[ -n "$SOURCE_ONLY_MODE" ]]; then
            run_pytest "$WORK/venv$minor" "$(where_of "$py")" "pip install ." "$SOURCE_ONLY_MODE" -- "${SOURCE_ONLY_TESTS[@]}"
        else
            run_pytest "$WORK/venv$minor" "$(where_of "$py")" "pip install ." "" --
        fi
    done

    if [[ $PRIMARY_MINOR != 3.13 ]]; then
        # 3.13 is where the ctx_type.c patch matters (third_party/hpy/PATCHES.md).
        step "CPython 3.13, hybrid ABI under HPy debug mode (hpy.universal with the ctx_type.c patch)"
        debug_run "$(find_python 3.13)" "$WORK/venv3.13-debug"
    fi

    step "unsupported interpreter: setup.py refuses CPython 3.10 with a clear error"
    py=$(find_python 3.10)
    if [[ -z "$py" ]]; then
        echo "skipped: no CPython 3.10 here (pyenv install 3.10 to run this check)"
    else
        status=0
        out=$("$py" setup.py --version 2>&1) || status=$?
        echo "$out" | tail -n 1
        [[ $status -ne 0 && "$out" == *"error: cb3 supports CPython 3.11 to 3.15 and PyPy 3.11 (PyPy 7.3.19+ and 8.0); this is CPython 3.10"* ]] || {
            echo "expected setup.py to refuse $py with a clear error (exit status $status)" >&2
            exit 1
        }
    fi
fi

# root_step_runs SKIP_VAR NEEDS SCRIPT: true when a step that needs root
# should run here; otherwise says why it is skipped.
root_step_runs() {
    if [[ -n "${!1:-}" ]]; then
        echo "skipped ($1 is set)"
    elif [[ -z "$AS_ROOT" ]]; then
        echo "skipped: needs root ($2); run: sudo bash $3"
    else
        return 0
    fi
    return 1
}

# run_chroot PROFILE NAME SKIP_VAR: scripts/chroot-test.sh as root, else a
# message. Like the pyenv interpreters, the source build runs only the
# source-only tests when the wheel step runs the rest on its wheel.
run_chroot() {
    local name=$2 env=()
    if [[ -n "$SOURCE_ONLY_MODE" ]]; then
        name+=", scripts/source-only-tests.txt"
        env=(CB3_CHROOT_TESTS="${SOURCE_ONLY_TESTS[*]}" CB3_MATRIX_MODE="$SOURCE_ONLY_MODE")
    fi
    step "$name (scripts/chroot-test.sh $1)"
    # No wait for the root lane: chroot-test.sh's lock on its cache waits
    # for the lane's preparation of this chroot.
    if root_step_runs "$3" "mmdebstrap, chroot, unshare" "scripts/chroot-test.sh $1"; then
        env "${env[@]}" CB3_STATICLIB="$STATICLIB" CB3_MATRIX_DIR="$MATRIX" bash scripts/chroot-test.sh "$1"
    fi
}
run_chroot cpython3.14 "CPython 3.14 (Debian forky chroot)" CB3_SKIP_PY314
run_chroot pypy3.11 "PyPy 3.11 (Debian trixie chroot)" CB3_SKIP_PYPY
run_chroot cpython3.15 "CPython 3.15 (Debian sid chroot)" CB3_SKIP_PY315
run_chroot pypy8.0 "PyPy 8.0 (Debian sid chroot, cpython HPy ABI through cpyext; runs with CB3_PYPY80=1)" CB3_SKIP_PYPY80
step "CPython 3.15, hybrid ABI under HPy debug mode (Debian sid chroot; scripts/chroot-test.sh cpython3.15)"
if root_step_runs CB3_SKIP_PY315 "mmdebstrap, chroot, unshare" "scripts/chroot-test.sh cpython3.15"; then
    CB3_CHROOT_HPY_DEBUG=1 CB3_HPY_SDIST="$(hpy_sdist)" CB3_STATICLIB="$STATICLIB" CB3_MATRIX_DIR="$MATRIX" \
        CB3_MATRIX_MODE="$DEBUG_MODE" bash scripts/chroot-test.sh cpython3.15 -m "not slow and not threads"
fi

step "wheels: build manylinux_2_17 wheels (x86_64, aarch64; PyPy x86_64) and the sdist, test them without Rust (scripts/wheels.sh)"
if root_step_runs CB3_SKIP_WHEELS "Debian chroots, qemu-user binfmt_misc" scripts/wheels.sh; then
    wait_lane root || true
    # Built, and the aarch64 wheels tested, by the background lane; if any
    # wheel failed to build there, wheels.sh builds again (and says why) and
    # runs everything.
    if [[ -f "$WORK/wheels.built" && -f "$WORK/wheels-arm64.status" ]]; then
        CB3_WHEEL_SKIP_BUILD=1 CB3_WHEEL_PARTS="x86 simd" CB3_MATRIX_DIR="$MATRIX" CB3_WHEEL_DIR="$WORK/wheels" \
            bash scripts/wheels.sh
        [[ "$(cat "$WORK/wheels-arm64.status")" == 0 ]] || {
            echo "the aarch64 wheels' runs failed (background lane root, log above)" >&2
            exit 1
        }
    else
        CB3_MATRIX_DIR="$MATRIX" CB3_WHEEL_DIR="$WORK/wheels" bash scripts/wheels.sh
    fi
fi

step "PyPy vs CPython per call (scripts/bench-pypy.sh -> .test/pypy-speed.md)"
if root_step_runs CB3_SKIP_PYPY "the PyPy chroot" scripts/bench-pypy.sh; then
    wait_lane root || true
    # Measured last, alone: the other steps are done, so the rounds share
    # the machine with nothing of ours.
    CB3_BENCH_OUT="$WORK/pypy-speed.md" bash scripts/bench-pypy.sh
    cat "$WORK/pypy-speed.md"
fi

step "interpreter table (.test/matrix.md; python3 scripts/matrix.py readme puts it into README.md)"
wait_lane tools || true
wait_lane root || true
"$PYTHON" scripts/matrix.py table --dir "$MATRIX" | tee "$WORK/matrix.md"
"$PYTHON" scripts/matrix.py readme --dir "$MATRIX" --check || true
end_step

printf '\n==> step times (wall, CPU of the step'"'"'s processes)\n'
printf '%s\n' "${TIMINGS[@]}"
children_cpu
printf '%5d s  %5d s  total\n' "$SECONDS" "$CPU"
printf '\n==> all tests passed\n'
