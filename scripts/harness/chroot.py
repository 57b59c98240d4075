"""Debian chroots (mmdebstrap), cached outside the checkout, and the one way
to run a command in one: a private mount namespace (/proc, /dev/pts,
/dev/shm and the bind mounts given; all gone when the command ends) and a
clean environment."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Sequence

from .core import NO_RUST_PATH, PIP_ENV, TOOLS, apt_install, file_lock, run, say, test_pins

CHROOT_ENV = {"PATH": NO_RUST_PATH, "HOME": "/root", "LANG": "C.UTF-8",
              "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
              **PIP_ENV, "PYTHONDONTWRITEBYTECODE": "1"}
CARGO_HOME = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))
RUSTUP_HOME = Path(os.environ.get("RUSTUP_HOME", Path.home() / ".rustup"))
# The host's Rust toolchain as the chroot sees it (--rust).
RUST_BINDS = [(CARGO_HOME, "/opt/host-cargo"), (RUSTUP_HOME, "/opt/host-rustup")]
RUST_ENV = {"PATH": f"/opt/host-cargo/bin:{NO_RUST_PATH}", "CARGO_HOME": "/opt/host-cargo",
            "RUSTUP_HOME": "/opt/host-rustup"}
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# testing's Release file can be served past its Valid-Until date (seen: "expired").
NO_VALID_UNTIL = '--aptopt=Acquire::Check-Valid-Until "false"'

_MOUNTS = r'''set -e; r=$1; shift
mkdir -p "$r/proc" "$r/dev" "$r/tmp" && chmod 1777 "$r/tmp"
[ -e "$r/dev/null" ] || mount --bind /dev "$r/dev"
mount -t proc proc "$r/proc"
mkdir -p "$r/dev/pts" && mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$r/dev/pts"
mount --bind "$r/dev/pts/ptmx" "$r/dev/ptmx" 2>/dev/null || true
mkdir -p "$r/dev/shm" && mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
IFS=,; for b in $BINDS; do mkdir -p "$r${b#*:}"; mount --bind "${b%%:*}" "$r${b#*:}"; done; unset IFS
exec chroot "$r" "$@"'''


class Chroot:
    """One cached chroot: `root` holds it, `marker` (a file in it) the recipe
    it was made from; a different recipe makes it again."""

    def __init__(self, root: Path, suite: str, packages: str, *, arch: str = "amd64", variant: str = "apt",
                 marker: str = ".cb3-chroot", recipe: str | None = None, options: Sequence[str] = (),
                 mirror: str | None = DEBIAN_MIRROR) -> None:
        self.root, self.suite, self.packages, self.arch, self.variant = root, suite, packages, arch, variant
        self.marker = root / marker
        self.recipe = recipe or f"cb3-wheels-chroot v1 suite={suite} arch={arch} variant={variant} packages={packages}"
        self.options, self.mirror = list(options), mirror

    def ensure(self, rebuild: bool = False) -> "Chroot":
        if self.arch != "amd64":
            ensure_binfmt(self.arch)
        with file_lock(self.root.parent / f".{self.root.name}.create-lock"):
            current = self.marker.read_text().strip() if self.marker.exists() else None
            if rebuild or current != self.recipe:
                if not shutil.which("mmdebstrap"):
                    apt_install(["mmdebstrap"], "chroots", root=True)
                say(f"creating the {self.suite}/{self.arch} chroot in {self.root} (mmdebstrap)")
                partial = self.root.with_name(self.root.name + ".partial")
                shutil.rmtree(self.root, ignore_errors=True)
                shutil.rmtree(partial, ignore_errors=True)
                run(["mmdebstrap", "--quiet", f"--arch={self.arch}", f"--variant={self.variant}", *self.options,
                     f"--include={self.packages}", self.suite, partial, *([self.mirror] if self.mirror else [])])
                partial.rename(self.root)
                self.marker.write_text(self.recipe + "\n")
        if self.variant == "extract":
            # Merged /usr: an "extract" chroot gets no /lib -> usr/lib links, which the loader needs.
            for d in ("bin", "sbin", "lib"):
                if not (self.root / d).exists() and not (self.root / d).is_symlink():
                    (self.root / d).symlink_to(f"usr/{d}")
        self._refresh_network()
        return self

    def _refresh_network(self) -> None:
        """Network plumbing and the host's extra CA certificates (a TLS proxy's
        CA, say), refreshed every time: cheap, and the host may change."""
        (self.root / "etc").mkdir(exist_ok=True)
        for f in ("/etc/resolv.conf", "/etc/hosts"):
            if os.path.exists(f):
                shutil.copy(os.path.realpath(f), self.root / "etc" / os.path.basename(f))
        host_cas = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
        mine = self.root / "usr/local/share/ca-certificates"
        if host_cas and any(not (mine / c.name).exists() or (mine / c.name).read_bytes() != c.read_bytes()
                            for c in host_cas):
            mine.mkdir(parents=True, exist_ok=True)
            for c in host_cas:
                shutil.copy(c, mine / c.name)
            if self.variant != "extract":
                self.run(["update-ca-certificates"], quiet=True)

    def command(self, argv: Sequence[object], *, binds: Sequence[tuple[Path | str, str]] = (),
                env: dict[str, str] | None = None, rust: bool = False, cwd: str | None = None) -> list[str]:
        """The host command that runs argv in the chroot (cwd: inside it)."""
        all_binds = [*binds, *(RUST_BINDS if rust else [])]
        full_env = {**CHROOT_ENV, **(RUST_ENV if rust else {}), **(env or {})}
        inner = [str(a) for a in argv]
        if cwd:
            inner = ["sh", "-c", 'cd "$0" && exec "$@"', cwd, *inner]
        return ["env", "BINDS=" + ",".join(f"{s}:{d}" for s, d in all_binds), "unshare", "-m", "--",
                "sh", "-c", _MOUNTS, "sh", str(self.root),
                "env", "-i", *(f"{k}={v}" for k, v in full_env.items()), *inner]

    def run(self, argv: Sequence[object], *, binds: Sequence[tuple[Path | str, str]] = (),
            env: dict[str, str] | None = None, rust: bool = False, cwd: str | None = None,
            **kw: object):  # type: ignore[no-untyped-def]
        shown = f"[chroot {self.root}{' in ' + cwd if cwd else ''}] " + " ".join(map(str, argv))
        return run(self.command(argv, binds=binds, env=env, rust=rust, cwd=cwd), display=shown,  # type: ignore[arg-type]
                   **kw)


def ensure_binfmt(arch: str) -> None:
    """qemu-user through binfmt_misc for a Debian arch (arm64)."""
    qemu = arch.replace("arm64", "aarch64")
    if not (shutil.which(f"qemu-{qemu}-static") and shutil.which("update-binfmts")):
        apt_install(["qemu-user-static", "binfmt-support"], "wheels-aarch64", root=True)
    if run(["mountpoint", "-q", "/proc/sys/fs/binfmt_misc"], check=False, quiet=True).returncode:
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc"])
    entry = Path(f"/proc/sys/fs/binfmt_misc/qemu-{qemu}")

    def enabled() -> bool:
        return entry.exists() and entry.read_text().splitlines()[0] == "enabled"
    if not enabled():
        run(["update-binfmts", "--enable", f"qemu-{qemu}"])
    if not enabled():
        raise RuntimeError(f"could not enable binfmt_misc for qemu-{qemu}")


# ---- the source-build chroots: an interpreter the host does not have --------------
COMMON_PACKAGES = "gcc,g++,libc6-dev,ca-certificates,b3sum,pkgconf"


class Profile:
    """A chroot for source builds and their tests (and PyPy's wheel, which is
    built and tested in the PyPy one), with a venv of test tools at /opt/cb3-venv."""

    def __init__(self, name: str, cache: Path, suite: str, python: str, recipe_name: str, packages: str,
                 where: str, test_deps: list[str], options: Sequence[str] = (),
                 binary_only: Sequence[str] = ("cryptography",)) -> None:
        self.name, self.cache, self.python, self.where, self.test_deps = name, cache, python, where, test_deps
        # Test tools pip must not build from source here (a long build with a wheel on PyPI),
        # as pip arguments (the venv below and wheels.py's wheelhouse).
        self.pip_binary_only = ["--only-binary", ",".join(binary_only)] if binary_only else []
        recipe = f"cb3-{recipe_name}-chroot v1 suite={suite} packages={packages}"
        if options:
            recipe += " options=" + " ".join(options)
        self.chroot = Chroot(cache / "chroot", suite, packages, marker=".cb3-chroot-complete", recipe=recipe,
                             options=options, mirror=None)
        self.lock = cache / ".lock"  # one user of /build and the venv at a time

    @property
    def root(self) -> Path:
        return self.chroot.root

    def prepare(self) -> Chroot:
        """ensure(), holding the cache's lock (a test run may be using the chroot)."""
        with file_lock(self.lock):
            return self.ensure()

    def ensure(self) -> Chroot:
        """The chroot and its test venv (/opt/cb3-venv), made if missing or outdated."""
        self.chroot.ensure()
        self.ensure_venv("/opt/cb3-venv")
        return self.chroot

    def ensure_venv(self, venv: str, extra: Sequence[str] = ()) -> None:
        """A venv in the chroot with the test tools (and `extra`: more pip
        arguments, e.g. a wheel in the chroot), made if missing or outdated."""
        deps = " ".join([*self.test_deps, *extra])
        stamp = self.root / venv.lstrip("/") / ".cb3-deps"
        if stamp.exists() and stamp.read_text().strip() == deps:
            return
        say(f"[{self.name}] creating the venv {venv}: {deps}")
        shutil.rmtree(self.root / venv.lstrip("/"), ignore_errors=True)
        self.chroot.run([self.python, "-m", "venv", venv])
        # --only-binary (cryptography): no long source build where PyPI has a wheel; a tool
        # with no wheel for the interpreter (blake3 on PyPy; all compiled ones on PyPy 8.0)
        # builds with the host's cargo and the chroot's compilers, once: pip caches the wheel.
        self.chroot.run([f"{venv}/bin/python", "-m", "pip", "install", "-q", *self.pip_binary_only, *self.test_deps,
                         *extra], rust=True)
        # A wheel that installs but does not load would only show up as skipped tests.
        self.chroot.run([f"{venv}/bin/python", "-c", "import pytest, hypothesis.strategies, blake3, numpy, "
                         "psutil, Crypto\nfrom cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305"])
        stamp.write_text(deps + "\n")


