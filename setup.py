"""Build cb3: cargo builds the Rust static library (rustlib/), then hpy.devel
compiles the HPy extension (cext/) and links it in.

setuptools-rust is not used: it always builds a cdylib, runs after the C
extensions, and trips hpy's build_ext mixin, so it cannot link a staticlib
into an HPy extension. A build_ext subclass that runs cargo first is all that
is needed (see README, "Building from source"). It also ships the C API in the
package (cb3/include/cb3.h, cb3/lib/libcb3.a, cb3/lib/pkgconfig/cb3.pc; see
docs/c-api.md).

HPy: on CPython, hpy.devel (headers, runtime sources, setuptools glue) is the
copy vendored in third_party/hpy/ (hpy 0.9.0, MIT, with the CPython 3.13+
patch described in third_party/hpy/PATCHES.md): no hpy from PyPI is needed to
build. On PyPy, PyPy's own bundled hpy.devel is used: its HPyContext layout is
the one PyPy's hpy.universal implements.

Environment:
  CB3_HPY_ABI   cpython (default on CPython: zero-copy buffers via the C API)
                or hybrid (default elsewhere, e.g. PyPy; also used for HPy's
                debug mode on CPython).
  CARGO         the cargo executable (default: cargo on PATH).
  CARGO_TARGET_DIR  cargo's target directory (default: one in the build
                directory); scripts/test.sh shares rustlib/target this way.
  CB3_STATICLIB path to an already built rustlib archive (libcb3.a): cargo is
                not run and this archive is linked instead (noxfile.py's chroot-pypy step
                builds it on the host and builds the extension in a chroot).
"""

import glob
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig

HERE = os.path.dirname(os.path.abspath(__file__))
RUSTLIB = os.path.join(HERE, "rustlib")
STATICLIB_PLACEHOLDER = "libcb3.a"


