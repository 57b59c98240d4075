#!/usr/bin/env bash
# Build cb3 with PyPy 3.11 and run the test suite with it.
#
#   sudo scripts/pypy.sh [pytest args...]     e.g. scripts/pypy.sh -x -k smoke
#
# What it does (root is needed: mmdebstrap, chroot, unshare):
#   1. Creates, or reuses, a Debian 13 (trixie) chroot made with mmdebstrap
#      holding pypy3 (7.3.19 carries HPy 0.9.1.dev; Debian 12's PyPy has
#      HPy 0.0.4 and cannot load HPy 0.9 binaries), pypy3-dev, pypy3-venv, gcc,
#      libc6-dev and ca-certificates, plus g++, b3sum and pkgconf for the
#      tests that use them on the host too, and a PyPy venv with the test tools.
#      It is cached outside the repo ($CB3_PYPY_CACHE, default
#      /var/cache/cb3-pypy) and rebuilt when its marker file is missing or
#      names another recipe.
#   2. Builds rustlib (the Rust staticlib) on the host with the host's cargo,
#      into $CB3_PYPY_CACHE/cargo-target, and hands the archive to setup.py
#      through CB3_STATICLIB (setup.py then does not run cargo).
#   3. Copies the working tree (tracked and untracked, not ignored files) into
#      the chroot and runs `pip install .` with PyPy's own pip: a real PEP 517
#      build against PyPy's own HPy headers (hybrid ABI). setuptools comes from
#      PyPI; hpy does not (pyproject's implementation_name marker).
#   4. Runs pytest on tests/ with PyPy through `unshare -m` with /proc, a
#      private /dev/pts (pseudo-terminal tests), the host's Rust toolchain
#      (tests/c/run.sh and the native-static-libs check run cargo/rustc; its
#      debug target dir is cached in $CB3_PYPY_CACHE/cargo-target-c) and the
#      host's cb3 tools dir (pinned cbindgen) mounted, so no mount outlives
#      the script. The exit status is pytest's.
#
# Timing on the 2-core reference VM: about 115 s cold (empty cache: chroot
# 21 s, venv with blake3-py built from source 55 s, build 6 s, tests 30 s),
# about 35 s warm (tests/c/run.sh's sanitizer builds are most of the tests).
#
# Environment:
#   CB3_PYPY_CACHE    cache directory (default /var/cache/cb3-pypy)
#   CB3_PYPY_SUITE    Debian suite (default trixie)
#   CB3_PYPY_REBUILD  1: throw the cached chroot away first
#   CB3_HPY_ABI       passed through to setup.py (default there: hybrid on PyPy)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CB3_PYPY_CACHE:-/var/cache/cb3-pypy}
SUITE=${CB3_PYPY_SUITE:-trixie}
ROOT=$CACHE/chroot
VENV=/opt/cb3-venv                     # inside the chroot
# g++, b3sum and pkgconf: what the host has for the tests that compile the C API
# (tests/c/run.sh) and compare with b3sum, so they run here too.
PACKAGES=pypy3,pypy3-dev,pypy3-venv,gcc,g++,libc6-dev,ca-certificates,b3sum,pkgconf
# The test tools, the same as tests/requirements.txt (the whole suite runs on
# PyPy) except: hpy (PyPy's own is used), mypy (static, run on CPython), and
# two pins lowered because the PyO3-built PyPy wheels of hypothesis >= 6.156
# (its Rust core) and cryptography >= 47 need PyPyModule_FromDefAndSpec2,
# which PyPy 7.3.19 lacks ("undefined symbol" at import). blake3 (blake3-py,
# the tests' independent BLAKE3) has no PyPy wheel: pip builds it from its
# sdist with the host's Rust toolchain, bind-mounted into the chroot.
TEST_DEPS="pytest==9.2.0 hypothesis==6.155.7 cryptography==46.0.7 blake3==1.0.11 numpy==2.4.6 psutil==7.2.2 pycryptodome==4.4.0"
RECIPE="cb3-pypy-chroot v1 suite=$SUITE packages=$PACKAGES"
MARKER=$ROOT/.cb3-chroot-complete
START=$SECONDS

