"""The test suite on one interpreter, wherever it runs (host venv, chroot,
qemu), recorded as a row of the interpreter table; and the builds it runs on."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import hpy_vendor  # scripts/hpy_vendor.py (scripts/ is on sys.path: noxfile.py)

from . import chroot as chroots
from .core import (CB3_SELFCHECK, MATRIX, MATRIX_PY, NO_RUST_PATH, PIP_QUIET, ROOT, STATICLIB, TOOLS, WORK,
                   copy_tree, file_lock, make_venv, pytest_basetemp, run, say)


@dataclass
class Host:
    """Commands on this machine; `clean` (an environment) runs them with only
    that (env -i), `prefix` under an emulator (qemu-x86_64 -cpu ...)."""
    clean: dict[str, str] | None = None
    prefix: list[str] = field(default_factory=list)

    def run(self, argv: Sequence[object], *, cwd: str | Path | None = None, env: dict[str, str] | None = None,
            **kw: object) -> subprocess.CompletedProcess[str]:
        argv = [*self.prefix, *argv]
        if self.clean is not None:
            return run(argv, cwd=cwd, env={**self.clean, **(env or {})}, clean_env=True, **kw)  # type: ignore[arg-type]
        return run(argv, cwd=cwd, env=env, **kw)  # type: ignore[arg-type]


@dataclass
class InChroot:
    chroot: chroots.Chroot
    binds: list[tuple[Path | str, str]] = field(default_factory=list)
    rust: bool = False

    def run(self, argv: Sequence[object], *, cwd: str | Path | None = None, env: dict[str, str] | None = None,
            **kw: object) -> subprocess.CompletedProcess[str]:
        return self.chroot.run(argv, binds=self.binds, env=env, rust=self.rust,  # type: ignore[no-any-return]
                               cwd=str(cwd) if cwd else None, **kw)


@dataclass
class Row:
    """The interpreter-table row a run records (scripts/matrix.py record)."""
    where: str
    built: str
    mode: str = ""
    wheel: str | None = None  # the wheel file, for its tag
    seconds: dict[str, int] = field(default_factory=dict)


def wheel_tag(wheel: str) -> str:
    m = re.match(r"^cb3-[^-]+-([^-]+-[^-]+)-.*(manylinux_[0-9]+_[0-9]+_[a-z0-9_]+).*$", Path(wheel).stem)
    return f"{m.group(1)}-{m.group(2)}" if m else Path(wheel).stem


def full_suite(target: Host | InChroot, python: str, row: Row, *, name: str, tests: Sequence[str] = ("tests",),
               src: str | Path = ROOT, junit: Path, junit_in: str | None = None, scripts_in: str | Path | None = None,
               neutral_cwd: str | Path = WORK, basetemp_in: str | None = None, basetemp_host: Path | None = None,
               pytest_args: Sequence[str] = (),
               env: dict[str, str] | None = None, log: Path | None = None, selfcheck: bool = True,
               expect_installed: bool = False) -> bool:
    """The suite (`tests`: paths or node ids relative to `src`, as `target`
    sees it) on `python`: its self-check (`python -P -m cb3`, from a directory
    without cb3/), pytest with a private basetemp, and a row of the interpreter
    table. True when all passed; the row is recorded either way."""
    start = time.monotonic()
    ok = True
    describe = [python, "-P", f"{scripts_in or MATRIX_PY.parent}/matrix.py", "describe"]
    info = target.run(describe, cwd=neutral_cwd, capture=True, quiet=True).stdout.strip()
    say(info)
    if expect_installed and "site-packages" not in info:
        say("error: the cb3 imported is not the installed one")
        return False
    if selfcheck:
        r = target.run([python, *CB3_SELFCHECK], cwd=neutral_cwd, env=env, check=False,
                       log=log.with_name(log.stem + "-selfcheck.log") if log else None)
        ok = r.returncode == 0
    basetemp = basetemp_in or str(pytest_basetemp(name))
    junit.unlink(missing_ok=True)
    env = {**(env or {}), "CB3_HPY_SDIST": _visible_hpy_sdist(target)}
    # --capture=sys: what C code writes to fd 2 reaches the log as it is written, so a suite that dies
    # (an abort's message from Rust, glibc or RPython) says why; fd capture would lose it with the process.
    r = target.run([python, "-P", "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "--capture=sys",
                    f"--basetemp={basetemp}",
                    f"--junitxml={junit_in or junit}", *pytest_args], cwd=src, env=env, check=False, log=log)
    if log:
        lines = log.read_text(errors="replace").splitlines()
        say("\n".join(lines[-3:]))
        if r.returncode:
            say("\n".join([l for l in lines if l.startswith(("FAILED", "ERROR"))][:20] or lines[-30:]))
    ok = ok and r.returncode == 0
    shutil.rmtree(basetemp_host or basetemp, ignore_errors=True)
    seconds = {**row.seconds, "tests": int(time.monotonic() - start)}
    record = [sys.executable, MATRIX_PY, "record", "--dir", MATRIX, "--info", info, "--where", row.where,
              "--built", row.built, "--mode", row.mode, "--junit", junit,
              *(["--wheel", wheel_tag(row.wheel)] if row.wheel else []),
              *[a for k, v in seconds.items() for a in ("--seconds", f"{k}={v}")]]
    if run(record, check=False, quiet=True).returncode:
        say(f"no test results for {row.where} {row.mode} ({junit})")
        ok = False
    return ok


def _visible_hpy_sdist(target: Host | InChroot) -> str:
    """hpy_sdist() where `target` sees it (a chroot gets a copy)."""
    sdist = hpy_sdist()
    if isinstance(target, Host):
        return str(sdist)
    inside = target.chroot.root / "opt/cb3-hpy-sdist" / sdist.name
    if not inside.exists():
        inside.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(sdist, inside)
    return f"/opt/cb3-hpy-sdist/{sdist.name}"


# ---- host source builds -----------------------------------------------------------
def install_source(venv: Path, *, staticlib: bool = True, env: dict[str, str] | None = None) -> None:
    """pip install . into venv: linking the host archive (no cargo), or with
    cargo in rustlib/target (the primary build)."""
    extra = {"CB3_STATICLIB": str(ensure_staticlib())} if staticlib else {"CARGO_TARGET_DIR": str(ROOT / "rustlib/target")}
    run([venv / "bin/pip", "install", "--quiet", "--no-build-isolation", "."], cwd=ROOT, env={**extra, **(env or {})})


def ensure_staticlib() -> Path:
    """The release archive of rustlib, built once (the rust session makes it)."""
    if not STATICLIB.exists():
        run(["cargo", "build", "--quiet", "--release", "--locked", "--lib"], cwd=ROOT / "rustlib")
        WORK.mkdir(exist_ok=True)
        shutil.copy(ROOT / "rustlib/target/release/libcb3.a", STATICLIB)
    return STATICLIB


def hpy_universal_wheel(python: str, chroot: chroots.Chroot | None = None) -> Path:
    """An hpy 0.9.0 wheel for `python` (on the host, or in `chroot`) whose
    hpy.universal (the runtime of the hybrid ABI and of HPy's debug mode) is
    built from the hash-pinned sdist with the patches third_party/hpy/PATCHES.md
    lists (ctx_type.c's). PyPI's hpy 0.9.0 has wheels for CPython <= 3.11 only,
    and its sdist has the 3.13 tp_flags bug: every interpreter gets one, cached
    on the host per patch set and interpreter."""
    target: Host | InChroot = InChroot(chroot) if chroot else Host()
    digest = hpy_vendor.patches_digest()
    tag = target.run([python, "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"], capture=True,
                     quiet=True).stdout.strip()
    cache = TOOLS / f"hpy-0.9.0-cb3-{digest}"
    with file_lock(TOOLS / ".hpy-wheel.lock"):
        found = sorted(cache.glob(f"hpy-0.9.0-{tag}-*.whl"))
        if found:
            return found[0]
        build = chroot.root / "build-hpy" if chroot else WORK / f"hpy-build-{tag}"
        seen = "/build-hpy" if chroot else str(build)  # the build directory as `target` sees it
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        target.run([python, "-m", "venv", f"{seen}/venv"])
        sdist = hpy_sdist()
        run(["tar", "-C", build, "-xzf", sdist])
        hpy_vendor.write_patched_devel(sdist, build / "hpy-0.9.0/hpy/devel")
        # hpy's setup.py adds -Werror; GCC >= 15 with glibc >= 2.43 (C23
        # strchr/strstr return const) then stops on hpymodule.c.
        cflags = (os.environ.get("CFLAGS", "") + " -Wno-error=discarded-qualifiers").strip()
        target.run([f"{seen}/venv/bin/pip", "wheel", *PIP_QUIET, "--no-deps", "-w", f"{seen}/wheel",
                    f"{seen}/hpy-0.9.0"], env={"CFLAGS": cflags})
        wheel = next((build / "wheel").glob(f"hpy-0.9.0-{tag}-*.whl"))
        cache.mkdir(parents=True, exist_ok=True)
        dest = cache / wheel.name
        shutil.move(wheel, dest)
        shutil.rmtree(build)
        return dest


def hpy_sdist() -> Path:
    """The pinned hpy 0.9.0 sdist, downloaded once into TOOLS (pip checks the
    hash; so does scripts/hpy_vendor.py). The suite's tests/packaging/test_hpy_vendor.py
    gets it as CB3_HPY_SDIST: no download per run, none in the chroots (where
    pip would run hpy's setup.py, which needs git)."""
    dest = TOOLS / "hpy-sdist"
    sdist = dest / f"{hpy_vendor.sdist_name()}.tar.gz"
    with file_lock(TOOLS / ".hpy-sdist.lock"):
        if not sdist.exists():
            hpy_vendor.download_sdist(dest)
    return sdist


DEBUG_MODE = "HPy debug mode, not slow/threads/memory tests"
DEBUG_MODE_DESELECT = ["-m", "not slow and not threads and not memory"]  # pyproject.toml's markers say why


def hpy_debug_run(python: str, venv: Path, where: str, pytest_args: Sequence[str] = ()) -> bool:
    """python's hybrid-ABI build (the host archive) under HPy's debug mode
    (handle leaks, use after close). Multi-threaded tests are deselected here
    only: HPy 0.9's debug context aborts when a thread reenters after
    releasing the GIL (pyproject.toml)."""
    wheel = hpy_universal_wheel(python)
    make_venv(venv, python)
    run([venv / "bin/pip", "install", *PIP_QUIET, wheel])
    install_source(venv, env={"CB3_HPY_ABI": "hybrid"})
    return full_suite(Host(), str(venv / "bin/python"), Row(where, "pip install .", DEBUG_MODE),
                      name=venv.name, junit=WORK / f"junit-{venv.name}.xml", env={"HPY": "debug"}, selfcheck=False,
                      pytest_args=[*DEBUG_MODE_DESELECT, *pytest_args])


# ---- chroot source builds: an interpreter the host does not have ----------------------
def chroot_source_suite(name: str, tests: Sequence[str], mode: str, pytest_args: Sequence[str] = ()) -> bool:
    """Builds cb3 with the profile's interpreter in its chroot (the host archive,
    a real PEP 517 `pip install .` of a copy of the working tree) and runs the
    suite there (`tests`: relative to the checkout)."""
    p = chroots.profile(name)
    with file_lock(p.lock):
        c = p.ensure()
        return _chroot_build_and_suite(p, c, "/opt/cb3-venv", tests, mode, {}, pytest_args)


def chroot_hpy_debug_run(name: str, pytest_args: Sequence[str] = ()) -> bool:
    """hpy_debug_run in the profile's chroot: the hybrid-ABI build under HPy's
    debug mode, in a venv of its own holding the patched hpy.universal."""
    p = chroots.profile(name)
    with file_lock(p.lock):
        c = p.ensure()
        wheel = hpy_universal_wheel(p.python, c)
        wheels_dir = c.root / "opt/cb3-hpy-wheels"
        wheels_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, wheels_dir / wheel.name)
        venv = "/opt/cb3-debug-venv"
        p.ensure_venv(venv, [f"/opt/cb3-hpy-wheels/{wheel.name}"])
        return _chroot_build_and_suite(p, c, venv, ["tests"], DEBUG_MODE, {"CB3_HPY_ABI": "hybrid"},
                                       [*DEBUG_MODE_DESELECT, *pytest_args], {"HPY": "debug"})


def _chroot_build_and_suite(p: chroots.Profile, c: chroots.Chroot, venv: str, tests: Sequence[str], mode: str,
                            build_env: dict[str, str], pytest_args: Sequence[str],
                            test_env: dict[str, str] | None = None) -> bool:
    start = time.monotonic()
    shutil.copy(ensure_staticlib(), c.root / "tmp/libcb3.a")
    say(f"[{p.name}] copying the working tree into the chroot")
    shutil.rmtree(c.root / "build", ignore_errors=True)
    copy_tree(c.root / "build/src")
    t = time.monotonic()
    c.run([f"{venv}/bin/python", "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", "/build/src"],
          env={"CB3_STATICLIB": "/tmp/libcb3.a", **build_env})
    build = int(time.monotonic() - t)
    target = InChroot(c, chroots.test_binds(p), rust=True)
    ok = full_suite(target, f"{venv}/bin/python", Row(p.where, "pip install .", mode, seconds={"build": build}),
                    name=f"chroot-{p.name}{'-debug' if test_env else ''}", tests=[f"/build/src/{t}" for t in tests],
                    src="/build", junit=c.root / "build/junit.xml", junit_in="/build/junit.xml",
                    scripts_in="/build/src/scripts", neutral_cwd="/", basetemp_in="/build/pytest-tmp",
                    basetemp_host=c.root / "build/pytest-tmp", env={**chroots.TEST_ENV, **(test_env or {})},
                    expect_installed=True, selfcheck=False,
                    pytest_args=["--rootdir=/build/src", "-c", "/build/src/pyproject.toml", *pytest_args])
    say(f"[{p.name}] done in {time.monotonic() - start:.0f} s")
    return ok


NO_RUST_ENV = {"PATH": NO_RUST_PATH, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
