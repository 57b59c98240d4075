#!/usr/bin/env bash
# Build cb3 with an interpreter the host does not have, in a Debian chroot, and
# run the test suite with it.
#
#   sudo scripts/chroot-test.sh pypy3.11 [pytest args...]     (scripts/pypy.sh)
#   sudo scripts/chroot-test.sh cpython3.14 [pytest args...]  e.g. -x -k smoke
#
# Profiles:
#   pypy3.11     PyPy 7.3.19 (Python 3.11) from Debian 13 (trixie), hybrid ABI
#                against PyPy's own HPy headers (Debian 12's PyPy has HPy 0.0.4
#                and cannot load HPy 0.9 binaries). Cache $CB3_PYPY_CACHE
#                (default /var/cache/cb3-pypy). scripts/build-wheels.sh and
#                scripts/wheels.sh build and test PyPy's wheel in this chroot
#                too, under their own paths (/opt/cb3-build-venv, /opt/cb3-wheel*).
#   cpython3.14  CPython 3.14 from Debian forky (testing), cpython ABI with
#                the vendored hpy.devel. Cache $CB3_PY314_CACHE (default
#                /var/cache/cb3-cpython3.14).
#
# What it does (root is needed: mmdebstrap, chroot, unshare):
#   1. Creates, or reuses, a chroot made with mmdebstrap holding the
#      interpreter, its headers and venv support, gcc, libc6-dev and
#      ca-certificates, plus g++, b3sum and pkgconf for the tests that use them
#      on the host too, and a venv with the test tools. It is cached outside
#      the repo and rebuilt when its marker file is missing or names another
#      recipe (CB3_CHROOT_REBUILD=1 forces it).
#   2. Builds rustlib (the Rust staticlib) on the host with the host's cargo,
#      into <cache>/cargo-target, and hands the archive to setup.py through
#      CB3_STATICLIB (setup.py then does not run cargo). Debian's rustc is
#      older than rustlib/Cargo.toml's rust-version in trixie, and a host build
#      is incremental across runs; the host's glibc is older than the chroots',
#      so the archive links there.
#   3. Copies the working tree (tracked and untracked, not ignored files) into
#      the chroot and runs `pip install .` with the chroot's pip: a real
#      PEP 517 build (setuptools from PyPI, no hpy from PyPI).
#   4. Runs pytest on tests/ through `unshare -m` with /proc, a private
#      /dev/pts (pseudo-terminal tests), the host's Rust toolchain
#      (tests/c/run.sh and the native-static-libs check run cargo/rustc; its
#      debug target dir is cached in <cache>/cargo-target-c) and the host's cb3
#      tools dir (pinned cbindgen) mounted, so no mount outlives the script.
#      The exit status is pytest's. With CB3_MATRIX_DIR set, the result is
#      recorded there for the README's interpreter table (scripts/matrix.py).
#
# Timing on the 2-core reference VM: see docs/pypy.md and docs/interpreters.md.
#
# Environment:
#   CB3_CHROOT_REBUILD 1: throw the cached chroot away first (CB3_PYPY_REBUILD too)
#   CB3_PYPY_SUITE, CB3_PY314_SUITE  the Debian suite of each profile
#   CB3_HPY_ABI        passed through to setup.py
#   CB3_MATRIX_DIR     record the run there (scripts/test.sh sets it)
#   CB3_MATRIX_MODE    the "mode" of that row (which tests ran, when not all)
#   CB3_CHROOT_TESTS   test files/node ids (relative to the repository) to run
#                      instead of tests/
#   CB3_STATICLIB      a rustlib archive built on the host: used instead of
#                      building one (step 2)
#   CB3_CHROOT_PREPARE_ONLY  1: only make sure the chroot and its venv exist
#                      (step 1; scripts/test.sh does it early, in the background)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROFILE=${1:?usage: chroot-test.sh pypy3.11|pypy8.0|cpython3.14|cpython3.15 [pytest args...]}
shift
# What the tests need on top of the interpreter: the C API tests compile with
# g++ and pkgconf, test_b3sum compares with b3sum.
COMMON_PACKAGES=gcc,g++,libc6-dev,ca-certificates,b3sum,pkgconf
APT_OPTIONS=()
# --only-binary cryptography: no long source build of it (there is a wheel).
ONLY_BINARY=(--only-binary cryptography)
VENV_OPTIONS=()
VENV=/opt/cb3-venv # the test venv, inside the chroot
case "$PROFILE" in
pypy3.11)
    CACHE=${CB3_PYPY_CACHE:-/var/cache/cb3-pypy}
    SUITE=${CB3_PYPY_SUITE:-trixie}
    PYTHON=pypy3
    RECIPE_NAME=pypy
    PACKAGES=pypy3,pypy3-dev,pypy3-venv,$COMMON_PACKAGES
    WHERE="Debian $SUITE chroot"
    # The test tools, the same as tests/requirements.txt (the whole suite runs
    # on PyPy) except: mypy (static, run on CPython), and two pins lowered
    # because the PyO3-built PyPy wheels of hypothesis >= 6.156 (its Rust core)
    # and cryptography >= 47 need PyPyModule_FromDefAndSpec2, which PyPy 7.3.19
    # lacks ("undefined symbol" at import). blake3 (blake3-py, the tests'
    # independent BLAKE3) has no PyPy wheel: pip builds it from its sdist with
    # the host's Rust toolchain, bind-mounted into the chroot.
    TEST_DEPS=(pytest==9.2.0 hypothesis==6.155.7 cryptography==46.0.7 blake3==1.0.11 numpy==2.4.6 psutil==7.2.2
        pycryptodome==4.4.0)
    ;;