log() { printf '[pypy.sh %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, chroot, unshare)"
case "$ROOT" in "$REPO"/*) die "the cache must be outside the repository" ;; esac

# One run at a time per cache: runs share the chroot's /build and venv.
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

# Runs a command in the chroot, in a private mount namespace with /proc, and
# with a clean environment (the host's PIP_FIND_LINKS etc. stay out).
in_chroot() {
    # shellcheck disable=SC2016  # $1/$@ are the inner shell's
    unshare -m -- sh -c 'mount -t proc proc "$1/proc" && shift && exec chroot "$@"' sh "$ROOT" "$ROOT" \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 \
        PYTHONDONTWRITEBYTECODE=1 ${CB3_HPY_ABI:+CB3_HPY_ABI=$CB3_HPY_ABI} "$@"
}

# in_chroot, with the host's Rust toolchain visible at /opt/host-cargo and
# /opt/host-rustup (bind mounts that end with the namespace).
in_chroot_with_rust() {
    mkdir -p "$ROOT/opt/host-cargo" "$ROOT/opt/host-rustup"
    # shellcheck disable=SC2016
    unshare -m -- sh -c 'mount -t proc proc "$1/proc" && mount --bind "$2" "$1/opt/host-cargo" &&
        mount --bind "$3" "$1/opt/host-rustup" && r=$1 && shift 3 && exec chroot "$r" "$@"' \
        sh "$ROOT" "${CARGO_HOME:-$HOME/.cargo}" "${RUSTUP_HOME:-$HOME/.rustup}" \
        env -i HOME=/root LANG=C.UTF-8 PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
        PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 PYTHONDONTWRITEBYTECODE=1 "$@"
}

# in_chroot_with_rust for pytest, plus a private /dev/pts (tests open
# pseudo-terminals), the host's cb3 tools (the pinned cbindgen, if installed)
# and a cargo target directory kept in the cache (tests/c/run.sh builds
# rustlib in debug mode; incremental across runs).
in_chroot_for_tests() {
    local tools=${CB3_TOOLS_DIR:-$HOME/.cache/cb3-tools}
    [ -d "$tools" ] || { tools=$CACHE/no-tools && mkdir -p "$tools"; }
    mkdir -p "$ROOT/opt/host-cargo" "$ROOT/opt/host-rustup" "$ROOT/opt/host-cb3-tools" "$ROOT/opt/cargo-target-c" \
        "$CACHE/cargo-target-c"
    # shellcheck disable=SC2016
    unshare -m -- sh -c 'mount -t proc proc "$1/proc" && mount --bind "$2" "$1/opt/host-cargo" &&
        mount --bind "$3" "$1/opt/host-rustup" && mount --bind "$4" "$1/opt/host-cb3-tools" &&
        mount --bind "$5" "$1/opt/cargo-target-c" &&
        mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$1/dev/pts" &&
        mount --bind "$1/dev/pts/ptmx" "$1/dev/ptmx" && r=$1 && shift 5 && exec chroot "$r" "$@"' \
        sh "$ROOT" "${CARGO_HOME:-$HOME/.cargo}" "${RUSTUP_HOME:-$HOME/.rustup}" "$tools" "$CACHE/cargo-target-c" \
        env -i HOME=/root LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
        PATH=/opt/host-cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        CARGO_HOME=/opt/host-cargo RUSTUP_HOME=/opt/host-rustup CB3_C_TARGET_DIR=/opt/cargo-target-c \
        CB3_CBINDGEN=/opt/host-cb3-tools/bin/cbindgen "$@"
}

# ---- 1. the chroot ----------------------------------------------------------
if [ "${CB3_PYPY_REBUILD:-0}" = 1 ] || [ ! -f "$MARKER" ] || [ "$(cat "$MARKER")" != "$RECIPE" ]; then
    command -v mmdebstrap >/dev/null || {
        log "installing mmdebstrap on the host"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
    }
    log "creating the $SUITE chroot in $ROOT (mmdebstrap)"
    rm -rf "$ROOT" "$ROOT.partial"
    mmdebstrap --quiet --variant=apt --include="$PACKAGES" "$SUITE" "$ROOT.partial"
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

# ---- 2. the PyPy venv -------------------------------------------------------
if [ ! -f "$ROOT$VENV/.cb3-deps" ] || [ "$(cat "$ROOT$VENV/.cb3-deps")" != "$TEST_DEPS" ]; then
    log "creating the PyPy venv $VENV and installing: $TEST_DEPS"
    rm -rf "${ROOT:?}$VENV"
    in_chroot pypy3 -m venv "$VENV"
    # --only-binary cryptography: no long source build of it here. blake3
    # builds from source (maturin + the host's cargo, ~40 s, once per cache).
    with_rust=(env CARGO_HOME=/opt/host-cargo RUSTUP_HOME=/opt/host-rustup
        PATH=/opt/host-cargo/bin:/usr/local/bin:/usr/bin:/bin)
    # shellcheck disable=SC2086
    in_chroot_with_rust "${with_rust[@]}" "$VENV/bin/python" -m pip install -q --only-binary cryptography $TEST_DEPS
    # A wheel that installs but does not load would only show up as skipped tests.
    in_chroot "$VENV/bin/python" -c 'import pytest, hypothesis.strategies, blake3, numpy, psutil, Crypto
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305'
    echo "$TEST_DEPS" >"$ROOT$VENV/.cb3-deps"
fi

# ---- 3. rustlib -------------------------------------------------------------
# Built on the host: Debian trixie's rustc (1.85) is too old for
# rustlib/Cargo.lock (constant_time_eq 0.5.0 needs rustc 1.95), and a host
# build is incremental across runs. glibc: the host's is older than trixie's,
# so the archive links fine in the chroot.
command -v cargo >/dev/null || die "needs cargo on the host (rustlib/Cargo.lock needs rustc >= 1.95)"
log "building rustlib on the host ($(cargo --version))"
(cd "$REPO/rustlib" && cargo build --quiet --release --locked --lib --target-dir "$CACHE/cargo-target")
cp "$CACHE/cargo-target/release/libcb3.a" "$ROOT/tmp/libcb3.a"

# ---- 4. build and install with PyPy's pip, then test --------------------------
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

log "pip install . with PyPy (PEP 517 build, PyPy's HPy headers)"
in_chroot CB3_STATICLIB=/tmp/libcb3.a "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall /build/src

log "checking the installed module"
in_chroot sh -c "cd / && $VENV/bin/python -c '
import sys, cb3, cb3._cb3 as ext
assert \"/site-packages/\" in cb3.__file__, cb3.__file__
print(sys.implementation.cache_tag, sys.version.split()[0], \"hpy_abi=\" + cb3.HPY_ABI,
      \"simd=\" + cb3.simd_backend(), \"built_for=\" + ext.BUILD_INTERPRETER)
'"

log "pytest with PyPy"
status=0
# Run from /build, not the source tree: the installed cb3 (with its binary)
# must be the one imported, not the source directory's cb3/.
# shellcheck disable=SC2016  # $0/$@ are the inner shell's
in_chroot_for_tests sh -c 'cd /build && exec "$0" -p no:cacheprovider --rootdir=/build/src -c /build/src/pyproject.toml "$@" /build/src/tests' \
    "$VENV/bin/pytest" "$@" || status=$?
log "done (pytest exit status $status)"
exit "$status"
