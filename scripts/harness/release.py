"""The release step: the sdist and every wheel the wheels step builds
(wheels.py), gathered into .test/release/dist, checked, and summed.

Checked: the C ABI against rustlib/abi and CHANGELOG.md (the version's
snapshot must exist: a release freezes its ABI), `twine check --strict` on
every file, `auditwheel show` giving each wheel manylinux_2_17, and each
x86_64 wheel installed in a fresh environment without Rust (no cargo or
rustc on its PATH, a fresh HOME, no index: it cannot fall back to a source
build) where `python -P -m cb3` runs its self-check. Then SHA256SUMS, in
`sha256sum --check`'s format, next to the files. The upload is not here:
docs/development.md, "Versions and releases"."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import chroot as chroots
from . import wheels
from .core import (CB3_SELFCHECK, NO_RUST_PATH, PIP_QUIET, ROOT, TOOLS, WORK, apt_install, file_lock, find_python,
                   missing_commands, run, say)

TWINE_PIN = "twine==7.0.0"
RELEASE_TOOLS = TOOLS / "release-tools"
DIST = WORK / "release" / "dist"
CHECKS = WORK / "release" / "checks"
SUMS = "SHA256SUMS"
RUST_TOOLS = ("cargo", "rustc", "rustup")
ABI_CHECK = ROOT / "rustlib" / "abi" / "cb3abi.py"


# ---- pieces tested on their own (tests/packaging/test_release.py) -------------------------------
def expected_wheels(pythons: list[str]) -> list[tuple[str, str]]:
    """(version, arch) of every wheel the wheels step builds for pythons."""
    return [(version, arch) for version in pythons for arch in wheels.ARCHES
            if not (version in wheels.PYPY_RELEASE and arch != "x86_64")]


def sha256_sums(dist: Path) -> str:
    """`sha256sum`'s lines for the sdist and wheels in dist, by name."""
    lines = []
    for path in sorted(list(dist.glob("*.tar.gz")) + list(dist.glob("*.whl"))):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{digest.hexdigest()}  {path.name}\n")
    return "".join(lines)


def write_sums(dist: Path) -> Path:
    sums = sha256_sums(dist)
    if not sums:
        raise RuntimeError(f"{dist}: no sdist or wheel to sum")
    path = dist / SUMS
    path.write_text(sums, encoding="utf-8")
    return path


def no_rust_env(venv: Path, home: Path) -> dict[str, str]:
    """The whole environment of a command run in venv as a user without
    Rust: the venv's bin and the system's directories on PATH (not
    ~/.cargo/bin), a fresh HOME, nothing inherited (no CARGO_HOME,
    RUSTUP_HOME, RUSTFLAGS, PYTHONPATH...)."""
    return {"PATH": f"{venv / 'bin'}:{NO_RUST_PATH}", "HOME": str(home), "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1"}


def rust_on_path(env: dict[str, str]) -> list[str]:
    """The Rust tools that env's PATH reaches (none, for a release check)."""
    return [found for tool in RUST_TOOLS if (found := shutil.which(tool, path=env["PATH"]))]


def fresh_venv_without_rust(python: str, venv: Path, home: Path) -> dict[str, str]:
    """A new venv of python at venv and the environment to run it in;
    refuses a system whose own directories hold a Rust toolchain."""
    shutil.rmtree(venv, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    run([python, "-m", "venv", venv], quiet=True)
    env = no_rust_env(venv, home)
    found = rust_on_path(env)
    if found:
        raise RuntimeError(f"Rust is reachable without ~/.cargo/bin ({', '.join(found)}): a wheel checked here "
                           "could build from source unnoticed; remove the distribution's Rust packages")
    return env


# ---- the step ------------------------------------------------------------------------
#: What the wheel builds need from Debian when this step runs alone (the aarch64 binutils seal
#: the aarch64 libcb3.a; mmdebstrap makes the chroots). The prepare step installs the same.
BUILD_PACKAGES = {"cc": "gcc", "mmdebstrap": "mmdebstrap", "aarch64-linux-gnu-strip": "binutils-aarch64-linux-gnu",
                  "aarch64-linux-gnu-ld": "binutils-aarch64-linux-gnu"}


def prepare(root: bool) -> None:
    """The Debian packages, twine and the wheel tools, before anything is built."""
    apt_install(sorted(set(missing_commands(BUILD_PACKAGES))), "release", root)
    ensure_twine()
    wheels.ensure_tools()


def ensure_twine() -> Path:
    """twine (pinned) in its own venv in the tool cache."""
    with file_lock(TOOLS / ".release-tools.lock"):
        stamp = RELEASE_TOOLS / ".pins"
        if not stamp.exists() or stamp.read_text().strip() != TWINE_PIN:
            shutil.rmtree(RELEASE_TOOLS, ignore_errors=True)
            run([find_python("3.11") or sys.executable, "-m", "venv", RELEASE_TOOLS])
            run([RELEASE_TOOLS / "bin/pip", "install", *PIP_QUIET, TWINE_PIN])
            stamp.write_text(TWINE_PIN + "\n")
    return RELEASE_TOOLS / "bin/twine"


def check_abi() -> None:
    """The C ABI check, and the snapshot of the version being released."""
    run([sys.executable, ABI_CHECK, "check"])
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "rustlib/Cargo.toml").read_text(), re.M)[1]  # type: ignore[index]
    if not (ABI_CHECK.parent / f"cb3-{version}.abi").exists():
        raise RuntimeError(f"no rustlib/abi/cb3-{version}.abi: a release freezes its C ABI; run "
                           "python rustlib/abi/cb3abi.py write, record the changes in CHANGELOG.md and commit both")