def read_setting(path, pattern):
    with open(os.path.join(HERE, path), encoding="utf-8") as f:
        match = re.search(pattern, f.read(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{path}: no match for {pattern!r}")
    return tuple(int(group) for group in match.groups())


# The PyPy releases a test covers (noxfile.py's chroot-pypy and chroot-pypy-8.0 steps), by
# PyPy version: the Python version each implements and the HPy ABI cb3 builds for it.
# PyPy 7.3 has HPy's universal runtime built in (hpy.universal): the hybrid ABI, with
# PyPy's own hpy.devel. PyPy 8.0 has none, only cpyext: HPy's cpython ABI, with the
# vendored runtime compiled against cpyext's C API (third_party/hpy/PATCHES.md, patch 2;
# docs/pypy.md says why this route).
SUPPORTED_PYPY = {(7, 3): ((3, 11), "hybrid"), (8, 0): ((3, 11), "cpython")}


def supported_list(cpython_low, cpython_high):
    pypys = ", ".join(f"PyPy {p[0]}.{p[1]} (Python {v[0]}.{v[1]})" for p, (v, _) in SUPPORTED_PYPY.items())
    return f"CPython {cpython_low[0]}.{cpython_low[1]} to {cpython_high[0]}.{cpython_high[1]} and {pypys}"


def default_hpy_abi():
    """The HPy ABI cb3 builds for this interpreter (the cpython ABI on CPython:
    zero-copy buffers through the C API)."""
    if platform.python_implementation() == "PyPy":
        return SUPPORTED_PYPY[sys.pypy_version_info[:2]][1]
    return "cpython"


def check_python_version():
    """Refuses to build on an interpreter no test covers (pip already checks
    pyproject.toml's requires-python; this covers --ignore-requires-python,
    direct setup.py runs, frontends that do not check, free-threaded builds
    and PyPy releases). HPy 0.9 crashes on interpreters it was not adapted to
    (3.13 needed a patch: third_party/hpy/PATCHES.md), so an untested one gets
    this error, not a binary that may segfault."""
    low_major, low_minor, high_major, high_minor = read_setting(
        "pyproject.toml", r'^requires-python = ">=(\d+)\.(\d+),<(\d+)\.(\d+)"$'
    )
    supported = supported_list((low_major, low_minor), (high_major, high_minor - 1))
    version = sys.version_info[:2]
    implementation = platform.python_implementation()
    this = f"{implementation} {platform.python_version()}"
    if implementation == "PyPy":
        pypy = sys.pypy_version_info[:2]
        this = f"PyPy {'.'.join(map(str, sys.pypy_version_info[:3]))} (Python {platform.python_version()})"
        if pypy in SUPPORTED_PYPY and SUPPORTED_PYPY[pypy][0] == version:
            return
    elif implementation == "CPython" and (low_major, low_minor) <= version < (high_major, high_minor):
        if not sysconfig.get_config_var("Py_GIL_DISABLED"):
            return
        sys.exit(
            f"error: cb3 supports {supported}, with the GIL; this is the free-threaded build of {this}. "
            "HPy has no free-threading support (docs/free-threading.md: what cb3 would need). "
            "Use the default build of the same CPython."
        )
    sys.exit(
        f"error: cb3 supports {supported}; this is {this}. "
        "cb3's HPy 0.9 layer has been adapted and tested only on those versions (on others it can crash at "
        "run time), so it is not built here. Use a supported Python, e.g. python3.13 -m venv .venv."
    )


# First, with the standard library only: an unsupported interpreter gets this
# error even where it has no setuptools (Debian's PyPy 8.0, say).
check_python_version()

from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402
from setuptools.dist import Distribution  # noqa: E402

# What the binary is built for. HPy 0.9's context has no reliable layout
# check: PyPy's HPy 0.9.1.dev inserts a field into HPyContext but still says
# ABI 0.0, so a binary built against another interpreter's (or another HPy
# version's) headers would call the wrong context slots and crash. The loader
# stub below (before the binary is loaded) and the module's exec slot
# (cext/module.c) both compare these with the running interpreter and raise
# ImportError on a mismatch (cb3/_loading/guard.py).
def load_by_path(name, *path):
    """A module of the source tree (standard library only), loaded by path:
    importing the cb3 package needs the extension that is being built."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, *path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The build and the import compute the interpreter's tag with the same function.
BUILD_INTERPRETER = load_by_path("_cb3_build_guard", "cb3", "_loading", "guard.py").interpreter_tag()


default_abi = default_hpy_abi()
HPY_ABI = os.environ.get("CB3_HPY_ABI", default_abi)
if not any(arg.startswith("--hpy-abi") for arg in sys.argv):
    sys.argv.insert(1, f"--hpy-abi={HPY_ABI}")
if HPY_ABI != "cpython" and platform.python_implementation() == "PyPy" and default_abi == "cpython":
    sys.exit(
        f"error: CB3_HPY_ABI={HPY_ABI}: this PyPy has no HPy runtime (hpy.universal), so cb3 builds for it "
        "with HPy's cpython ABI only (unset CB3_HPY_ABI)"
    )


def load_hpy_devel():
    """hpy.devel: the vendored copy for the cpython ABI (on CPython, and on
    PyPy 8.0 over cpyext), PyPy's own for its hybrid builds.

    The vendored copy is loaded under a private name, so that an hpy installed
    from PyPI (the hybrid debug-mode venv has one) can neither shadow it nor be
    shadowed by it; its setuptools entry point stays unused because setup()
    below gets no hpy_ext_modules keyword (see HPyDistribution)."""
    if HPY_ABI != "cpython" and platform.python_implementation() == "PyPy":
        import hpy.devel
        import hpy.devel.version

        return hpy.devel, hpy.devel.version.__version__
    path = os.path.join(HERE, "third_party", "hpy", "devel")
    name = "_cb3_vendored_hpy_devel"
    spec = importlib.util.spec_from_file_location(name, os.path.join(path, "__init__.py"), submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, importlib.import_module(f"{name}.version").__version__


hpy_devel, BUILD_HPY_VERSION = load_hpy_devel()

# hpy 0.9's loader stub for universal/hybrid modules imports pkg_resources,
# which setuptools removed in 82.0; this equivalent needs nothing but hpy,
# and checks the interpreter before loading the binary.
hpy_devel._HPY_UNIVERSAL_MODULE_STUB_TEMPLATE = (
    """
# Generated by cb3's setup.py (hpy loader stub without pkg_resources).

def __bootstrap__():
    from os import environ
    from os.path import dirname, join
    from sys import modules
    from ._loading import guard
    guard.check_build(__name__, BUILD_INTERPRETER, BUILD_HPY_VERSION)
    from hpy.universal import _load_bootstrap
    ext_filepath = join(dirname(__file__), {ext_file!r})
    modules[__name__] = _load_bootstrap({module_name!r}, __name__, __package__, ext_filepath,
                                        __loader__, __spec__, environ)

"""
    + f"BUILD_INTERPRETER = {BUILD_INTERPRETER!r}\nBUILD_HPY_VERSION = {BUILD_HPY_VERSION!r}\n"
    + "__bootstrap__()\n"
)

# hpy's runtime sources, from the vendored copy on every interpreter, by
# relative path: Debian's PyPy ships hpy.devel without them, and setuptools
# rejects the absolute paths hpy.devel would otherwise add (editable installs).
HPY_RUNTIME = "third_party/hpy/devel/src/runtime"
hpy_devel.HPyDevel.get_extra_sources = lambda self: [
    f"{HPY_RUNTIME}/{name}.c" for name in ("argparse", "buildvalue", "format", "helpers", "structseq")
]
hpy_devel.HPyDevel.get_ctx_sources = lambda self: sorted(
    os.path.relpath(path, HERE) for path in glob.glob(os.path.join(HERE, HPY_RUNTIME, "ctx_*.c"))
)


class build_ext_rust(build_ext):
    """Builds rustlib with cargo, then the HPy extension that links it."""

    def run(self):
        staticlib = self.build_rustlib()
        for ext in self.extensions:
            ext.extra_objects = [staticlib if obj == STATICLIB_PLACEHOLDER else obj for obj in ext.extra_objects]
            ext.depends = [*ext.depends, staticlib]
        inplace = self.inplace
        super().run()
        self.install_capi(staticlib, inplace)

    def install_capi(self, staticlib, inplace):
        """Ships the C API in the package: cb3/include/cb3.h, cb3/lib/libcb3.a
        and cb3/lib/pkgconfig/cb3.pc, in build_lib (so in the wheel) and, for
        in-place builds (pip install -e), in the source tree too."""
        pc = load_capi().pkgconfig_text(self.distribution.get_version())
        sources = {"include/cb3.h": os.path.join(RUSTLIB, "include", "cb3.h"), "lib/libcb3.a": staticlib}
        package_dirs = [os.path.join(self.build_lib, "cb3")] + ([os.path.join(HERE, "cb3")] if inplace else [])
        for package_dir in package_dirs:
            for relative in CAPI_FILES:
                target = os.path.join(package_dir, relative)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if relative in sources:
                    copy_capi_file(sources[relative], target, strip_debug=not self.debug)
                else:
                    with open(target, "w", encoding="utf-8") as f:
                        f.write(pc)

    def get_outputs(self):
        return [*super().get_outputs(), *(os.path.join(self.build_lib, "cb3", relative) for relative in CAPI_FILES)]

    def build_rustlib(self):
        prebuilt = os.environ.get("CB3_STATICLIB")
        if prebuilt:
            if not os.path.isfile(prebuilt):
                raise FileNotFoundError(f"CB3_STATICLIB={prebuilt!r}: no such file")
            print(f"using the prebuilt rustlib archive {prebuilt} (CB3_STATICLIB), not running cargo")
            return os.path.abspath(prebuilt)
        cargo = find_cargo()
        # CARGO_TARGET_DIR as cargo reads it (relative to rustlib/, where cargo
        # runs): a target directory shared with other builds of rustlib.
        target_dir = os.path.join(RUSTLIB, os.environ.get("CARGO_TARGET_DIR") or os.path.join(
            os.path.abspath(self.build_temp), "cargo-target"))
        profile = "debug" if self.debug else "release"
        command = [cargo, "build", "--locked", "--lib", "--target-dir", target_dir]
        if profile == "release":
            command.append("--release")
        env = dict(os.environ)
        if "RUSTFLAGS" in env:  # it replaces rustlib/.cargo/config.toml's rustflags: add them
            # Loaded here: CPython 3.10 (no tomllib) gets setup.py's refusal, not an ImportError.
            env["RUSTFLAGS"] = load_by_path("_cb3_rustflags", "rustlib", "rustflags.py").merged(env["RUSTFLAGS"])
        # cwd=rustlib so that rustlib/.cargo/config.toml applies.
        subprocess.check_call(command, cwd=RUSTLIB, env=env)
        return os.path.join(target_dir, profile, "libcb3.a")


def find_cargo():
    """$CARGO or cargo on PATH, checked against rustlib/Cargo.toml's
    rust-version; exits with what to install when it is missing or too old."""
    need = ".".join(map(str, read_setting("rustlib/Cargo.toml", r'^rust-version = "(\d+)\.(\d+)"')))
    install = (
        f"Install Rust >= {need} with rustup (https://rustup.rs: "
        "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh, then open a new shell), "
        "or point CARGO at such a cargo. Distribution packages of cargo are often older. "
        "A prebuilt cb3 wheel needs neither Rust nor a C compiler: cb3 is on no package index yet, so one comes "
        "from a machine that has Rust, where `sudo bash scripts/test.sh -s wheels` builds them into "
        ".test/wheels/dist/ (the release step, into .test/release/dist/ with their SHA256SUMS); "
        "then `pip install cb3-VERSION-TAGS.whl`. Once cb3 is published, `pip install cb3` takes a wheel where one "
        "matches (README.md, \"Without Rust\")."
    )
    name = os.environ.get("CARGO", "cargo")
    cargo = shutil.which(name)
    if cargo is None:
        sys.exit(f"error: building cb3 from source needs cargo (Rust >= {need}); {name!r} was not found on PATH. {install}")
    version = subprocess.run([cargo, "--version"], capture_output=True, text=True).stdout.strip()
    match = re.match(r"cargo (\d+)\.(\d+)", version)
    if match is None or tuple(map(int, match.groups())) < tuple(map(int, need.split("."))):
        sys.exit(f"error: building cb3 from source needs cargo from Rust >= {need}; {cargo} is {version!r}. {install}")
    return cargo


# The C API in the package (cb3/capi.py finds them; it also writes cb3.pc).
CAPI_FILES = ("include/cb3.h", "lib/libcb3.a", "lib/pkgconfig/cb3.pc")


def load_capi():
    """cb3/capi.py."""
    return load_by_path("_cb3_capi", "cb3", "capi.py")


def copy_capi_file(source, target, strip_debug):
    """Copies atomically. A release libcb3.a loses its debug sections and the
    LLVM bitcode that rustc embeds for LTO, which a C linker never reads
    (22 MB -> 4 MB; code and symbols stay), when binutils' strip is there;
    then it is sealed (seal_archive)."""
    temporary = f"{target}.tmp"
    shutil.copyfile(source, temporary)
    strip = shutil.which("strip")
    if target.endswith(".a") and strip_debug and strip:
        sections = ["--remove-section=.llvmbc", "--remove-section=.llvmcmd"]
        subprocess.check_call([strip, "--strip-debug", *sections, temporary])
    if target.endswith(".a"):
        seal_archive(temporary)
    os.replace(temporary, target)


def crate_version():
    """The version of cb3: rustlib/Cargo.toml's, the one place it is written
    (the package metadata and cb3.pc get it here; cb3.__version__ is the
    linked library's cb3_version(); cb3.h's CB3_VERSION_* macros are checked
    against it by tests/api/test_c_api.py and tests/c)."""
    return ".".join(map(str, read_setting("rustlib/Cargo.toml", r'^version = "(\d+)\.(\d+)\.(\d+)"$')))
def seal_archive(path):
    """Rewrites the static library so that its only global symbols are the
    C API's (cb3_*). A Rust staticlib exports some 2,700 other names: Rust's
    runtime (rust_eh_personality, __rust_alloc, ...), every crate's mangled
    items and the BLAKE3 C library's own functions (blake3_hash_many_sse2,
    ...), so a program that also links libblake3 or another Rust staticlib
    failed with duplicate symbols, or silently bound cb3 to the other copy.
    The members are partially linked into one object (ld -r), whose other
    symbols are then made local (objcopy --keep-global-symbols); references
    to undefined symbols (libc, libgcc_s) stay. Linux/ELF with GNU binutils
    only (LD, OBJCOPY, NM, AR override the tools); elsewhere the archive is
    shipped as cargo built it."""
    tools = {name: os.environ.get(name.upper()) or shutil.which(name) for name in ("ld", "objcopy", "nm", "ar")}
    if not sys.platform.startswith("linux") or not all(tools.values()):
        missing = ", ".join(name for name, tool in tools.items() if not tool)
        print(f"warning: libcb3.a not sealed (needs Linux and GNU binutils; missing: {missing or 'none'})")
        return
    directory = os.path.dirname(os.path.abspath(path))
    combined = os.path.join(directory, "cb3-sealed.o")
    keep = os.path.join(directory, "cb3-sealed.keep")
    try:
        subprocess.check_call([tools["ld"], "-r", "--whole-archive", path, "-o", combined])
        listing = subprocess.check_output([tools["nm"], "-g", "--defined-only", "--format=posix", combined], text=True)
        names = sorted({line.split()[0] for line in listing.splitlines() if line.startswith("cb3_")})
        if not names:
            raise RuntimeError(f"no cb3_* symbols in {path}")
        with open(keep, "w", encoding="ascii") as f:
            f.write("".join(f"{name}\n" for name in names))
        subprocess.check_call([tools["objcopy"], f"--keep-global-symbols={keep}", combined])
        os.remove(path)
        subprocess.check_call([tools["ar"], "rcs", path, combined])
    finally:
        for leftover in (combined, keep):
            if os.path.exists(leftover):
                os.remove(leftover)


def c_string(value):
    if not value or not all(c.isalnum() or c in "._+-" for c in value):
        raise ValueError(f"unexpected build identifier {value!r}")
    return f'"{value}"'


# Hardening, as distributions build C (checked by tests/packaging/test_build_hardening.py):
# stack canaries in functions with arrays, checked libc calls (_FORTIFY_SOURCE,
# which needs optimization: -O2 below), and full RELRO (relocations resolved
# at load time, then made read-only). A _FORTIFY_SOURCE level given in CFLAGS
# (or by the interpreter's build flags) is kept rather than redefined.
HARDENING_COMPILE_ARGS = ["-fstack-protector-strong"]
if "_FORTIFY_SOURCE" not in " ".join([os.environ.get("CFLAGS", ""), sysconfig.get_config_var("CFLAGS") or ""]):
    HARDENING_COMPILE_ARGS.append("-D_FORTIFY_SOURCE=2")
HARDENING_LINK_ARGS = ["-Wl,-z,relro,-z,now", "-Wl,-z,noexecstack"]


def extension():
    # A fresh Extension (and fresh lists): hpy.devel edits them in place.
    headers = ["compat.h", "errors.h", "buffers.h", "args.h", "call.h", "types.h", "module.h"]
    sources = ["module.c", "errors.c", "buffers.c", "args.c", "call.c", "types.c", "aead.c", "stream.c", "chunked.c", "hash.c", "chacha20.c", "kdf.c"]
    return Extension(
        "cb3._cb3",
        sources=[f"cext/{name}" for name in sources],
        include_dirs=["cext", "rustlib/include"],
        depends=[f"cext/{name}" for name in headers] + ["rustlib/include/cb3.h"],
        extra_objects=[STATICLIB_PLACEHOLDER],
        define_macros=[
            # C string literals; checked against the running interpreter at import.
            ("CB3_BUILD_INTERPRETER", c_string(BUILD_INTERPRETER)),
            ("CB3_BUILD_HPY_VERSION", c_string(BUILD_HPY_VERSION)),
        ],
        # What a Rust staticlib needs from the system (cargo --print native-static-libs).
        libraries=["pthread", "dl", "m", "rt", "util"],
        extra_compile_args=[
            "-O2",
            "-std=gnu11",  # -std=c11 hides alloca's prototype in hpy's inline helpers
            "-fvisibility=hidden",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wno-unused-parameter",
            "-Wno-missing-field-initializers",
            "-Wno-cast-function-type",  # hpy's own runtime sources cast slot functions
            *HARDENING_COMPILE_ARGS,
        ],
        extra_link_args=["-Wl,--gc-sections", "-Wl,--exclude-libs,ALL", "-Wl,--strip-debug", *HARDENING_LINK_ARGS],
    )


class HPyDistribution(Distribution):
    """Hands hpy_ext_modules to the hpy.devel chosen above. The keyword is
    normally routed through the installed hpy's setuptools entry point, which
    would pick PyPI's hpy (or fail without one), not the vendored copy."""

    def __init__(self, attrs=None):
        attrs = dict(attrs or {})
        hpy_ext_modules = attrs.pop("hpy_ext_modules")
        super().__init__(attrs)
        self.hpy_ext_modules = hpy_ext_modules
        hpy_devel.handle_hpy_ext_modules(self, "hpy_ext_modules", hpy_ext_modules)


setup(
    version=crate_version(),
    distclass=HPyDistribution,
    hpy_ext_modules=[extension()],
    cmdclass={"build_ext": build_ext_rust},
)