cpython3.14)
    CACHE=${CB3_PY314_CACHE:-/var/cache/cb3-cpython3.14}
    SUITE=${CB3_PY314_SUITE:-forky}
    PYTHON=python3.14
    RECIPE_NAME=cpython3.14
    PACKAGES=python3.14,python3.14-dev,python3.14-venv,$COMMON_PACKAGES
    WHERE="Debian $SUITE chroot"
    # testing/sid Release files expire a week after publication; a mirror
    # snapshot older than that is still the suite we want.
    APT_OPTIONS=(--aptopt='Acquire::Check-Valid-Until "false"')
    # Exactly the host's pins.
    mapfile -t TEST_DEPS < <(sed -e 's/[[:space:]]*#.*//' -e '/^[[:space:]]*$/d' "$REPO/tests/requirements.txt")
    ;;
cpython3.15|pypy8.0)
    # One Debian sid chroot for both: CPython 3.15 and PyPy 8.0 (Python 3.11,
    # HPy 0.9.1.dev61, cpyext only: no _hpy_universal); one venv per profile.
    CACHE=${CB3_SID_CACHE:-/var/cache/cb3-sid}
    SUITE=${CB3_SID_SUITE:-sid}
    RECIPE_NAME=sid
    # aarch64 binutils: scripts/build-wheels.sh builds both interpreters'
    # wheels here too. libssl-dev: PyPI has no PyPy 8.0 (pp80) wheels yet, so
    # pip builds cryptography (and numpy, psutil, blake3) from source for it.
    # python3-numpy: PyPI has no cp315 numpy wheel either; Debian's is the
    # pinned 2.4.6, built for 3.15 (the 3.15 venvs see it: --system-site-packages).
    PACKAGES=python3.15,python3.15-dev,python3.15-venv,pypy3,pypy3-dev,pypy3-venv,$COMMON_PACKAGES
    PACKAGES+=,binutils-aarch64-linux-gnu,libssl-dev,python3-numpy
    WHERE="Debian $SUITE chroot"
    APT_OPTIONS=(--aptopt='Acquire::Check-Valid-Until "false"')
    if [ "$PROFILE" = cpython3.15 ]; then
        PYTHON=python3.15
        VENV_OPTIONS=(--system-site-packages)
        mapfile -t TEST_DEPS < <(sed -e 's/[[:space:]]*#.*//' -e '/^[[:space:]]*$/d' "$REPO/tests/requirements.txt")
    else
        PYTHON=pypy3
        ONLY_BINARY=()  # no pp80 wheels on PyPI: cryptography builds with the host's Rust
        TEST_DEPS=(pytest==9.2.0 hypothesis==6.155.7 cryptography==46.0.7 blake3==1.0.11 numpy==2.4.6 psutil==7.2.2
            pycryptodome==4.4.0)
    fi
    VENV=/opt/cb3-venv-$PROFILE
    ;;
*)
    echo "chroot-test.sh: unknown profile $PROFILE (pypy3.11, pypy8.0, cpython3.14 or cpython3.15)" >&2
    exit 2
    ;;
