"""What every step shares: paths, pins, options, running commands, venvs,
interpreters, Debian packages, and the per-step timing of the summary."""

from __future__ import annotations

import argparse
import fcntl
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator, Sequence

# ---- paths (the caches are shared with CI's fresh machine: keep them) --------
ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".test"
MATRIX = WORK / "matrix"
TOOLS = Path.home() / ".cache" / "cb3-tools"
STATICLIB = WORK / "libcb3.a"  # the host archive every build after the primary one links
PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
SOURCE_ONLY_TESTS = ROOT / "scripts" / "source-only-tests.txt"
NO_RUST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# ---- the package's command-line entry points (one place: the cb3 layout may move them)
CB3_SELFCHECK = ["-P", "-m", "cb3"]
CB3_SPEED = ["-P", "-m", "cb3", "speed"]
# ---- the measuring tools of the checkout (asv_benchmarks/tools/; not in the wheel)
MEASURE = ROOT / "asv_benchmarks" / "measure.py"
MATRIX_PY = ROOT / "scripts" / "matrix.py"
MYPY_FILES = ["cb3/_cb3.pyi", "tests/api/typing_examples.py"]  # mypy --strict: the stubs and the typed examples

# ---- pins ------------------------------------------------------------------------
CBINDGEN_VERSION = "0.29.4"
CARGO_FUZZ_VERSION = "0.13.2"
ASV_VERSION = "0.6.6"
HPY_SDIST = "hpy==0.9.0 --hash=sha256:4545310f3a7f9ac249c0f19a80a9b05f46565afb62b7e9225b79493b7b6c70cc"
SUPPORTED = ((3, 11), (3, 15))
PIP_QUIET = ["--quiet", "--disable-pip-version-check"]
# PyPI downloads stall now and then: pip's default 15 s read timeout turned one into a failed step (CI, pyenv-3.12),
# and pip does not retry a download that breaks off mid-file, so run() tries a download-only install again.
PIP_ENV = {"PIP_DEFAULT_TIMEOUT": "180", "PIP_RETRIES": "10"}
PIP_ATTEMPTS = 3


def test_pins(python_version: str | None = None, path: Path | None = None, implementation: str = "cpython"
              ) -> list[str]:
    """tests/requirements.txt's pins (or path's). With python_version ("3.15"):
    those whose environment marker holds for it and `implementation` ("pypy"),
    without the marker (for a pip that installs for another interpreter than
    its own, and the chroots)."""
    pins = []
    for line in (path or ROOT / "tests/requirements.txt").read_text().splitlines():
        spec = line.split("#")[0].strip()
        if spec and python_version is not None and ";" in spec:
            from packaging.markers import Marker  # nox's dependency; imported only where markers occur

            spec, marker = (part.strip() for part in spec.split(";", 1))
            if not Marker(marker).evaluate({"python_version": python_version, "implementation_name": implementation,
                                            "platform_python_implementation": {"pypy": "PyPy"}.get(implementation,
                                                                                                   "CPython")}):
                continue
        if spec:
            pins.append(spec)
    return pins


