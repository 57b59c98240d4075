"""cb3's test steps: `nox --list` is the list, `nox` (or `bash scripts/test.sh`,
which bootstraps the pinned nox) runs them all in this order.

    nox -s fuzz -- --seconds 60          one step, with its options
    nox -- --skip-pypy                   every step; options apply to all of them
    nox -s chroot-pypy -- -x -k smoke    a step that runs one interpreter's suite: pytest arguments
    nox -- --not-root                    as without root (the root-only steps are skipped)

Options (after `--`): --python PYTHON (the primary CPython, default python3.11),
--skip-pypy, --seconds N and --targets "T ..." (fuzzing), --not-root. A step
that cannot run here is skipped with one line saying how to run it; a failing
step fails the run, and the later steps still run (nox -x stops at the first
failure). The end of the output lists every step with its outcome, wall time
and the CPU time of its processes. Everything is written under .test/ and the
caches (/var/cache/cb3-*, ~/.cache/cb3-tools); the checkout stays clean.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

import nox
import nox.virtualenv
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).parent / "scripts"))
from harness import checks, lanes, release, suite, wheels  # noqa: E402
from harness import chroot as chroots  # noqa: E402
from harness.core import (CBINDGEN_VERSION, MATRIX, MATRIX_PY, MYPY_FILES, ROOT, STATICLIB, SUMMARY, SUPPORTED, TOOLS,  # noqa: E402
                          WORK, Skip, apt_install, cargo_install, children_cpu, is_root, make_venv, minor_of,
                          missing_commands, need_root, output_of, parse_options, pytest_basetemp, require_python, run, say,
                          source_only_tests, where_of)

nox.options.envdir = ".test/nox"
nox.options.default_venv_backend = "none"
# Every session is python=False (no nox venv, so no use for uv): told so, nox (the pinned one, scripts/test.sh)
# does not look for a uv binary and print "uv binary not found" when there is none.
nox.virtualenv.HAS_UV, nox.virtualenv.UV, nox.virtualenv.UV_VERSION = False, "uv", Version("0")

PRIMARY_VENV = WORK / "venv"
PRIMARY_TESTED = threading.Event()  # the wheel builds wait for it: the memory scans and races run without that load
ROOT_ONLY = ("chroot-3.14", "chroot-3.15", "hpy-debug-3.15", "chroot-pypy", "chroot-pypy-8.0", "wheels", "wheels-aarch64", "simd", "pypy-speed",
             "release")
SOURCE_ONLY_MODE = "scripts/source-only-tests.txt; the rest runs on its wheel"
RESULTS: dict[str, bool] = {}  # what a lane did for a later step (the aarch64 runs)


def planned(session: nox.Session, name: str) -> bool:
    """Whether step `name` is part of this run (nox's queue of selected sessions)."""
    return name in session._runner.manifest  # noqa: SLF001 -- nox has no public view of its queue


def step(name: str, default: bool = True) -> Callable[[Callable[..., None]], Callable[[nox.Session], None]]:
    """A nox session running fn(session, options, remaining posargs), timed,
    recorded in the summary; Skip skips it with its one line. default=False:
    not in a plain run (a measurement, not a test: run it with -s NAME)."""
    def deco(fn: Callable[..., None]) -> Callable[[nox.Session], None]:
        def session(s: nox.Session) -> None:
            opts, rest = parse_options(s.posargs)
            t0, c0 = time.monotonic(), children_cpu()
            outcome, note = "ok", ""
            try:
                fn(s, opts, rest)
            except Skip as e:
                outcome, note = "skipped", str(e)
            except subprocess.CalledProcessError as e:
                outcome, note = "FAILED", f"exit {e.returncode}: {' '.join(map(str, e.cmd))[:150]}"
            except Exception as e:  # noqa: BLE001 -- the step fails, the run goes on
                traceback.print_exc()
                outcome, note = "FAILED", f"{type(e).__name__}: {e}"[:300]
            wall, cpu = time.monotonic() - t0, children_cpu() - c0
            SUMMARY.add(name, outcome, wall, cpu, note)
            print(f"--- {wall:.0f} s: {name} [CPU {cpu:.0f} s]", flush=True)
            if outcome == "skipped":
                s.skip(note)
            elif outcome == "FAILED":
                s.error(note)
        session.__doc__, session.__name__ = fn.__doc__, fn.__name__
        return nox.session(name=name, python=False, default=default)(session)
    return deco


def primary_python(opts) -> str:  # type: ignore[no-untyped-def]
    py = shutil.which(opts.python) or (shutil.which("python3") if opts.python == "python3.11" else None)
    if py is None:
        raise Skip(f"the primary interpreter {opts.python} is not on PATH: give one with -- --python PYTHON")
    version = tuple(map(int, minor_of(py).split(".")))
    impl = output_of([py, "-c", "import sys; print(sys.implementation.name)"])
    if impl != "cpython" or not SUPPORTED[0] <= version <= SUPPORTED[1]:
        raise RuntimeError(f"--python must be CPython 3.11 to 3.15, not {impl} {version}")
    return py


def primary_venv(opts) -> Path:  # type: ignore[no-untyped-def]
    """The primary build (the primary session makes it; another step alone makes it too)."""
    if not (PRIMARY_VENV / "bin/python").exists() or run(
            [PRIMARY_VENV / "bin/python", "-P", "-c", "import cb3"], cwd=WORK, check=False, quiet=True).returncode:
        make_venv(PRIMARY_VENV, primary_python(opts))
        suite.install_source(PRIMARY_VENV, staticlib=False)
    return PRIMARY_VENV


def wheel_step_runs(s: nox.Session, opts) -> bool:  # type: ignore[no-untyped-def]
    """When the wheels step runs too, the other interpreters' source builds run only
    scripts/source-only-tests.txt: the rest of their suite runs on their wheels."""
    return planned(s, "wheels") and is_root(opts)


# ---- the steps, in order ---------------------------------------------------------------
@step("prepare")
def prepare(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """Host tools (apt, cbindgen), then the background lanes (hpy wheels, cargo-fuzz; as root chroots, wheels).

    apt: gcc, g++, b3sum, valgrind; as root mmdebstrap, qemu-user-static, aarch64 binutils. Lanes: `tools`
    (the patched hpy wheels, cargo-fuzz: one cargo job) and, as root, `root` (the wheel tools, the Debian
    chroots and their venvs -- mostly downloads -- then, once the primary suite is over, the wheel builds
    and the aarch64 runs under qemu)."""
    root = is_root(opts)
    shutil.rmtree(MATRIX, ignore_errors=True)
    needed = missing_commands({"cc": "gcc", "g++": "g++", "b3sum": "b3sum", "valgrind": "valgrind"})
    if root and any(planned(s, n) for n in ROOT_ONLY):
        needed += missing_commands({"mmdebstrap": "mmdebstrap", "qemu-aarch64-static": "qemu-user-static",
                                    "update-binfmts": "binfmt-support",
                                    "aarch64-linux-gnu-strip": "binutils-aarch64-linux-gnu"})
    if needed and not root:
        say(f"missing Debian packages {' '.join(needed)}: the steps that use them fail; apt-get install them as root")
    elif needed:
        apt_install(needed, "prepare", root)  # now: apt must not run beside the lanes
    if not shutil.which("cargo"):
        raise RuntimeError("cargo not found: install Rust (rustup)")
    ensure_cbindgen()
    py = primary_python(opts)

    def tools() -> None:
        if any(planned(s, n) for n in ("hpy-debug",)):
            suite.hpy_universal_wheel(py)
        if planned(s, "fuzz"):
            checks.ensure_cargo_fuzz()
    lanes.start("tools", tools)
    if not root or not any(planned(s, n) for n in ROOT_ONLY):
        return
    pypy = not opts.skip_pypy and any(planned(s, n) for n in ("chroot-pypy", "wheels", "pypy-speed"))
    pypy8 = not opts.skip_pypy and any(planned(s, n) for n in ("chroot-pypy-8.0", "wheels"))

    def root_lane() -> bool:
        ok = True
        for name, work in (("wheels", lambda: wheels.prepare(arm64=planned(s, "wheels-aarch64"), pypy=False)),
                           ("chroot-3.14", lambda: chroots.profile("cpython3.14").prepare()),
                           ("chroot-3.15", lambda: sid_prepare(s)),
                           ("pypy", lambda: chroots.profile("pypy3.11").prepare() if pypy else None),
                           # PyPy 8.0's test tools build from source (no pp80 wheels): minutes, so early.
                           ("pypy-8.0", lambda: chroots.profile("pypy8.0").prepare() if pypy8 else None)):
            if name.startswith("pypy") or planned(s, name) or (name == "chroot-3.15" and uses_sid(s)):
                try:
                    work()
                except Exception:  # noqa: BLE001 -- the step itself tries again
                    traceback.print_exc(file=sys.stdout)
                    ok = False
        if planned(s, "wheels"):
            if planned(s, "primary"):
                PRIMARY_TESTED.wait()
            ok = build_wheels(opts) and ok
            if planned(s, "wheels-aarch64"):
                RESULTS["wheels-aarch64"] = all([wheels.test_wheel(v, "aarch64") for v, _ in wheels.ARM64_RUNS])
        return ok
    lanes.start("root", root_lane)


def uses_sid(s: nox.Session) -> bool:
    return any(planned(s, n) for n in ("chroot-3.15", "hpy-debug-3.15", "wheels",
                                       "wheels-aarch64"))


def sid_prepare(s: nox.Session) -> None:
    """The sid chroot (CPython 3.15) and, for hpy-debug-3.15, its hpy.universal wheel."""
    c = chroots.profile("cpython3.15").prepare()
    if planned(s, "hpy-debug-3.15"):
        suite.hpy_universal_wheel("python3.15", c)


def ensure_cbindgen() -> None:
    tool = TOOLS / "bin/cbindgen"
    if not tool.exists() or output_of([tool, "--version"], check=False) != f"cbindgen {CBINDGEN_VERSION}":
        cargo_install("cbindgen", CBINDGEN_VERSION)


@step("rust")
def rust(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """rustlib: cargo test, the header drift check (pinned cbindgen --verify), the release archive."""
    run(["cargo", "test", "--release", "--locked", "--workspace"], cwd=ROOT / "rustlib")
    ensure_cbindgen()
    # --quiet: errors only (not a warning for each private item it skips); drift is an error.
    r = run([TOOLS / "bin/cbindgen", "--quiet", "--config", "cbindgen.toml", "--crate", "cb3", "--output", "include/cb3.h",
             "--verify", "."], cwd=ROOT / "rustlib", check=False)
    if r.returncode:
        raise RuntimeError("rustlib/include/cb3.h is out of date: regenerate it (see rustlib/cbindgen.toml)")
    # One archive for every build after the primary one (setup.py links it when CB3_STATICLIB is set); a
    # copy, since the primary and the sdist builds write into the same target directory.
    STATICLIB.unlink(missing_ok=True)
    suite.ensure_staticlib()


@step("primary")
def primary(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """The primary CPython (-- --python, default python3.11): pip install ., pytest, mypy --strict.

    cpython ABI; cargo reuses rustlib/target; mypy on the stubs and tests/api/typing_examples.py."""
    try:
        py = primary_python(opts)
        make_venv(PRIMARY_VENV, py)
        suite.install_source(PRIMARY_VENV, staticlib=False)
        ok = suite.full_suite(suite.Host(), str(PRIMARY_VENV / "bin/python"), suite.Row(where_of(py), "pip install ."),
                              name="venv", junit=WORK / "junit-venv.xml", pytest_args=rest)
    finally:
        PRIMARY_TESTED.set()
    if not ok:
        raise RuntimeError("pytest failed")
    run([PRIMARY_VENV / "bin/mypy", "--strict", "--no-incremental", *MYPY_FILES], cwd=ROOT)


@step("docs")
def docs(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """The documentation site: Sphinx html + doctest -W -n, its links, headless Chromium (without root: if installed)."""
    checks.docs(primary_venv(opts) / "bin/python", is_root(opts))


@step("asv")
def asv(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """asv: check, smoke + quick run, offline publish, headless Chromium on a graph page."""
    checks.asv(primary_venv(opts) / "bin/python", is_root(opts))


@step("bench")
def bench(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """python -m cb3 speed and measure.py compare --quick; then valgrind starts in a background lane (the sanitizers step waits)."""
    venv = primary_venv(opts)
    checks.bench(venv / "bin/python")
    if planned(s, "sanitizers"):
        lanes.start("valgrind", lambda: checks.valgrind(venv / "bin/python", is_root(opts)))


@step("hpy-debug")
def hpy_debug(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """The primary CPython, hybrid ABI under HPy's debug mode (handle leaks, use after close).

    hpy.universal is built from hpy 0.9.0's hash-pinned sdist plus the vendored ctx_type.c patch (PyPI has
    hpy 0.9.0 wheels up to 3.11 only), cached in ~/.cache/cb3-tools/hpy-0.9.0-cb3-<patch hash>/."""
    py = primary_python(opts)
    if not suite.hpy_debug_run(py, WORK / "venv-debug", where_of(py), rest):
        raise RuntimeError("pytest failed")


@step("fuzz")
def fuzz(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """Bounded fuzzing: atheris + cargo-fuzz targets, --seconds each (default 20), two at a time."""
    lanes.wait("tools")
    checks.fuzz(primary_venv(opts) / "bin/python", opts.seconds, opts.targets.split())


@step("sanitizers")
def sanitizers(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """ASan + UBSan (the C programs and the suite), valgrind memcheck (waited for if a lane runs it)."""
    venv = primary_venv(opts)
    checks.asan(primary_python(opts), is_root(opts))
    ok = lanes.wait("valgrind")
    if ok is None:
        checks.valgrind(venv / "bin/python", is_root(opts))
    elif not ok:
        raise RuntimeError("valgrind memcheck failed (lane valgrind, log above)")


@step("sdist")
def sdist(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """The sdist: its contents, a fresh-venv install, tests from the unpacked tree, examples/downstream."""
    checks.sdist(primary_venv(opts) / "bin/python", primary_python(opts))


def pyenv_step(minor: str) -> None:
    @step(f"pyenv-{minor}")
    def pyenv(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
        if minor_of(primary_python(opts)) == minor:
            raise Skip(f"CPython {minor} is the primary interpreter (the primary step)")
        py = require_python(minor, f"pyenv-{minor}")
        venv = make_venv(WORK / f"venv{minor}", py)
        suite.ensure_staticlib()
        suite.install_source(venv)
        source_only = wheel_step_runs(s, opts)
        ok = suite.full_suite(suite.Host(), str(venv / "bin/python"),
                              suite.Row(where_of(py), "pip install .", SOURCE_ONLY_MODE if source_only else ""),
                              name=venv.name, junit=WORK / f"junit-{venv.name}.xml", selfcheck=False,
                              tests=source_only_tests() if source_only else ["tests"], pytest_args=rest)
        if not ok:
            raise RuntimeError("pytest failed")
    pyenv.__doc__ = (f"CPython {minor} (pyenv), cpython ABI: build, pytest (with the wheels step: "
                     "scripts/source-only-tests.txt).")


for _minor in ("3.11", "3.12", "3.13"):
    pyenv_step(_minor)


REFUSAL = "error: cb3 supports CPython 3.11 to 3.15 and PyPy 7.3 (Python 3.11), PyPy 8.0 (Python 3.11); this is "


def expect_refusal(r: subprocess.CompletedProcess[str], this: str) -> None:
    """setup.py's run r must have failed with the refusal that names the supported list and `this`."""
    text = r.stdout or ""
    say(text.strip().splitlines()[-1] if text.strip() else "")
    if r.returncode == 0 or REFUSAL + this not in text:
        raise RuntimeError(f"expected setup.py to refuse {this} with a clear error (exit status {r.returncode})")


@step("unsupported-3.10")
def unsupported(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """setup.py refuses CPython 3.10 with a clear error (when pyenv has a 3.10)."""
    py = require_python("3.10", "unsupported-3.10")
    expect_refusal(subprocess.run([py, "setup.py", "--version"], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True), "CPython 3.10")


def chroot_step(name: str, profile: str, label: str) -> None:
    @step(name)
    def chroot(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
        if profile.startswith("pypy") and opts.skip_pypy:
            raise Skip("--skip-pypy")
        need_root(opts, "mmdebstrap, chroot, unshare", name)
        suite.ensure_staticlib()
        source_only = wheel_step_runs(s, opts)
        if not suite.chroot_source_suite(profile, source_only_tests() if source_only else ["tests"],
                                         SOURCE_ONLY_MODE if source_only else "", rest):
            raise RuntimeError("pytest failed")
    chroot.__doc__ = (f"{label}: PEP 517 build, pytest (with the wheels step: scripts/source-only-tests.txt); "
                      f"root only.\n\n    Cached in {chroots.profile(profile).cache}.")


chroot_step("chroot-3.14", "cpython3.14", "CPython 3.14 (Debian forky chroot)")
chroot_step("chroot-3.15", "cpython3.15", "CPython 3.15 (Debian sid chroot)")
chroot_step("chroot-pypy", "pypy3.11", "PyPy 3.11 (Debian trixie chroot, PyPy 7.3.19), hybrid ABI")
chroot_step("chroot-pypy-8.0", "pypy8.0", "PyPy 8.0 (Debian sid chroot, PyPy 8.0.1), cpython ABI over cpyext")


@step("hpy-debug-3.15")
def hpy_debug_315(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """CPython 3.15 (Debian sid chroot), hybrid ABI under HPy's debug mode; root only.

    The newest CPython, where the ctx_type.c patch matters (hpy.universal built in the chroot)."""
    need_root(opts, "mmdebstrap, chroot, unshare", "hpy-debug-3.15")
    suite.ensure_staticlib()
    if not suite.chroot_hpy_debug_run("cpython3.15", rest):
        raise RuntimeError("pytest failed")


def wheel_pythons(opts) -> list[str]:  # type: ignore[no-untyped-def]
    return [v for v in wheels.PYTHONS if not (opts.skip_pypy and v.startswith("pypy"))]


def build_wheels(opts) -> bool:  # type: ignore[no-untyped-def]
    RESULTS["built"] = wheels.build(wheel_pythons(opts), is_root(opts))
    return RESULTS["built"]


def wheels_built(opts) -> None:  # type: ignore[no-untyped-def]
    """The wheels, built by the root lane, or now."""
    if lanes.wait("root") is None or "built" not in RESULTS:
        build_wheels(opts)


@step("wheels")
def wheels_step(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """Builds the sdist and manylinux_2_17 wheels, tests each x86_64 one without Rust; root only.

    x86_64 and aarch64; CPython 3.11-3.15, PyPy 3.11 x86_64 (-- --skip-pypy: not it). Each x86_64 wheel
    runs the suite less scripts/source-only-tests.txt in a fresh environment (docs/wheels.md)."""
    need_root(opts, "Debian chroots for CPython 3.14, 3.15 and PyPy", "wheels")
    wheels_built(opts)
    if planned(s, "wheels-aarch64") and "wheels-aarch64" not in RESULTS:
        # The aarch64 runs (one emulated process) go on beside the x86_64 ones.
        lanes.start("aarch64", lambda: RESULTS.__setitem__(
            "wheels-aarch64", all([wheels.test_wheel(v, "aarch64") for v, _ in wheels.ARM64_RUNS])))
    # Two workers (two cores; each suite is one process) take the x86_64 wheels from one list, PyPy's
    # first: theirs are the longest suites, so neither worker is left with one at the end.
    todo = sorted(wheel_pythons(opts), key=lambda v: v not in wheels.PYPY_RELEASE)

    def worker() -> bool:
        results = []
        while True:
            try:
                version = todo.pop(0)
            except IndexError:
                return all(results)
            results.append(wheels.test_wheel(version))
    lanes.start("wheels-2", worker)
    results = [worker(), bool(lanes.wait("wheels-2"))]
    if not RESULTS.get("built") or not all(results):
        raise RuntimeError("a wheel failed to build or its tests failed (log above)")


@step("wheels-aarch64")
def wheels_aarch64(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """The aarch64 wheels in arm64 chroots under qemu-user: vectors and cross-checks; root only.

    CPython 3.11 (bookworm), 3.13 (trixie), 3.14 (forky), 3.15 (sid); python -m cb3, simd_backend() == "neon"."""
    need_root(opts, "arm64 chroots, qemu-user binfmt_misc", "wheels-aarch64")
    lanes.wait("aarch64")
    if "wheels-aarch64" not in RESULTS:
        wheels_built(opts)
        RESULTS["wheels-aarch64"] = all([wheels.test_wheel(v, "aarch64") for v, _ in wheels.ARM64_RUNS])
    if not RESULTS["wheels-aarch64"]:
        raise RuntimeError("the aarch64 wheels' runs failed (log above)")


@step("simd")
def simd(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """Every x86 SIMD path under qemu-x86_64 -cpu (SSE2, SSE4.1, AVX2) and natively; root only.

    The CPython 3.11 wheel's vectors and cross-checks, each run checking cb3.simd_backend()."""
    need_root(opts, "qemu-user-static", "simd")
    if wheels.wheel_for("3.11", "x86_64") is None:
        wheels_built(opts)
    if not wheels.test_simd():
        raise RuntimeError("a SIMD path's run failed")


@step("pypy-speed", default=False)
def pypy_speed(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """PyPy against CPython per call, interleaved rounds, into .test/pypy-speed.md; root only, not default.

    A measurement: -s pypy-speed (CI's shared machine times nothing worth quoting). Measured last, alone; docs/results/pypy-speed.md is the same command's output on a quiet machine, one section per CPU family."""
    if opts.skip_pypy:
        raise Skip("--skip-pypy")
    need_root(opts, "the PyPy chroot", "pypy-speed")
    for lane in ("root", "aarch64", "valgrind", "tools"):
        lanes.wait(lane)
    checks.pypy_speed(primary_python(opts), WORK / "pypy-speed.md")
    say((WORK / "pypy-speed.md").read_text())


@step("release", default=False)
def release_step(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """The sdist and every wheel of the wheels step, checked and summed into .test/release/dist; root, not default.

    Everything but the upload (docs/development.md): the C ABI check, twine check, auditwheel (manylinux_2_17), each
    x86_64 wheel installed in a fresh venv without Rust and its python -P -m cb3, then SHA256SUMS."""
    need_root(opts, "Debian chroots for CPython 3.14, 3.15 and PyPy", "release")
    if opts.skip_pypy:
        raise RuntimeError("a release has every wheel: run it without --skip-pypy")
    release.prepare(is_root(opts))
    release.check_abi()  # before the long build: a release freezes its C ABI
    wheels_built(opts)
    if not RESULTS.get("built"):
        raise RuntimeError("a wheel failed to build (log above)")
    release.release(wheel_pythons(opts))


@step("matrix")
def matrix(s: nox.Session, opts, rest) -> None:  # type: ignore[no-untyped-def]
    """The interpreter table of this run's rows into .test/matrix.md (scripts/matrix.py page: the docs)."""
    for lane in ("root", "aarch64", "valgrind", "tools"):
        lanes.wait(lane)
    table = output_of([sys.executable, MATRIX_PY, "table", "--dir", MATRIX])
    (WORK / "matrix.md").write_text(table + "\n")
    say(table)
    same = run([sys.executable, MATRIX_PY, "page", "--dir", MATRIX, "--check"], check=False, capture=True,
               quiet=True).returncode == 0
    say("The table above is in .test/matrix.md. The committed page docs/results/interpreter-matrix.md "
        + ("holds the same table." if same else "holds another run's (a full run as root, with its versions "
           "and counts): python3 scripts/matrix.py page writes this run's into it."))


@atexit.register
def _summary() -> None:
    try:  # the basetemps' parent, when every run removed its own
        pytest_basetemp("x").parent.rmdir()
    except OSError:
        pass
    if SUMMARY.rows:
        print(SUMMARY.text(), flush=True)