esac
ROOT=$CACHE/chroot
# CB3_CHROOT_HPY_DEBUG=1: the hybrid ABI under HPy's debug mode, in a venv of
# its own holding an hpy.universal built in the chroot from the hpy 0.9.0
# sdist (CB3_HPY_SDIST) with the vendored, patched ctx_type.c, as
# scripts/test.sh's hpy_universal_wheel does for the host's CPythons.
HPY_DEBUG=${CB3_CHROOT_HPY_DEBUG:-}
if [ -n "$HPY_DEBUG" ]; then
    case "$PROFILE" in cpython*) ;; *) echo "CB3_CHROOT_HPY_DEBUG: CPython profiles only" >&2; exit 2 ;; esac
    VENV=$VENV-hpy-debug
    CB3_HPY_ABI=hybrid
fi
# (The pypy3.11 recipe reads as scripts/pypy.sh's did, so existing caches stay valid.)
RECIPE="cb3-$RECIPE_NAME-chroot v1 suite=$SUITE packages=$PACKAGES${APT_OPTIONS:+ options=${APT_OPTIONS[*]}}"
MARKER=$ROOT/.cb3-chroot-complete
START=$SECONDS
REBUILD=${CB3_CHROOT_REBUILD:-${CB3_PYPY_REBUILD:-0}}