# ---- options: `nox -- OPTIONS` (every session reads the same ones) ---------------
def parse_options(posargs: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """The harness's options, and what is left (pytest arguments for the
    sessions that run one interpreter's suite)."""
    p = argparse.ArgumentParser(prog="nox -- ", add_help=False)
    p.add_argument("--python", default="python3.11", help="the primary CPython (3.11-3.15)")
    p.add_argument("--skip-pypy", action="store_true", help="no PyPy: neither its chroot, wheel nor speed table")
    p.add_argument("--seconds", type=int, default=20, help="fuzzing: seconds per target")
    p.add_argument("--targets", default="", help="fuzzing: only these targets (space separated)")
    p.add_argument("--not-root", action="store_true", help="behave as without root (skips the root-only steps)")
    return p.parse_known_args(list(posargs))


class Skip(Exception):
    """A step that cannot run here; its message says how to run it."""


def is_root(opts: argparse.Namespace) -> bool:
    return os.geteuid() == 0 and not opts.not_root


def need_root(opts: argparse.Namespace, what: str, session: str) -> None:
    if not is_root(opts):
        raise Skip(f"needs root ({what}); run: sudo bash scripts/test.sh -s {session}")


# ---- output: foreground steps print; background lanes write their log ------------
_out = threading.local()


def out() -> IO[str]:
    return getattr(_out, "stream", None) or sys.stdout


@contextmanager
def output_to(stream: IO[str]) -> Iterator[None]:
    _out.stream = stream
    try:
        yield
    finally:
        _out.stream = None


def say(*parts: object) -> None:
    print(*parts, file=out(), flush=True)


# Processes started by background lanes, ended if the run stops early.
CHILDREN: set[subprocess.Popen[bytes]] = set()
_children_lock = threading.Lock()


def run(argv: Sequence[object], *, cwd: Path | str | None = None, env: dict[str, str] | None = None,
        clean_env: bool = False, log: Path | None = None, check: bool = True, capture: bool = False,
        quiet: bool = False, display: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs argv (env: added to os.environ, or the whole environment with
    clean_env). Output goes to `log` (a file), is captured, or goes to the
    step's output. check: raise CalledProcessError on a non-zero status."""
    args = [str(a) for a in argv]
    full_env = dict(env or {}) if clean_env else {**os.environ, **PIP_ENV, **(env or {})}
    for attempt in range(1, PIP_ATTEMPTS if pip_downloads_only(args) else 1):
        r = _run_once(args, cwd, full_env, log, False, capture, quiet, display)
        if r.returncode == 0:
            return r
        say(f"--- pip install failed (exit {r.returncode}), attempt {attempt} of {PIP_ATTEMPTS}: trying again in "
            f"{10 * attempt} s (PyPI downloads break off now and then)")
        time.sleep(10 * attempt)
    return _run_once(args, cwd, full_env, log, check, capture, quiet, display)


def pip_downloads_only(args: Sequence[str]) -> bool:
    """Whether args is a `pip install` of requirements only (pins, -r files), which only downloads:
    trying one again is safe and cheap, unlike an install that builds a local tree or wheel."""
    pip = next((i for i, a in enumerate(args) if (a == "pip" or a.endswith("/pip"))
                and args[i + 1:i + 2] == ["install"]), None)
    if pip is None or "--no-index" in args:
        return False
    rest = iter(args[pip + 2:])
    for a in rest:
        if a in ("-r", "--requirement", "-c", "--constraint", "--target", "-t", "--find-links", "-f"):
            next(rest, None)  # the option's value
        elif not a.startswith("-") and (a == "." or "/" in a or a.endswith(".whl")):
            return False
    return True


def _run_once(args: list[str], cwd: Path | str | None, full_env: dict[str, str], log: Path | None, check: bool,
              capture: bool, quiet: bool, display: str | None) -> subprocess.CompletedProcess[str]:
    if not quiet:
        shown = display or " ".join(args)
        say("+", shown if len(shown) < 300 else shown[:300] + " ...")
    stream: IO[str] | int | None
    opened = None
    if capture:
        stream = subprocess.PIPE
    elif log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        stream = opened = open(log, "w", encoding="utf-8")
    else:
        o = out()
        o.flush()
        stream = o if o is not sys.stdout else None
    try:
        in_lane = getattr(_out, "stream", None) is not None
        p = subprocess.Popen(args, cwd=cwd, env=full_env, stdout=stream,
                             stderr=subprocess.STDOUT if not capture else None, text=True,
                             start_new_session=in_lane)
        with _children_lock:
            CHILDREN.add(p)  # type: ignore[arg-type]
        stdout, _ = p.communicate()
        with _children_lock:
            CHILDREN.discard(p)  # type: ignore[arg-type]
    finally:
        if opened:
            opened.close()
    result = subprocess.CompletedProcess(args, p.returncode, stdout, None)
    if check and p.returncode != 0:
        if log is not None:
            say(f"--- last lines of {log}:")
            say("\n".join(log.read_text(errors="replace").splitlines()[-40:]))
        raise subprocess.CalledProcessError(p.returncode, args, stdout)
    return result


def output_of(argv: Sequence[object], **kw: object) -> str:
    return run(argv, capture=True, quiet=True, **kw).stdout.strip()  # type: ignore[arg-type]


def end_children() -> None:
    with _children_lock:
        for p in list(CHILDREN):
            try:
                os.killpg(p.pid, 15)
            except OSError:
                pass


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """One holder at a time, across threads and processes (flock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


# ---- interpreters ------------------------------------------------------------------
def find_python(minor: str) -> str | None:
    """pyenv's newest X.Y (PYENV_ROOT/versions), else pythonX.Y on PATH, if it runs."""
    found = sorted(PYENV_VERSIONS.glob(f"{minor}.*/bin/python{minor}"),
                   key=lambda p: [int(x) if x.isdigit() else 0 for x in p.parts[-3].split(".")])
    candidates = [str(found[-1])] if found else []
    candidates.append(shutil.which(f"python{minor}") or "")
    for c in candidates:
        if c and subprocess.run([c, "-c", ""], capture_output=True).returncode == 0:
            return c
    return None


def where_looked(minor: str) -> str:
    return f"{PYENV_VERSIONS}/{minor}.*/bin/python{minor}, then python{minor} on PATH"


def require_python(minor: str, session: str) -> str:
    py = find_python(minor)
    if py is None:
        raise Skip(f"no CPython {minor} (looked in {where_looked(minor)}); run: pyenv install {minor}, "
                   f"then bash scripts/test.sh -s {session}")
    return py


def minor_of(python: str) -> str:
    return output_of([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])


def where_of(python: str) -> str:
    """The "where" of its rows in the interpreter table."""
    return "host (pyenv)" if "/.pyenv/" in os.path.realpath(shutil.which(python) or python) else "host"


def make_venv(venv: Path, python: str, requirements: bool = True) -> Path:
    """A fresh venv, with the pinned test requirements."""
    shutil.rmtree(venv, ignore_errors=True)
    run([python, "-m", "venv", venv])
    if requirements:
        run([venv / "bin/pip", "install", *PIP_QUIET, "-r", ROOT / "tests/requirements.txt"])
    return venv


def source_only_tests() -> list[str]:
    return [l.strip() for l in SOURCE_ONLY_TESTS.read_text().splitlines() if l.strip() and not l.startswith("#")]


def pytest_basetemp(name: str) -> Path:
    """pytest's temporary directory for one run, removed after it (keep_tmp)."""
    parent = Path(tempfile.gettempdir()) / f"cb3-pytest-{os.getuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    return parent / name


# ---- Debian packages -------------------------------------------------------------
_apt_lock = threading.Lock()


def apt_install(packages: Sequence[str], who: str, root: bool) -> None:
    """apt-get install as root; without root, a Skip naming the packages."""
    if not packages:
        return
    if not root:
        raise Skip(f"needs the Debian packages {' '.join(packages)}: apt-get install them as root, "
                   f"or run: sudo bash scripts/test.sh -s {who}")
    with _apt_lock:
        opts = ["-o", "DPkg::Lock::Timeout=600"]
        run(["apt-get", "update", "-qq", *opts])
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *opts, *packages],
            env={"DEBIAN_FRONTEND": "noninteractive"})