def collect(pythons: list[str]) -> Path:
    """The wheels step's sdist and wheels, complete, copied into DIST."""
    built = wheels.OUT / "dist"
    shutil.rmtree(DIST, ignore_errors=True)
    DIST.mkdir(parents=True)
    sdists = sorted(built.glob("cb3-*.tar.gz"))
    missing = [f"{wheels.label_of(v)} {arch}" for v, arch in expected_wheels(pythons) if wheels.wheel_for(v, arch) is None]
    if len(sdists) != 1 or missing:
        raise RuntimeError(f"the wheels step's {built} lacks: {', '.join(missing) or 'the sdist'}")
    for path in [*sdists, *(wheels.wheel_for(v, arch) for v, arch in expected_wheels(pythons))]:
        shutil.copy2(path, DIST)  # type: ignore[arg-type]
    versions = {re.match(r"cb3-([^-]+?)(?:\.tar\.gz|-)", p.name)[1] for p in DIST.iterdir()}  # type: ignore[index]
    if len(versions) != 1:
        raise RuntimeError(f"{DIST}: files of several versions: {sorted(versions)}")
    return DIST


def self_check_on_host(wheel: Path, python: str, name: str) -> bool:
    venv, home = CHECKS / f"venv-{name}", CHECKS / f"home-{name}"
    env = fresh_venv_without_rust(python, venv, home)
    # --no-index --no-deps --only-binary: this wheel or nothing (cb3 has no dependencies).
    run([venv / "bin/python", "-m", "pip", "install", *PIP_QUIET, "--no-index", "--no-deps", "--only-binary", ":all:",
         wheel], env=env, clean_env=True)
    return run([venv / "bin/python", *CB3_SELFCHECK], env=env, clean_env=True, cwd=home,
               check=False).returncode == 0


def self_check_in_chroot(wheel: Path, version: str) -> bool:
    """In the Debian chroot the wheels step built and tests this interpreter's wheel in (no Rust there)."""
    if wheels.IN_CHROOT[version] is None:
        c, python = wheels.forky_chroot().ensure(), f"python{version}"
    else:
        profile = chroots.profile(wheels.IN_CHROOT[version] or "")
        c, python = profile.chroot.ensure(), profile.python
    binds = [(wheel.parent, "/opt/cb3-release/dist")]
    venv = "/opt/cb3-release-check"
    shutil.rmtree(c.root / venv.lstrip("/"), ignore_errors=True)
    c.run([python, "-m", "venv", venv])
    if c.run(["sh", "-c", " || ".join(f"command -v {t}" for t in RUST_TOOLS)], check=False, quiet=True,
             capture=True).returncode == 0:
        say(f"error: Rust is reachable in {c.root}, where {wheel.name} is checked")
        return False
    c.run([f"{venv}/bin/python", "-m", "pip", "install", *PIP_QUIET, "--no-index", "--no-deps", "--only-binary",
           ":all:", f"/opt/cb3-release/dist/{wheel.name}"], binds=binds)
    return c.run([f"{venv}/bin/python", *CB3_SELFCHECK], cwd="/tmp", check=False).returncode == 0


def check(dist: Path, pythons: list[str]) -> bool:
    """twine, auditwheel and the x86_64 self-checks; True when all pass."""
    files = sorted(p for p in dist.iterdir() if p.name != SUMS)
    ok = run([ensure_twine(), "check", "--strict", *files], check=False).returncode == 0
    wheels.ensure_tools()  # auditwheel, pinned with the wheel tools
    for version, arch in expected_wheels(pythons):
        wheel = dist / wheels.wheel_for(version, arch).name  # type: ignore[union-attr]
        tag = wheels.platform_tag(wheel, arch)
        if tag != f"manylinux_{wheels.GLIBC.replace('.', '_')}_{arch}":
            say(f"FAILED: {wheel.name}: auditwheel says {tag!r}")
            ok = False
        if arch != "x86_64":
            continue  # its self-check runs under qemu in the wheels-aarch64 step
        python = None if version in wheels.IN_CHROOT else find_python(version)
        if version not in wheels.IN_CHROOT and python is None:
            say(f"FAILED: {wheel.name}: python{version} is not installed here to check it")
            ok = False
            continue
        try:
            passed = (self_check_in_chroot(wheel, version) if python is None
                      else self_check_on_host(wheel, python, f"{version}-{arch}"))
        except (subprocess.CalledProcessError, RuntimeError) as e:
            say(f"FAILED: {wheel.name}: {e}")
            passed = False
        say(f"{'ok' if passed else 'FAILED'}: {wheel.name}: installed without Rust, python -P -m cb3")
        ok = passed and ok
    return ok


def release(pythons: list[str]) -> Path:
    """After the wheels step's build: DIST checked and summed, or an error."""
    check_abi()
    dist = collect(pythons)
    if not check(dist, pythons):
        raise RuntimeError(f"a release check failed (log above); {dist} has no {SUMS}")
    sums = write_sums(dist)
    say(f"release: {len(list(dist.glob('*.whl')))} wheels and the sdist in {dist}, checked; {sums.name}:")
    say(sums.read_text(encoding="utf-8"))
    return dist