log() { printf '[%s %3ds] %s\n' "$PROFILE" $((SECONDS - START)) "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, chroot, unshare): run sudo bash scripts/chroot-test.sh $PROFILE"
case "$ROOT" in "$REPO"/*) die "the cache must be outside the repository" ;; esac

# One run at a time per cache: runs share the chroot's /build and venv.
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

CHROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CHROOT_ENV=(HOME=/root LANG=C.UTF-8 PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
    PIP_DEFAULT_TIMEOUT=180 PYTHONDONTWRITEBYTECODE=1 ${CB3_HPY_ABI:+CB3_HPY_ABI=$CB3_HPY_ABI})

# in_chroot [--rust] [--tests] COMMAND...: runs COMMAND in the chroot, in a
# private mount namespace with /proc, and a clean environment (the host's
# PIP_FIND_LINKS etc. stay out). --rust bind-mounts the host's Rust toolchain
# at /opt/host-cargo and /opt/host-rustup and puts it on PATH; --tests also
# mounts a private /dev/pts (tests open pseudo-terminals), the host's cb3 tools
# (the pinned cbindgen, if installed) and a cargo target directory kept in the
# cache (tests/c/run.sh builds rustlib in debug mode; incremental across runs).
# Every mount ends with the namespace.
in_chroot() {
    local mounts='mount -t proc proc "$R/proc"' env=("${CHROOT_ENV[@]}" PATH=$CHROOT_PATH)
    local rust=0 tests=0
    while [ $# -gt 0 ]; do
        case "$1" in
        --rust) rust=1 ;;
        --tests) rust=1 tests=1 ;;
        *) break ;;
        esac
        shift
    done
    if [ $rust = 1 ]; then
        mkdir -p "$ROOT/opt/host-cargo" "$ROOT/opt/host-rustup"
        mounts+=' && mount --bind "$CARGO_DIR" "$R/opt/host-cargo" && mount --bind "$RUSTUP_DIR" "$R/opt/host-rustup"'
        env+=(PATH=/opt/host-cargo/bin:$CHROOT_PATH CARGO_HOME=/opt/host-cargo RUSTUP_HOME=/opt/host-rustup)
    fi
    local tools=${CB3_TOOLS_DIR:-$HOME/.cache/cb3-tools}
    if [ $tests = 1 ]; then
        [ -d "$tools" ] || { tools=$CACHE/no-tools && mkdir -p "$tools"; }
        mkdir -p "$ROOT/opt/host-cb3-tools" "$ROOT/opt/cargo-target-c" "$CACHE/cargo-target-c"
        mounts+=' && mount --bind "$TOOLS_DIR" "$R/opt/host-cb3-tools" && mount --bind "$TARGET_C" "$R/opt/cargo-target-c"'
        mounts+=' && mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$R/dev/pts"'
        mounts+=' && mount --bind "$R/dev/pts/ptmx" "$R/dev/ptmx"'
        env+=(CB3_C_TARGET_DIR=/opt/cargo-target-c CB3_CBINDGEN=/opt/host-cb3-tools/bin/cbindgen)
    fi
    R=$ROOT CARGO_DIR=${CARGO_HOME:-$HOME/.cargo} RUSTUP_DIR=${RUSTUP_HOME:-$HOME/.rustup} TOOLS_DIR=$tools \
        TARGET_C=$CACHE/cargo-target-c unshare -m -- sh -c "$mounts"' && exec chroot "$R" "$@"' sh \
        env -i "${env[@]}" "$@"
}

# ---- 1. the chroot ----------------------------------------------------------
if [ "$REBUILD" = 1 ] || [ ! -f "$MARKER" ] || [ "$(cat "$MARKER")" != "$RECIPE" ]; then
    command -v mmdebstrap >/dev/null || {
        log "installing mmdebstrap on the host"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
    }
    log "creating the $SUITE chroot in $ROOT (mmdebstrap)"
    rm -rf "$ROOT" "$ROOT.partial"
    mmdebstrap --quiet --variant=apt "${APT_OPTIONS[@]}" --include="$PACKAGES" "$SUITE" "$ROOT.partial"
    mv "$ROOT.partial" "$ROOT"
    echo "$RECIPE" >"$MARKER"
fi

# Network plumbing and the host's extra CA certificates (a TLS-intercepting
# proxy's CA, say), refreshed every run: cheap, and the host may change.
cp -L /etc/resolv.conf /etc/hosts "$ROOT/etc/" 2>/dev/null || true
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    if ! diff -rq /usr/local/share/ca-certificates "$ROOT/usr/local/share/ca-certificates" >/dev/null 2>&1; then
        log "adding the host's CA certificates to the chroot"
        cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
        in_chroot update-ca-certificates >/dev/null
    fi
fi

# ---- 2. the venv with the test tools ----------------------------------------
VENV_RECIPE="${VENV_OPTIONS[*]:+${VENV_OPTIONS[*]} }${TEST_DEPS[*]}"
if [ ! -f "$ROOT$VENV/.cb3-deps" ] || [ "$(cat "$ROOT$VENV/.cb3-deps")" != "$VENV_RECIPE" ]; then
    log "creating the venv $VENV ${VENV_OPTIONS[*]} and installing: ${TEST_DEPS[*]}"
    rm -rf "${ROOT:?}$VENV"
    in_chroot "$PYTHON" -m venv "${VENV_OPTIONS[@]}" "$VENV"
    # Packages without a wheel for this interpreter (blake3 on PyPy) build with
    # the host's cargo.
    in_chroot --rust "$VENV/bin/python" -m pip install -q "${ONLY_BINARY[@]}" "${TEST_DEPS[@]}"
    # A wheel that installs but does not load would only show up as skipped tests.
    in_chroot "$VENV/bin/python" -c 'import pytest, hypothesis.strategies, blake3, numpy, psutil, Crypto
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305'
    echo "$VENV_RECIPE" >"$ROOT$VENV/.cb3-deps"
fi
if [ -n "$HPY_DEBUG" ]; then
    sdist=${CB3_HPY_SDIST:?CB3_CHROOT_HPY_DEBUG needs CB3_HPY_SDIST, the hpy 0.9.0 sdist}
    patched=$REPO/third_party/hpy/devel/src/runtime/ctx_type.c
    wheels=/opt/hpy-0.9.0-cb3-$(sha256sum "$patched" | cut -c1-12)
    if ! compgen -G "$ROOT$wheels/hpy-0.9.0-*.whl" >/dev/null; then
        log "building hpy.universal from $(basename "$sdist") with the vendored ctx_type.c"
        rm -rf "$ROOT/tmp/hpy-build" && mkdir -p "$ROOT/tmp/hpy-build"
        tar -C "$ROOT/tmp/hpy-build" -xzf "$sdist"
        cp "$patched" "$ROOT/tmp/hpy-build/hpy-0.9.0/hpy/devel/src/runtime/ctx_type.c"
        # hpy's setup.py adds -Werror (GCC >= 15: discarded-qualifiers in
        # hpymodule.c) and asks git for a revision (none here: a fixed one).
        sed -i "s/except subprocess.CalledProcessError:/except Exception:/" "$ROOT/tmp/hpy-build/hpy-0.9.0/setup.py"
        in_chroot CFLAGS=-Wno-error=discarded-qualifiers "$VENV/bin/python" -m pip wheel -q --no-deps \
            -w "$wheels" /tmp/hpy-build/hpy-0.9.0
        rm -rf "$ROOT/tmp/hpy-build"
    fi
    wheel=$(cd "$ROOT$wheels" && ls hpy-0.9.0-*.whl | head -n 1)
    if [ "$(cat "$ROOT$VENV/.cb3-hpy" 2>/dev/null)" != "$wheels/$wheel" ]; then
        in_chroot "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$wheels/$wheel"
        echo "$wheels/$wheel" >"$ROOT$VENV/.cb3-hpy"
    fi
fi

# ---- 3. rustlib -------------------------------------------------------------
if [ -n "${CB3_CHROOT_PREPARE_ONLY:-}" ]; then
    log "chroot and venv ready (CB3_CHROOT_PREPARE_ONLY): done in $((SECONDS - START)) s"
    exit 0
fi
if [ -n "${CB3_STATICLIB:-}" ]; then
    log "rustlib: the archive in CB3_STATICLIB ($CB3_STATICLIB)"
    cp "$CB3_STATICLIB" "$ROOT/tmp/libcb3.a"
else
    command -v cargo >/dev/null || die "needs cargo on the host (rustlib/Cargo.toml's rust-version)"
    log "building rustlib on the host ($(cargo --version))"
    (cd "$REPO/rustlib" && cargo build --quiet --release --locked --lib --target-dir "$CACHE/cargo-target")
    cp "$CACHE/cargo-target/release/libcb3.a" "$ROOT/tmp/libcb3.a"
fi

# ---- 4. build and install with the chroot's pip, then test -------------------
log "copying the working tree into the chroot"
rm -rf "$ROOT/build"
mkdir -p "$ROOT/build/src"
if git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Files that exist now: tracked (with their uncommitted edits) and untracked, not ignored.
    (cd "$REPO" && git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
        [ -e "$f" ] && printf '%s\0' "$f"
    done | tar --null -T - -cf -) | tar -C "$ROOT/build/src" -xf -
else
    tar -C "$REPO" --exclude=./build --exclude=./rustlib/target --exclude='*.egg-info' --exclude='*.so' -cf - . |
        tar -C "$ROOT/build/src" -xf -
fi

log "pip install . with $PYTHON (PEP 517 build)"
build_start=$SECONDS
in_chroot CB3_STATICLIB=/tmp/libcb3.a "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall /build/src
build_seconds=$((SECONDS - build_start))

log "checking the installed module"
# Run from /, not the source tree: the installed cb3 (with its binary) must be
# the one imported, not the source directory's cb3/.
info=$(in_chroot sh -c "cd / && $VENV/bin/python -P /build/src/scripts/matrix.py describe")
log "$info"
case "$info" in *site-packages*) ;; *) die "the cb3 imported is not the installed one" ;; esac

log "pytest with $PYTHON"
status=0
test_start=$SECONDS
TEST_PATHS=(/build/src/tests)
if [ -n "${CB3_CHROOT_TESTS:-}" ]; then
    TEST_PATHS=()
    for t in $CB3_CHROOT_TESTS; do TEST_PATHS+=("/build/src/$t"); done
fi
# shellcheck disable=SC2016  # $0/$@ are the inner shell's
in_chroot --tests ${HPY_DEBUG:+HPY=debug} sh -c 'cd /build && exec "$0" -p no:cacheprovider --rootdir=/build/src -c /build/src/pyproject.toml \
    --junitxml=/build/junit.xml "$@"' "$VENV/bin/pytest" "$@" "${TEST_PATHS[@]}" || status=$?
test_seconds=$((SECONDS - test_start))
if [ -n "${CB3_MATRIX_DIR:-}" ] && [ -f "$ROOT/build/junit.xml" ]; then
    python3 "$REPO/scripts/matrix.py" record --dir "$CB3_MATRIX_DIR" --info "$info" --where "$WHERE" \
        --built "pip install ." --mode "${CB3_MATRIX_MODE:-}" --junit "$ROOT/build/junit.xml" \
        --seconds "build=$build_seconds" --seconds "tests=$test_seconds" --seconds "total=$((SECONDS - START))"
fi
log "done in $((SECONDS - START)) s: build $build_seconds s, tests $test_seconds s (pytest exit status $status)"
exit "$status"