def profile(name: str) -> Profile:
    if name == "pypy3.11":
        # The whole suite's tools except mypy (static, run on CPython), with two pins
        # lowered: the PyO3-built PyPy wheels of hypothesis >= 6.156 and cryptography
        # >= 47 need PyPyModule_FromDefAndSpec2, which PyPy 7.3.19 lacks.
        return Profile("pypy3.11", Path("/var/cache/cb3-pypy"), "trixie", "pypy3", "pypy",
                       f"pypy3,pypy3-dev,pypy3-venv,{COMMON_PACKAGES}", "Debian trixie chroot",
                       ["pytest==9.2.0", "hypothesis==6.155.7", "cryptography==46.0.7", "blake3==1.0.11",
                        "numpy==2.4.6", "psutil==7.2.2", "pycryptodome==4.4.0"])
    if name == "cpython3.14":
        return Profile("cpython3.14", Path("/var/cache/cb3-cpython3.14"), "forky", "python3.14", "cpython3.14",
                       f"python3.14,python3.14-dev,python3.14-venv,{COMMON_PACKAGES}", "Debian forky chroot",
                       test_pins("3.14"), options=[NO_VALID_UNTIL])
    if name == "cpython3.15":
        # sid: the only Debian suite with CPython 3.15. binutils-aarch64-linux-gnu: the
        # aarch64 cp315 wheel is built here too (wheels.py); git: hpy 0.9.0's setup.py runs
        # it (hpy-debug-3.15 builds hpy.universal here).
        return Profile("cpython3.15", Path("/var/cache/cb3-sid"), "sid", "python3.15", "cpython3.15",
                       f"python3.15,python3.15-dev,python3.15-venv,binutils-aarch64-linux-gnu,git,{COMMON_PACKAGES}",
                       "Debian sid chroot", test_pins("3.15"), options=[NO_VALID_UNTIL])
    if name == "pypy8.0":
        # sid's PyPy 8.0 (cb3 builds for it with HPy's cpython ABI over cpyext). PyPI has
        # no pp80 wheels of numpy, cryptography, blake3 or psutil: they build here from
        # their sdists (libssl-dev for cryptography), once per chroot (pip's wheel cache).
        # PyPy 7.3's pins are lowered for its PyO3 wheels; these are built for 8.0 itself.
        return Profile("pypy8.0", Path("/var/cache/cb3-pypy8"), "sid", "pypy3", "pypy8",
                       f"pypy3,pypy3-dev,pypy3-venv,libssl-dev,{COMMON_PACKAGES}", "Debian sid chroot",
                       [p for p in test_pins("3.11", implementation="pypy") if not p.startswith(("mypy", "setuptools", "wheel"))],
                       options=[NO_VALID_UNTIL], binary_only=())
    raise ValueError(f"unknown chroot profile {name} (pypy3.11, pypy8.0, cpython3.14 or cpython3.15)")


def test_binds(p: Profile) -> list[tuple[Path | str, str]]:
    """What the suite's Rust-toolchain tests use in a chroot: the pinned
    cbindgen and a cached debug target directory (tests/c/run.sh)."""
    tools = TOOLS if TOOLS.is_dir() else p.cache / "no-tools"
    target_c = p.cache / "cargo-target-c"
    for d in (tools, target_c):
        d.mkdir(parents=True, exist_ok=True)
    return [(tools, "/opt/host-cb3-tools"), (target_c, "/opt/cargo-target-c")]


TEST_ENV = {"CB3_C_TARGET_DIR": "/opt/cargo-target-c", "CB3_CBINDGEN": "/opt/host-cb3-tools/bin/cbindgen"}