def cargo_install(crate: str, version: str, env: dict[str, str] | None = None) -> None:
    """`cargo install` of a pinned tool into TOOLS/bin (the harness calls it by
    path, so TOOLS/bin need not be on PATH), quietly: one line before, errors after."""
    say(f"building {crate} {version} into {TOOLS}/bin (once; a few minutes)")
    run(["cargo", "install", "--quiet", crate, "--version", version, "--locked", "--root", TOOLS], env=env)


def missing_commands(pairs: dict[str, str]) -> list[str]:
    """{command or absolute file: Debian package} -> the packages of the missing ones."""
    return [pkg for thing, pkg in pairs.items()
            if not (Path(thing).exists() if thing.startswith("/") else shutil.which(thing))]


# ---- the copy of the working tree that builds see ------------------------------------
def copy_tree(dest: Path) -> None:
    """The checkout's files that exist now (tracked, with their edits, and
    untracked but not ignored) copied to dest."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    names = output_of(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT).split("\0")
    for name in filter(None, names):
        src = ROOT / name
        if src.exists() and not src.is_dir():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name, follow_symlinks=False)


# ---- step timing (wall and CPU of the step's processes) --------------------------------
def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Summary:
    """Every step's outcome, wall and CPU seconds, printed at the end."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, float, float, str]] = []
        self.start = time.monotonic()
        self.cpu0 = children_cpu()

    def add(self, name: str, outcome: str, wall: float, cpu: float, note: str = "") -> None:
        self.rows.append((name, outcome, wall, cpu, note))

    def text(self) -> str:
        lines = ["", "==> summary: step, outcome, wall s, CPU s of its processes"]
        for name, outcome, wall, cpu, note in self.rows:
            lines.append(f"{wall:6.0f} s {cpu:6.0f} s  {outcome:8} {name}" + (f"  ({note})" if note else ""))
        lines.append(f"{time.monotonic() - self.start:6.0f} s {children_cpu() - self.cpu0:6.0f} s  total")
        failed = [r[0] for r in self.rows if r[1] == "FAILED"]
        skipped = [r[0] for r in self.rows if r[1] == "skipped"]
        lines.append(f"ran {len(self.rows) - len(skipped)}, skipped {len(skipped)}, failed {len(failed)}"
                     + (": " + ", ".join(failed) if failed else ""))
        return "\n".join(lines)


SUMMARY = Summary()
